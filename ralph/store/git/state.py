"""What git is in the middle of in one work tree, read before ralph commits: an operation stopped
half way, a detached HEAD, a held index lock, a branch switched under a run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ralph.errors import BranchSwitched

if TYPE_CHECKING:
    from ralph.store.git.run import Runner

_OPERATIONS = (
    ("rebase-merge", "rebase"),
    ("rebase-apply", "rebase"),
    ("MERGE_HEAD", "merge"),
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("REVERT_HEAD", "revert"),
)


class State:
    def __init__(self, git: Runner):
        self._git = git
        self.run_branch: str | None = None  # a construct's branch: nothing is committed on another

    def operation_in_progress(self) -> str | None:
        """The merge, rebase, cherry-pick or revert git is stopped in, if any. A commit made now
        would be dropped by its --abort, or folded into its result."""
        git_dir = self._git.git_dir()
        for marker, what in _OPERATIONS:
            if (git_dir / marker).exists():
                return f"a {what} is in progress ({marker} in {git_dir.name})"
        return None

    def head_detached(self) -> bool:
        """Whether HEAD names a commit rather than a branch: a commit made there belongs to no
        branch, and the next checkout leaves it behind. Read from the HEAD file (no git process:
        every state command's commit asks)."""
        try:
            head = (self._git.git_dir() / "HEAD").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False  # not a layout we know (a GIT_DIR elsewhere): git itself will say
        return not head.startswith("ref: ")

    def refuse_switched_branch(self) -> None:
        """Raise BranchSwitched when a run set `run_branch` (the branch it works on) and HEAD is
        on another one now: before anything is written, so nothing lands on a branch a person
        switched to under the run."""
        if self.run_branch is None:
            return
        now = self._git.branch()
        if now != self.run_branch:
            raise BranchSwitched(
                f"the work tree switched from {self.run_branch} to {now or 'a detached HEAD'} during the"
                " run: ralph stopped before committing onto it; switch back and run ralph construct again"
            )

    def index_locked(self) -> bool:
        return (self._git.git_dir() / "index.lock").exists()
