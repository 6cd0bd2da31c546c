"""Typed reading of plan records. Storage stays the raw, line-preserving dicts (a hand editor's
unknown keys survive every rewrite); code reads them through these enums and views instead of
spelling out keys and defaults in every module."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from ralph.plan.declared import IssueFields, TaskFields
from ralph.plan.document import Record
from ralph.text import plural


class Status(StrEnum):
    PENDING = "p"
    DONE = "d"  # built and through the gate, awaiting VERIFY
    BLOCKED = "b"  # the loop gave up on it (decomposed too deep): a person must decide


class KillReason(StrEnum):
    TIMEOUT = "timeout"
    CONTEXT_LIMIT = "context_limit"
    DOOM_LOOP = "doom_loop"
    REPEATED_FAILURE = "repeated_failure"  # the same failure twice in a row (its fingerprint)


class StopReason(StrEnum):
    """Why the supervisor stopped a child before it ended by itself."""

    TIMEOUT = "timeout"
    CONTEXT_LIMIT = "context_limit"  # the context monitor: the window is (nearly) full
    CONTEXT_COMPACT = "context_compact"  # the context monitor: compact and continue in a fresh run
    INTERRUPTED = "interrupted"  # ralph itself is stopping (a signal)
    BUDGET = "budget"  # the run's money or token budget is spent


# The stops that end a run as killed (recorded as its item's kill_reason): the others are ralph's own.
KILLING_STOPS = {StopReason.TIMEOUT: KillReason.TIMEOUT, StopReason.CONTEXT_LIMIT: KillReason.CONTEXT_LIMIT}


def kill_reason_of(stop: StopReason | None) -> KillReason | None:
    """The kill_reason a run stopped for `stop` is recorded with; None: it was not killed."""
    return KILLING_STOPS.get(stop) if stop else None


class Replayed(StrEnum):
    """What became of one of a runner's unpublished plan changes replayed on the remote's head
    (ralph.plan.replay)."""

    APPLIED = "applied"  # made again as it was
    MOVED = "moved"  # made again with its dependencies on a decomposed task moved to the subtasks
    DROPPED = "dropped"  # its precondition no longer holds: what was published first stands
    MERGED = "merged"  # a change no operation records (a hand edit), merged by record


class TaskType(StrEnum):
    """The kind of work a task is (its `type`): each brings its own part of the BUILD and VERIFY
    prompts (ralph/loop/runs/templates/types/)."""

    FEATURE = "feature"
    BUGFIX = "bugfix"
    REFACTOR = "refactor"
    TEST = "test"
    DOCS = "docs"
    CHORE = "chore"


class Verdict(StrEnum):
    """What one build attempt came to, or VERIFY's judgement of it: a task records its latest as
    `verdict`, so each commit of plan.jsonl says what the attempt it records came to."""

    BUILT = "built"  # passed the gate (and the pre-commit hook, its scope and type): awaiting VERIFY
    NOT_DONE = "not_done"  # the agent ended without `ralph task done`
    AGENT_ERROR = "agent_error"  # the agent reported an error on this task and changed nothing
    NO_CHANGES = "no_changes"  # marked done, changed no file, and the task is not no_code
    PLAN_INVALID = "plan_invalid"  # the agent left plan.jsonl invalid
    PERMISSION_VIOLATION = "permission_violation"  # the run did what BUILD may not
    GATE_FAILED = "gate_failed"
    HOOK_REFUSED = "hook_refused"  # the repository's pre-commit hook refused the build (run_hooks)
    SCOPE_VIOLATION = "scope_violation"  # changed files outside the task's scope
    TYPE_VIOLATION = "type_violation"  # changed files its type does not allow (ralph.plan.type_rules)
    MERGE_CONFLICT = "merge_conflict"  # passed, but conflicts with work merged meanwhile
    NESTED_REPOSITORY = "nested_repository"  # made a git repository inside the work tree
    WORKTREE_REMOVED = "worktree_removed"  # removed the worktree its build ran in
    PLAN_REPLACED = "plan_replaced"  # left plan.jsonl a symlink or a folder, not a file
    PLAN_MISSING = "plan_missing"  # deleted plan.jsonl
    KILLED = "killed"  # stopped or set aside by the loop: kill_reason says why
    REJECTED = "rejected"  # VERIFY (or a person) sent the done task back: reject_reason says why


# A failed attempt's verdict in words, for people (ralph log, the console, the reports).
VERDICT_WORDS = {
    Verdict.BUILT: "built",
    Verdict.NOT_DONE: "not marked done",
    Verdict.AGENT_ERROR: "the agent reported an error",
    Verdict.NO_CHANGES: "no changes",
    Verdict.PLAN_INVALID: "plan.jsonl left invalid",
    Verdict.PERMISSION_VIOLATION: "permission violation",
    Verdict.GATE_FAILED: "gate failed",
    Verdict.HOOK_REFUSED: "pre-commit hook refused",
    Verdict.SCOPE_VIOLATION: "outside its scope",
    Verdict.TYPE_VIOLATION: "beyond what its type allows",
    Verdict.MERGE_CONFLICT: "merge conflict",
    Verdict.NESTED_REPOSITORY: "made a git repository inside the work tree",
    Verdict.WORKTREE_REMOVED: "removed its own work tree",
    Verdict.PLAN_REPLACED: "plan.jsonl replaced by a link or folder",
    Verdict.PLAN_MISSING: "plan.jsonl deleted",
    Verdict.KILLED: "killed",
    Verdict.REJECTED: "rejected by VERIFY",
}


# What a stopped spec check leaves on its spec record (count_kill's prefix).
CHECK_KILL_PREFIX = "check_"

# What a stopped VERIFY run leaves on its (done) task; a new build starts them over.
VERIFY_KILL_FIELDS = ("verify_kills", "verify_kill_reason", "verify_kill_log")


def count_kill(record: dict[str, Any], prefix: str, kill_reason: KillReason, kill_log: str) -> int:
    """A stopped run of the record's stage: one more in `<prefix>kills`, with why and its log
    (`<prefix>kill_reason`, `<prefix>kill_log`); returns how many were stopped so far."""
    kills: int = record.get(f"{prefix}kills", 0) + 1
    record[f"{prefix}kills"] = kills
    record[f"{prefix}kill_reason"], record[f"{prefix}kill_log"] = str(kill_reason), kill_log
    return kills


class Recorded(StrEnum):
    """What BUILD records of an attempt on its task (AttemptRecord.kind)."""

    FAILED = "failed"  # a failed build, counted: back to pending with its verdict and words
    BUILT = "built"  # passed its gate: counted, with the files it changed
    RESUBMITTED = "resubmitted"  # a rejected task resubmitted unchanged: not counted
    SET_ASIDE = "set_aside"  # given up as it is (kill_reason says why): DECOMPOSE splits it
    ASKED = "asked"  # a person is asked (`text`) about a failure another try would repeat


class HookEvent(StrEnum):
    """The construct loop's events a config `hooks` command can run on ("any": every one)."""

    TASK_ACCEPTED = "task_accepted"
    TASK_KILLED = "task_killed"
    QUESTION_ASKED = "question_asked"
    LIMIT_WAIT = "limit_wait"
    RUN_ENDED = "run_ended"
    ANY = "any"


