"""Worktrees, a checkout of its own for a run that must not share this one, and the branches ralph
makes and deletes for its builds and drafts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from ralph.errors import GitError

if TYPE_CHECKING:
    from collections.abc import Callable

    from ralph.store.git.run import Runner

RepoT = TypeVar("RepoT")  # what `open_repo` makes of a new worktree's folder: a Repo


class Worktrees(Generic[RepoT]):
    def __init__(self, git: Runner, open_repo: Callable[[Path], RepoT]):
        self._git, self._open_repo = git, open_repo

    def add(self, path: Path, commit: str) -> RepoT:
        """Check `commit` out at `path` (which must not exist yet) as a detached worktree of this
        repository, and return it. The repository's hooks do not run: a post-checkout hook is the
        user's, for the user's checkouts."""
        self._git.git("worktree", "add", "-q", "--detach", str(path), commit)  # hooks off: git_argv
        return self._open_repo(path)

    def remove(self, path: Path) -> None:
        """Remove a worktree made by add, whatever was changed or added in it (a folder already
        gone loses its registration). Never `git worktree prune`: that would also forget the
        user's own worktrees on a drive that is not mounted."""
        try:
            self._git.git("worktree", "remove", "--force", "--force", str(path))  # twice: even if locked
        except GitError:  # not a worktree (any more): what is at its path goes
            if path.is_symlink():  # a link put in its place: the link, never what it points to
                path.unlink()
            else:
                import shutil

                shutil.rmtree(path, ignore_errors=True)
            self._forget(path)

    def links_here(self) -> bool:
        """This worktree's .git is still the link git made to the repository's (not removed, not
        replaced by a repository of its own)."""
        dot_git = self._git.root / ".git"
        if dot_git.is_symlink() or not dot_git.is_file():
            return False
        text = dot_git.read_text(encoding="utf-8", errors="surrogateescape")
        admin = self._git.root / text.removeprefix("gitdir:").strip()  # absolute, or relative to here
        return text.startswith("gitdir:") and (admin / "gitdir").is_file()

    def _forget(self, path: Path) -> None:
        """The registration (.git/worktrees/<name>) of the worktree that was at `path`, when its
        folder is gone (an agent removed it): that one alone, where prune would take them all."""
        import shutil

        admin = self._git.common_dir() / "worktrees"
        for entry in admin.glob("*/gitdir") if admin.is_dir() else []:
            named = entry.read_text(encoding="utf-8", errors="surrogateescape").strip()
            if Path(named) == path / ".git" and not path.exists():
                shutil.rmtree(entry.parent, ignore_errors=True)

    def add_on_branch(self, path: Path, branch: str, commit: str) -> RepoT:
        """Check `commit` out at `path` on a new branch `branch`, with no hooks run, as add does.
        Never -B: a branch of that name (a person's) makes git refuse."""
        self._git.git("worktree", "add", "-q", "-b", branch, str(path), commit)  # hooks off: git_argv
        return self._open_repo(path)

    # --- branches --------------------------------------------------------------------------------
    def branch_exists(self, branch: str) -> bool:
        return self._git.run(("show-ref", "--verify", "--quiet", f"refs/heads/{branch}")).returncode == 0

    def delete_branch(self, branch: str, expected: str | None = None) -> None:
        """Delete `branch` (gone already: nothing to do); with `expected`, only while it still
        points there (compare-and-delete: never a commit that moved it since)."""
        args = ("update-ref", "-d", f"refs/heads/{branch}") + ((expected,) if expected else ())
        self._git.run(args)
