"""git's config for one work tree as ralph reads and sets it: a key's value, the config files that lie
in the work tree, the hooks, and whether commits are signed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ralph.errors import GitError
from ralph.store.git.run import explain

if TYPE_CHECKING:
    from ralph.store.git.run import Runner


class Config:
    def __init__(self, git: Runner):
        self._git = git
        self._signs: bool | None = None

    def get(self, key: str) -> str | None:
        """The value git would use for `key` (this repository's config, the user's, the system's),
        or None when none of them sets it."""
        done = self._git.run(("config", "--get", key))
        if done.returncode == 1:  # git's answer for a key that is not set
            return None
        if done.returncode != 0:
            raise GitError(explain(("config",), done.stderr.decode("utf-8", "replace")))
        return done.stdout.decode("utf-8", "replace").removesuffix("\n")

    def files_in_work_tree(self) -> list[str]:
        """The config files git reads for this repository that lie in the work tree outside its
        git directories (a file `include.path` names, such as a tracked `.gitconfig`): agents
        write them, and a config can name programs git runs (a filter, a diff driver, ssh)."""
        listed = self._git.listing("config", "--list", "--show-origin", "--name-only", "-z").split("\0")
        files = {origin.removeprefix("file:") for origin in listed[::2] if origin.startswith("file:")}
        root = self._git.root
        top = os.path.realpath(root)
        git_dirs = [os.path.realpath(self._git.git_dir()), os.path.realpath(self._git.common_dir())]
        found = []
        for name in sorted(files):
            real = os.path.realpath(root / name)  # a relative origin is relative to the work tree
            inside = real == top or real.startswith(top + os.sep)
            if inside and not any(real == d or real.startswith(d + os.sep) for d in git_dirs):
                found.append(os.path.relpath(real, top))
        return found

    def set(self, key: str, value: str) -> None:
        """Set `key` in this repository's own config (.git/config: neither committed nor cloned)."""
        self._git.git("config", "--local", key, value)

    def signs_commits(self) -> bool:
        """Whether this repository asks for signed commits (commit.gpgSign), as `git commit` would;
        read once per Repo (the loop commits through one Repo many times)."""
        if self._signs is None:
            try:
                self._signs = (
                    self._git.git("config", "--type=bool", "--get", "commit.gpgsign").strip() == "true"
                )
            except GitError:  # not set
                self._signs = False
        return self._signs

    def hook(self, name: str) -> Path | None:
        """The repository's hook program of that name (core.hooksPath respected), if it would run."""
        path = self.hook_path(name)
        return path if path.is_file() and os.access(path, os.X_OK) else None

    def hook_path(self, name: str) -> Path:
        """Where git looks for the hook of that name (core.hooksPath respected), there or not."""
        done = self._git.run(("rev-parse", "--git-path", f"hooks/{name}"), hooks_as_configured=True)
        if done.returncode != 0:
            raise GitError(explain(("rev-parse",), done.stderr.decode("utf-8", "replace")))
        path = Path(done.stdout.decode("utf-8", "surrogateescape").strip())
        return path if path.is_absolute() else self._git.root / path