class Stage(StrEnum):
    PLAN = "PLAN"
    INVESTIGATE = "INVESTIGATE"
    BUILD = "BUILD"
    VERIFY = "VERIFY"
    DECOMPOSE = "DECOMPOSE"
    CHECK = "CHECK"  # the spec-level check: the whole spec against the code, before COMPLETE
    REVIEW = "REVIEW"  # the review by aspect: the whole change since the run's base, before COMPLETE
    WAITING = "WAITING"
    BLOCKED = "BLOCKED"
    COMPLETE = "COMPLETE"


def status_of(task: Record) -> Status:
    return Status(task.get("s", Status.PENDING))


def is_pending(task: Record) -> bool:
    status: str = task.get("s", Status.PENDING)
    return status == Status.PENDING


def is_done(task: Record) -> bool:
    return task.get("s") == Status.DONE


def is_blocked(task: Record) -> bool:
    return task.get("s") == Status.BLOCKED


# How plans written before `blocked_by` said that a question blocks a task: the start of its
# blocked_reason. Read only where blocked_by is missing; never written.
_LEGACY_QUESTION_REASON = "waiting for the answer to question "


def blocking_question(task: Record) -> str | None:
    """The id of the question a blocked task waits for, or None when something else blocks it."""
    if not is_blocked(task):
        return None
    if task.get("blocked_by"):
        return str(task["blocked_by"])
    reason = task.get("blocked_reason")
    if isinstance(reason, str) and reason.startswith(_LEGACY_QUESTION_REASON):
        return reason[len(_LEGACY_QUESTION_REASON) :].split(":", 1)[0].strip() or None
    return None


