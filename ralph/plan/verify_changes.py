"""What one VERIFY run changes on its task's record, in place. `verify_on` makes each kind: a stop
counted (at max_attempts stops, the task set aside for DECOMPOSE), an acceptance (the task's line
goes, an accept record in its place), a rejection (back to pending, fingerprinted like a build
failure: ralph.plan.tasks.send_back), or a verdict that comes too late (a person judged or removed
the task meanwhile) and changes nothing. record_verify reads the task's line and writes it back
once.

VERIFY's transitions are here too: a stopped run (record_verify_stop), one verifier's verdict and
what it added (record_verify), and what a verifier gave in its own copy of the plan, read once
(given_by) and taken as plain data a runner replays (apply_verification)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ralph.plan import tasks
from ralph.plan.document import Record
from ralph.plan.reading import PlanReader
from ralph.plan.records import KillReason, count_kill, is_done
from ralph.plan.run_records import VerifyRecord


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


def record_verify_kill(plan: PlanReader, task_id: str, kill_reason: KillReason, kill_log: str) -> int:
    """A VERIFY run of the done task was stopped (its time limit, a full context): it stays
    done, with why and the run's log, for the next VERIFY to know; returns how many of its
    VERIFY runs were stopped so far (the loop sets it aside at max_attempts)."""
    return record_verify_stop(plan, task_id, kill_reason, kill_log)


def record_verify_stop(
    plan: PlanReader, task_id: str, kill_reason: KillReason, kill_log: str, set_aside: str | None = None
) -> int:
    """A stopped VERIFY run on its task (record_verify_kill), and with `set_aside` (why) the task
    set aside for DECOMPOSE (record_verify). The stops so far."""
    stopped = VerifyRecord(kill_reason=kill_reason, kill_log=kill_log, set_aside=set_aside)
    return int(record_verify(plan, task_id, stopped)["stops"])


def record_verify(plan: PlanReader, task_id: str, run: VerifyRecord) -> Record:
    """VERIFY's one write of one verifier's run on its task: the task's line read once, the run's
    stop or verdict made on its record (verify_changes.verify_on) and the line written once, with
    the record that adds; then the tasks and issues its verifier added, at most `run.max_new` of
    them (new_work.take_added). What was taken (of a stop: the stops so far)."""
    line = plan.find_task_line(task_id)
    if line is None and run.kill_reason is not None:
        line = plan.task_line(task_id)  # refused: it says why there is none
    change = verify_on(plan, line.record if line else None, run)
    if line is not None and change.gone:
        plan.doc.remove(line)
    elif line is not None and change.written:
        plan.doc.rewrite(line)
    if change.adds is not None:
        plan.doc.append(change.adds)
    if change.gone:
        tasks.drop_served_answers(plan)
    if run.kill_reason is not None:
        return change.taken
    from ralph.plan import new_work  # the loop's alone: the state commands never load it (dataclasses)

    return change.taken | new_work.take_added(plan, list(run.added), run.max_new, f"VERIFY of {task_id}")


@dataclass(frozen=True)
class Given:
    """What one verifier gave in its own copy of the plan, read once (`given_by`): its verdict on
    its task ("accepted", "rejected" with its reason, or none) and the tasks and issues it added
    (records, with their ids): the plain data apply_verification takes."""

    verdict: str | None = None
    reason: str | None = None
    added: tuple[Record, ...] = ()


def given_by(task_id: str, base: PlanReader, theirs: PlanReader) -> Given:
    """What the verifier of `task_id` gave in `theirs`, its copy of the plan that started as `base`."""
    verdict, reason = verdict_given(task_id, base, theirs)
    known = base.doc.ids()
    added = tuple(
        dict(line.record) for line in theirs.doc.lines_of("task", "issue") if line.record["id"] not in known
    )
    return Given(verdict, reason, added)


def verdict_given(task_id: str, base: PlanReader, theirs: PlanReader) -> tuple[str | None, str | None]:
    """The verdict one verifier gave its task in its own copy of the plan (`theirs`, which started
    as `base`): "accepted", "rejected" with its reason, or none."""
    if task_id in theirs.accepted() - base.accepted():
        return "accepted", None
    reasons = theirs.reject_reasons(task_id)[len(base.reject_reasons(task_id)) :]
    return ("rejected", reasons[-1]) if reasons else (None, None)


def take_verification(
    plan: PlanReader, task_id: str, base: PlanReader, theirs: PlanReader, max_new: int | None = None
) -> Record:
    """Take in what one verifier gave in its own copy of the plan (`theirs`, which started as
    `base`): its verdict on its task, and the tasks and issues it added, at most `max_new` of them
    (new_work.bound: the rest go into one issue for a person, `cut_issue`). Its permissions are
    checked before; nothing else of its copy is taken. Returns what was taken. The change is made
    by `apply_verification`, whose arguments are plain data: a runner replays it as an operation."""
    given = given_by(task_id, base, theirs)
    args = (task_id, given.verdict, given.reason, list(given.added), max_new)
    apply = getattr(plan, "apply_verification", None)  # the recorded transition, on a Plan
    if apply is not None:
        return apply(*args)  # type: ignore[no-any-return]
    return apply_verification(plan, *args)


def apply_verification(
    plan: PlanReader,
    task_id: str,
    verdict: str | None,
    reason: str | None,
    added: list[Record],
    max_new: int | None = None,
) -> Record:
    """A verifier's verdict on its task ("accepted", or "rejected" with its reason) and the tasks
    and issues it added (records, with their ids), at most `max_new` of them (record_verify).
    Returns what was taken."""
    given = VerifyRecord(verdict=verdict, reason=reason, added=tuple(added), max_new=max_new)
    return record_verify(plan, task_id, given)
