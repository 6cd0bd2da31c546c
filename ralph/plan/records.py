"""Typed reading of plan records. Storage stays the raw, line-preserving dicts (a hand editor's
unknown keys survive every rewrite); code reads them through these enums and views instead of
spelling out keys and defaults in every module."""

from __future__ import annotations

from enum import StrEnum

from ralph.plan.document import Record


class Status(StrEnum):
    PENDING = "p"
    DONE = "d"  # built and through the gate, awaiting VERIFY
    BLOCKED = "b"  # the loop gave up on it (decomposed too deep): a person must decide


class KillReason(StrEnum):
    TIMEOUT = "timeout"
    CONTEXT_LIMIT = "context_limit"
    DOOM_LOOP = "doom_loop"


# What a stopped VERIFY run leaves on its (done) task; a new build starts them over.
VERIFY_KILL_FIELDS = ("verify_kills", "verify_kill_reason", "verify_kill_log")


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
    WAITING = "WAITING"
    BLOCKED = "BLOCKED"
    COMPLETE = "COMPLETE"


_STATUS = {"p": Status.PENDING, "d": Status.DONE, "b": Status.BLOCKED}


def status_of(task: Record) -> Status:
    return _STATUS[task.get("s", "p")]


def is_pending(task: Record) -> bool:
    status: str = task.get("s", "p")
    return status == "p"


def is_done(task: Record) -> bool:
    return task.get("s") == "d"


def is_blocked(task: Record) -> bool:
    return task.get("s") == "b"


def is_killed(task: Record) -> bool:
    """Set aside by the loop (timeout, context, repeated failure): DECOMPOSE splits it next."""
    return bool(task.get("kill_reason")) and is_pending(task)


class TaskView:
    """A task record, read through names and enums; `record` is the stored dict itself."""

    __slots__ = ("record",)

    def __init__(self, record: Record):
        self.record = record

    id = property(lambda self: self.record["id"])
    name = property(lambda self: self.record["name"])
    status = property(lambda self: status_of(self.record))
    pending = property(lambda self: is_pending(self.record))
    done = property(lambda self: is_done(self.record))
    killed = property(lambda self: is_killed(self.record))
    blocked = property(lambda self: is_blocked(self.record))
    depth = property(lambda self: self.record.get("depth", 0))
    deps = property(lambda self: self.record.get("deps", []))
    spec = property(lambda self: self.record.get("spec"))
    parent = property(lambda self: self.record.get("parent"))
    priority = property(lambda self: self.record.get("priority"))
    attempts = property(lambda self: self.record.get("attempts", 0))
    commit = property(lambda self: self.record.get("commit"))
    kill_log = property(lambda self: self.record.get("kill_log"))
    verify_kills = property(lambda self: self.record.get("verify_kills", 0))
    verify_kill_log = property(lambda self: self.record.get("verify_kill_log"))

    @property
    def kill_reason(self) -> KillReason | None:
        reason = self.record.get("kill_reason")
        return KillReason(reason) if reason else None

    @property
    def verify_kill_reason(self) -> KillReason | None:
        reason = self.record.get("verify_kill_reason")
        return KillReason(reason) if reason else None

    @property
    def why_not_done(self) -> str:
        """The latest reason the task is not finished, for reports: a kill, a rejection, a gate,
        a VERIFY run that was stopped."""
        record = self.record
        reasons = ("blocked_reason", "kill_reason", "reject_reason", "gate_failure")
        found = next((record[key] for key in reasons if record.get(key)), "")
        if not found and self.done and self.verify_kill_reason:
            log = f", log {self.verify_kill_log}" if self.verify_kill_log else ""
            found = f"VERIFY stopped {self.verify_kills} time(s): {self.verify_kill_reason}{log}"
        return found

    def __repr__(self) -> str:
        return f"TaskView({self.record!r})"


class IssueView:
    __slots__ = ("record",)

    def __init__(self, record: Record):
        self.record = record

    id = property(lambda self: self.record["id"])
    text = property(lambda self: self.record["text"])
    spec = property(lambda self: self.record.get("spec"))
    priority = property(lambda self: self.record.get("priority"))
    keep_open = property(lambda self: self.record.get("keep_open"))
    kills = property(lambda self: self.record.get("kills", 0))
    kill_log = property(lambda self: self.record.get("kill_log"))

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
            return f"INVESTIGATE stopped {self.kills} time(s): {self.kill_reason}, log {self.kill_log}"
        return ""