def verdict_of(task: Record) -> Verdict | None:
    """The verdict of the task's latest attempt, or None when it has none (not built yet, or
    recorded before verdicts were)."""
    value = task.get("verdict")
    try:
        return Verdict(value) if value else None
    except ValueError:
        return None


def awaits_recheck(issue: Record) -> bool:
    """An issue naming work a spec check found beyond what ralph takes from one run: the next
    spec check, not a person, takes it up (so it holds neither the check nor COMPLETE back)."""
    return bool(issue.get("recheck"))


def is_killed(task: Record) -> bool:
    """Set aside by the loop (timeout, context, repeated failure): DECOMPOSE splits it next."""
    return bool(task.get("kill_reason")) and is_pending(task)


class TaskView(TaskFields):
    """A task record, read through names and enums (its plain fields: declared.TaskFields)."""

    __slots__ = ()

    status = property(lambda self: status_of(self.record))
    pending = property(lambda self: is_pending(self.record))
    done = property(lambda self: is_done(self.record))
    killed = property(lambda self: is_killed(self.record))
    blocked = property(lambda self: is_blocked(self.record))

    @property
    def kill_reason(self) -> KillReason | None:
        reason = self.record.get("kill_reason")
        return KillReason(reason) if reason else None

    @property
    def verify_kill_reason(self) -> KillReason | None:
        reason = self.record.get("verify_kill_reason")
        return KillReason(reason) if reason else None

    @property
    def verdict(self) -> Verdict | None:
        return verdict_of(self.record)

    @property
    def why_not_done(self) -> str:
        """The latest reason the task is not finished, for reports: a kill, a rejection, a gate,
        a VERIFY run that was stopped."""
        record = self.record
        reasons = ("blocked_reason", "kill_reason", "reject_reason", "gate_failure")
        found = next((record[key] for key in reasons if record.get(key)), "")
        if not found and self.done and self.verify_kill_reason:
            log = f", log {self.verify_kill_log}" if self.verify_kill_log else ""
            found = f"VERIFY stopped {plural(self.verify_kills, 'time')}: {self.verify_kill_reason}{log}"
        return found

    def __repr__(self) -> str:
        return f"TaskView({self.record!r})"


class IssueView(IssueFields):
    """An issue record, read through names and enums (its plain fields: declared.IssueFields)."""

    __slots__ = ()

    @property
    def kill_reason(self) -> KillReason | None:
        reason = self.record.get("kill_reason")
        return KillReason(reason) if reason else None

    @property
    def why_open(self) -> str:
        """Why the issue is still open, for reports: kept open for a person, or stopped runs."""
        if self.keep_open:
            return f"kept open: {self.keep_open}"
        if self.kill_reason:
            return (
                f"INVESTIGATE stopped {plural(self.kills, 'time')}: {self.kill_reason}, log {self.kill_log}"
            )
        return ""


def holds(item: Record, runner: str, host: str | None) -> bool:
    """Whether the item's claim is `runner`'s on `host`: its name, and its host where both are
    known. Runners on two hosts may share a name (`--runner ci` in a CI matrix): each is another
    runner to the other. A claim recorded with no host (before hosts were) goes by its name."""
    return item.get("claimed_by") == runner and (host is None or item.get("claimed_on") in (None, host))
