"""What one VERIFY run changes on its task's record, in place. `verify_on` makes each kind: a stop
counted (at max_attempts stops, the task set aside for DECOMPOSE), an acceptance (the task's line
goes, an accept record in its place), a rejection (back to pending, fingerprinted like a build
failure: ralph.plan.tasks.send_back), or a verdict that comes too late (a person judged or removed
the task meanwhile) and changes nothing. ralph.plan.attempts.record_verify reads the task's line
and writes it back once."""

from __future__ import annotations

from typing import NamedTuple

from ralph.plan import tasks
from ralph.plan.document import Record
from ralph.plan.reading import PlanReader
from ralph.plan.records import VerifyRecord, count_kill, is_done


class VerifyChange(NamedTuple):
    """What the run made of its task's record: what was taken of it (its verdict and reason, that
    it came too late, or a stop's count), the record to append after the task's line, and what
    becomes of the line (rewritten; gone, once accepted; untouched)."""

    taken: Record
    adds: Record | None = None
    written: bool = False  # the task's record changed: its line is written back
    gone: bool = False  # accepted: its line goes


def verify_on(plan: PlanReader, task: Record | None, run: VerifyRecord) -> VerifyChange:
    """The verifier's run made on its task's record (None: gone from the plan), in place."""
    if run.kill_reason is not None and task is not None:
        stops = count_kill(task, "verify_", run.kill_reason, run.kill_log)
        aside = run.set_aside
        adds = tasks.set_aside_on(task, aside, run.kill_reason, run.kill_log) if aside else None
        return VerifyChange({"stops": stops}, adds, written=True)
    if run.verdict is not None and (task is None or not is_done(task)):
        return VerifyChange({"verdict": None, "overtaken": True})  # a person's verdict stands
    if run.verdict == "accepted" and task is not None:
        return VerifyChange({"verdict": "accepted"}, tasks.accepted_on(task), written=True, gone=True)
    if run.verdict == "rejected" and run.reason is not None and task is not None:
        adds = tasks.rejected_on(plan, task, run.reason)
        return VerifyChange({"verdict": "rejected", "reason": run.reason}, adds, written=True)
    return VerifyChange({"verdict": None})
