"""What a stage's run writes on the plan, as one typed argument of its transition: a BUILD attempt,
a verifier's run, a DECOMPOSE run, a spec check. Plain data, so that a runner replays each as an
operation (ralph.plan.ops finds their classes here). The loop's alone: the state commands never
load this module (four frozen dataclasses: some 3 ms of a command's start-up)."""

from __future__ import annotations

from dataclasses import dataclass

from ralph.plan.document import Record
from ralph.plan.records import KillReason, Recorded, Verdict


@dataclass(frozen=True)
class AttemptRecord:
    """One change BUILD makes to its task for an attempt, written by attempts.record_attempt.
    Plain data, so that a runner replays it as an operation (ralph.plan.ops, which finds its
    class here, as it finds the enums)."""

    kind: Recorded
    tokens: int = 0  # what the attempt's runs used (FAILED, BUILT, RESUBMITTED)
    cost_usd: float | None = None  # None: not known
    model: str | None = None  # the model it ran with (FAILED, BUILT)
    files: tuple[str, ...] = ()  # the paths it changed (FAILED: their names leave its fingerprint)
    verdict: Verdict | None = None  # why it failed (FAILED)
    text: str = ""  # the failure's words (FAILED), why it is set aside (SET_ASIDE), the question (ASKED)
    kill_reason: KillReason | None = None  # SET_ASIDE
    kill_log: str | None = None  # SET_ASIDE: the log that says why
    asked_at: str = ""  # ASKED
    asked_by: str = ""  # ASKED

    def __post_init__(self) -> None:  # read back from an operation's JSON, the files are a list
        object.__setattr__(self, "files", tuple(self.files))


@dataclass(frozen=True)
class VerifyRecord:
    """What VERIFY writes of one verifier's run on its task, written by verify_changes.record_verify: its
    stop (`kill_reason`, with the run's log; with `set_aside`, why the task goes to DECOMPOSE), or
    what its verifier gave (its verdict, "accepted" or "rejected" with the reason, and the tasks and
    issues it added, at most `max_new` of them taken). Plain data, so that a runner replays it as an
    operation (ralph.plan.ops)."""

    kill_reason: KillReason | None = None  # the run was stopped: no verdict
    kill_log: str = ""
    set_aside: str | None = None  # the stop set the task aside (why), at max_attempts stops
    verdict: str | None = None
    reason: str | None = None  # a rejection's
    added: tuple[Record, ...] = ()  # the tasks and issues it added (records, with their ids)
    max_new: int | None = None  # None: every one

    def __post_init__(self) -> None:  # read back from an operation's JSON, the records are a list
        object.__setattr__(self, "added", tuple(self.added))


@dataclass(frozen=True)
class DecomposeRecord:
    """What DECOMPOSE writes of one run on its task, written by attempts.record_decompose: the
    subtasks that replace it (`children`), or, not decomposed, the subtasks its run made that are
    undone (`drop`), its failure counted (`counted`) and with `block` (why) the task blocked for a
    person. `task`: the task as DECOMPOSE found it (put back when its agent removed it; what its
    subtasks inherit when it is gone already). Plain data, so that a runner replays it as an
    operation (ralph.plan.ops)."""

    task: Record
    children: tuple[str, ...] = ()  # decomposed: its subtasks, which replace it
    drop: tuple[str, ...] = ()
    counted: bool = False
    block: str | None = None

    def __post_init__(self) -> None:  # read back from an operation's JSON, the ids are lists
        object.__setattr__(self, "children", tuple(self.children))
        object.__setattr__(self, "drop", tuple(self.drop))


@dataclass(frozen=True)
class CheckRecord:
    """What a spec check writes on its spec's record, written by spec_records.record_check: its
    stop (`kill_reason`, with the run's log), or, once it finished, what it read when it found
    nothing missing (`commit`, the spec's SHA-256 `digest`; None when it found work), the issues
    an earlier check cut resolved, since this one read the spec again (all but `cut_issue`, the
    one it cut itself). Plain data, so that a runner replays it as an operation (ralph.plan.ops)."""

    kill_reason: KillReason | None = None
    kill_log: str = ""
    commit: str | None = None
    digest: str | None = None
    cut_issue: str | None = None
