"""`Repo`, ralph's one git layer over one work tree: what nearly every caller asks itself (running
git, HEAD, its branch, the git directories), and each other job as a part of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ralph.store.git.changes import Changes
from ralph.store.git.config import Config
from ralph.store.git.index import Index
from ralph.store.git.objects import Objects
from ralph.store.git.run import Runner
from ralph.store.git.state import State
from ralph.store.git.worktrees import Worktrees

if TYPE_CHECKING:
    from collections.abc import Generator
    from pathlib import Path


class Repo:
    """Parts, not mixins: each job is an object of its module, made once here and holding its own
    caches for as long as the Repo lives, all running git through the Repo's one Runner."""

    def __init__(self, root: Path):
        self.root = root
        self._runner = git = Runner(root)
        self.config = Config(git)
        self.state = State(git)
        self.objects = Objects(git, self.config)
        self.index = Index(git, self.objects, self.state)
        self.changes = Changes(git)
        self.worktrees: Worktrees[Repo] = Worktrees(git, Repo)

    def with_index(self, index: Path) -> Repo:
        """This work tree with an index file of its own (GIT_INDEX_FILE): what git stages through
        it leaves the index people use as it was."""
        other = Repo(self.root)
        other._runner.env["GIT_INDEX_FILE"] = str(index)
        return other

    # --- running git (ralph.store.git.run) -------------------------------------------------------
    def git(self, *args: str, stdin: bytes | None = None) -> str:
        return self._runner.git(*args, stdin=stdin)

    def paths(self, *args: str) -> list[str]:
        """The paths a git command lists with -z, as names to hand back to git."""
        return self._runner.paths(*args)

    def attempt(self, *args: str) -> tuple[int, str, str]:
        """git's exit code, stdout and stderr, for callers that tell failures apart themselves."""
        return self._runner.attempt(*args)

    def lines(self, *args: str) -> Generator[bytes, None, None]:
        """git's output line by line as it prints it, for a command whose output is too large to hold."""
        return self._runner.lines(*args)

    # --- where this work tree stands -------------------------------------------------------------
    def git_dir(self) -> Path:
        return self._runner.git_dir()

    def common_dir(self) -> Path:
        return self._runner.common_dir()

    def git_dirs(self) -> list[str]:
        return self._runner.git_dirs()

    def head(self) -> str | None:
        return self._runner.head()

    def branch(self) -> str | None:
        return self._runner.branch()

    def commit_of(self, rev: str) -> str | None:
        return self._runner.commit_of(rev)

    def commits(self, *args: str) -> list[str]:
        return self._runner.commits(*args)
