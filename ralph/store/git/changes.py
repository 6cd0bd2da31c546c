"""The work tree's changes around agent runs: what differs from HEAD, what git does not track or an
ignore rule hides, repositories made inside it, a change kept as a patch and put back as HEAD has it."""

from __future__ import annotations

import os
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from ralph.errors import GitError
from ralph.store.git.run import explain

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from ralph.store.git.run import Runner

# `git status --porcelain=v2` entries: how many space-separated fields come before the path.
_V2_PATH_FIELD = {"1": 7, "2": 8, "u": 9, "?": 0}

# A patch as git makes it for itself: whatever the person's config says about showing diffs.
_PATCH_OPTIONS = ("--binary", "--no-ext-diff", "--no-textconv", "--no-color")

# Paths handed to git on stdin (NUL-separated), for lists as long as a build's files.
_PATHS_ON_STDIN = ("--pathspec-from-file=-", "--pathspec-file-nul")


class Changes:
    def __init__(self, git: Runner):
        self._git = git

    def paths(self, among: Iterable[str] | None = None, read_only: bool = False) -> set[str]:
        """Paths that differ from HEAD in the index or the work tree, and untracked files; only
        those of `among` when given (git then looks at those paths alone, not the whole tree).
        `read_only`: git leaves .git/index as it was (status otherwise refreshes it)."""
        limit = sorted(among) if among is not None else []
        if among is not None and not limit:
            return set()
        out = self._git.listing(
            *(["--no-optional-locks"] if read_only else []),
            "status", "--porcelain=v1", "-z", "--untracked-files=all", *(["--", *limit] if limit else []),
        )  # fmt: skip
        paths: set[str] = set()
        entries = iter(out.split("\0"))
        for entry in entries:
            if not entry:
                continue
            status, path = entry[:2], entry[3:]
            paths.add(path)
            if "R" in status or "C" in status:
                paths.add(next(entries, ""))  # the rename's source path follows
        paths.discard("")
        return paths

    def hidden_in(self, folders: Iterable[str]) -> set[str]:
        """The untracked files under `folders` that git ignores by a rule written in one of them (a
        .gitignore inside, or the folder being one): files whoever made those folders hid from
        `git status`. Those ignored by the repository's own rules (a build's output) are not."""
        names = sorted(folders)
        if not names:
            return set()
        ignored = self._git.paths(
            "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--", *names
        )
        if not ignored:
            return set()
        stdin = "\0".join(ignored).encode("utf-8", "surrogateescape")
        # -z: <source> NUL <line> NUL <pattern> NUL <path> NUL, one match per path; exit 1: none
        # matched. check-ignore refuses the literal pathspecs the other commands run with.
        args = ("check-ignore", "-v", "-z", "--stdin")
        done = self._git.run(args, stdin, {"GIT_LITERAL_PATHSPECS": "0"})
        if done.returncode not in (0, 1):
            raise GitError(explain(args, done.stderr.decode("utf-8", "replace")))
        fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
        matches = zip(fields[0::4], fields[3::4], strict=False)
        return {path for source, path in matches if source and PurePosixPath(source).parts[0] in names}

    def work_state(self, read_only: bool = False) -> tuple[str | None, str | None, set[str]]:
        """HEAD's commit (None before the first), its branch (None when detached) and the paths
        paths() gives, from one `git status` instead of three git runs: the loop takes this
        before and after every agent run. `read_only` as for paths()."""
        out = self._git.listing(
            *(["--no-optional-locks"] if read_only else []),
            "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all",
        )  # fmt: skip
        head: str | None = None
        branch: str | None = None
        paths: set[str] = set()
        entries = iter(out.split("\0"))
        for entry in entries:
            kind, _, rest = entry.partition(" ")
            if kind == "#":
                key, _, value = rest.partition(" ")
                if key == "branch.oid" and value != "(initial)":
                    head = value
                elif key == "branch.head" and value != "(detached)":
                    branch = value
            elif kind in _V2_PATH_FIELD:  # ordinary, renamed or copied, unmerged, untracked
                paths.add(rest.split(" ", _V2_PATH_FIELD[kind])[-1])
                if kind == "2":
                    paths.add(next(entries, ""))  # the rename's source path follows
        paths.discard("")
        return head, branch, paths

    def diff_stat(self, paths: set[str]) -> str:
        if self._git.head() is None:
            return ""
        return self._git.git("diff", "--stat", "HEAD", "--", *sorted(paths))

    def save_patch(self, paths: set[str], target: Path, base: str = "HEAD") -> None:
        """Keep a failed attempt's changes against `base` as a patch (untracked files included)
        before undoing them."""
        if not paths:
            return
        # Intent-to-add, so new files show in the diff; only paths in the work tree, as `git add`
        # refuses one that is gone from it and from the index (`git rm`, the source of a `git mv`).
        present = [path for path in sorted(paths) if os.path.lexists(self._git.root / path)]
        if present:  # -f: a file hidden by an ignore rule (hidden_in) is kept too
            self._git.git("add", "-N", "-f", "--", *present)
        target.write_bytes(self.patch(base, "--", *sorted(paths)) + b"\n")

    def patch(self, *args: str) -> bytes:
        """`git diff args` as a patch `git apply` takes back: bytes as git wrote them (a file that
        is not UTF-8 decoded and encoded again no longer applies), binary files included, and
        never a person's diff settings (an external diff, a textconv, colour)."""
        return self._git.output(("diff", *_PATCH_OPTIONS, *args))

    def commit_patch(self, commit: str, exclude: frozenset[str] = frozenset()) -> bytes:
        """What `commit` changed, as a binary patch (bytes, as patch() gives), without the paths
        in `exclude` (b'' when it changed nothing else)."""
        listed = self._git.listing("diff-tree", "-r", "--root", "--no-commit-id", "--name-only", "-z", commit)
        paths = sorted({path for path in listed.split("\0") if path} - exclude)
        if not paths:
            return b""
        return self._git.output(
            ("diff-tree", "-p", *_PATCH_OPTIONS, "--root", "--no-commit-id", commit, "--", *paths)
        )

    def at_head(self, paths: Iterable[str]) -> set[str]:
        """Those of `paths` that HEAD has an entry for (a file, a folder, a submodule): one git run
        each, as ls-tree given a folder and a path inside it lists the inner one alone."""
        wanted = sorted(paths)
        if not wanted or self._git.head() is None:
            return set()
        return {path for path in wanted if self._git.listing("ls-tree", "-z", "HEAD", "--", path)}

    def revert(self, paths: set[str]) -> None:
        """Put `paths` back as HEAD has them; files HEAD does not have are removed. Those go
        first: a tracked link put back first (an agent made a folder of `docs -> specs`) would
        send the removal of `docs/x.py` through it, to `specs/x.py`. Nor is anything removed
        through a link some other way (one made since git listed the path)."""
        if not paths:
            return
        listed = self._git.listing("ls-tree", "-r", "-z", "--name-only", "HEAD", "--", *sorted(paths))
        tracked = {path for path in listed.split("\0") if path}
        untracked = sorted(paths - tracked)
        if untracked:  # one git run for them all: one per file took 40 s for a 1,000-file build
            self._git.git(
                "rm", "--cached", "-q", "--ignore-unmatch", *_PATHS_ON_STDIN, stdin=_nul_list(untracked)
            )
        for path in untracked:
            if not self._through_link(path):
                (self._git.root / path).unlink(missing_ok=True)
        if tracked:
            self._git.git("checkout", "HEAD", "--", *sorted(tracked))

    def _through_link(self, path: str) -> bool:
        """Whether a folder on the way to `path` (relative) is a symbolic link."""
        parent = self._git.root
        for part in PurePosixPath(path).parts[:-1]:
            parent = parent / part
            if parent.is_symlink():
                return True
        return False

    def staged_file(self, relpath: str) -> bytes | None:
        """The file's bytes as the index holds them (what the next commit gets), or None when the
        index has no merged version of it (not added, or a merge conflict not yet resolved)."""
        done = self._git.run(("cat-file", "blob", f":{relpath}"))
        return done.stdout if done.returncode == 0 else None

    def unmerged(self, relpath: str) -> bool:
        """Whether git's index holds the file as a merge conflict not yet resolved (`git add`)."""
        return bool(self._git.git("ls-files", "-u", "--", relpath).strip())

    def untracked(self, pathspecs: list[str]) -> list[str]:
        """The files git does not track (ignored ones too) that `pathspecs` match, their magic
        (`:(glob)`, `:(exclude)`) read as such."""
        out = self._git.output(
            ("ls-files", "-z", "--others", "--", *pathspecs), env={"GIT_LITERAL_PATHSPECS": "0"}
        )
        return [os.fsdecode(name) for name in out.split(b"\0") if name]

    # --- repositories inside the work tree -------------------------------------------------------
    def gitlinks(self) -> list[str]:
        """The submodules of this work tree: the paths the index has as gitlinks. No git run where
        there is neither a .gitmodules nor a .git/modules (most repositories)."""
        if (
            not (self._git.root / ".gitmodules").is_file()
            and not (self._git.common_dir() / "modules").is_dir()
        ):
            return []
        listed = self._git.listing("ls-files", "-z", "-s").split("\0")
        return [entry.split("\t", 1)[1] for entry in listed if entry.startswith("160000 ")]

    def nested_repos(self, skip: tuple[str, ...] = ()) -> list[str]:
        """The git repositories inside this work tree that are no submodule (gitlinks): a gitlink
        of the index with no .gitmodules entry whose `.git` is here (an embedded
        repository, `git add`ed), and a folder git does not track that holds one (a clone inside,
        ignored or not), outside the folders named `skip` (dependencies: none of the person's
        own). `ls-files -o` lists such a folder as `path/` and never goes into it."""
        listed = self._git.listing("ls-files", "-z", "-s").split("\0")
        tracked = [entry.split("\t", 1)[1] for entry in listed if entry.startswith("160000 ")]
        pathspecs = [":(glob)**/", *(f":(exclude,glob)**/{folder}/**" for folder in skip)]
        others = self._git.output(
            ("ls-files", "-z", "-o", "--", *pathspecs), env={"GIT_LITERAL_PATHSPECS": "0"}
        ).decode("utf-8", "surrogateescape")
        found = [*tracked, *(path.rstrip("/") for path in others.split("\0") if path.endswith("/"))]
        submodules = set(self.gitlinks())
        dot_gits = {
            path: self._git.root / path / ".git" for path in dict.fromkeys(found) if path not in submodules
        }
        # A folder, or a file naming one elsewhere (a worktree of another repository); never a link.
        return [path for path, dot_git in dot_gits.items() if dot_git.exists() and not dot_git.is_symlink()]


def _nul_list(paths: Iterable[str]) -> bytes:
    """Paths as git reads them with --pathspec-file-nul (names that are not UTF-8 keep their bytes)."""
    return b"".join(path.encode("utf-8", "surrogateescape") + b"\0" for path in paths)
