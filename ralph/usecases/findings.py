"""What `ralph doctor` found: one Finding per thing a killed ralph left, of a FindingKind that
says what `fix` does, with what the repair acts on (a worktree, a branch's commit, ralph's record
of it, an interrupted change)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ralph.store.intent import Intent
from ralph.store.owned import Owned

PATCHES = Path("build") / "ralph-logs" / "doctor"  # where fixes keep what they take away


class FindingKind(StrEnum):
    """What a finding is of (its `kind` in --json): what `fix` does follows from it."""

    INTERRUPTED = "interrupted"  # a change of several steps cut in half
    LOCK_NOT_FILE = "lock_not_file"
    STALE_LOCK = "stale_lock"
    TEMP_FILE = "temp_file"
    MERGE_DRIVER = "merge_driver"  # .gitattributes names it, git's config lacks it
    WORKTREE = "worktree"
    BRANCH = "branch"
    RECORD = "record"  # of something a killed run never made, or that is gone
    STALE_CLAIM = "stale_claim"


@dataclass
class Finding:
    kind: FindingKind
    subject: str  # the file, worktree or branch
    problem: str
    fix: str  # what `fix` does (or, for what it keeps, why)
    fixable: bool = True  # False: `fix` keeps it (an unmerged branch without `force`)
    fixed: bool = False
    # What the repair acts on: the worktree, the branch's commit as judged, ralph's record of it.
    worktree: Worktree | None = None
    commit: str | None = None
    record: Owned | None = None
    change: Intent | None = None  # the interrupted change's record

    def line(self) -> str:
        if self.fixed:
            return f"{self.subject}: {self.problem}; fixed (--fix {self.fix})"
        return f"{self.subject}: {self.problem}; --fix {self.fix}"


@dataclass
class Worktree:
    path: Path
    branch: str | None  # short name; None when detached
    prunable: bool  # its folder is gone
