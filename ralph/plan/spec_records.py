"""The construct loop's records of a spec: that it is the loop's current one, that PLAN planned it
or was stopped, and what its last check found or why it was stopped."""

from __future__ import annotations

from ralph.plan import questions, singletons
from ralph.plan.document import Record
from ralph.plan.reading import PlanReader
from ralph.plan.records import CHECK_KILL_PREFIX, KillReason, awaits_recheck, count_kill
from ralph.plan.run_records import CheckRecord

SUPERSEDED = "the spec check ran again and added what of this was still missing"


def add_spec(plan: PlanReader, path: str) -> None:
    """Record a spec the plan works towards (once) and make it the loop's current one."""
    if path not in plan.specs():
        plan.doc.append({"t": "spec", "path": path})
    singletons.update_state(plan, spec=path)


def record_plan_kill(
    plan: PlanReader, spec: str, kill_reason: KillReason | None, kill_log: str | None = None
) -> None:
    """The spec's PLAN run was stopped (its time limit, a full context): its record keeps why
    and the run's log. None clears them (a PLAN run that finished)."""
    for line in plan.of("spec"):
        if line.record["path"] == spec:
            record = line.record
            if kill_reason is None:
                if "kill_reason" not in record and "kill_log" not in record:
                    return
                record.pop("kill_reason", None)
                record.pop("kill_log", None)
            else:
                record["kill_reason"], record["kill_log"] = str(kill_reason), kill_log
            plan.doc.rewrite(line)
            return


def record_planned(plan: PlanReader, spec: str) -> None:
    """A PLAN run of the spec finished with tasks: the spec is planned, whatever issues come later."""
    line = plan.spec_line(spec)
    if line is not None and line.record.get("planned") is not True:
        line.record["planned"] = True
        plan.doc.rewrite(line)


def record_spec_check(plan: PlanReader, spec: str, commit: str | None, digest: str | None) -> None:
    """A spec check finished: what it read when it found nothing missing (the commit, the spec's
    SHA-256), or None when it found work (the next check runs whatever changed). A finished check
    clears what stopped ones left."""
    line = plan.spec_line(spec)
    if line is None:
        return
    _checked_on(line.record, commit, digest)
    plan.doc.rewrite(line)


def _checked_on(record: Record, commit: str | None, digest: str | None) -> None:
    for key in (
        "checked_commit",
        "checked_spec",
        *(f"{CHECK_KILL_PREFIX}{k}" for k in ("kills", "kill_reason", "kill_log")),
    ):
        record.pop(key, None)
    if commit is not None and digest is not None:
        record["checked_commit"], record["checked_spec"] = commit, digest


def record_check_kill(plan: PlanReader, spec: str, kill_reason: KillReason, kill_log: str) -> int:
    """A spec check was stopped (its time limit, a full context): the spec record counts it, with
    why and the run's log; returns how many were stopped so far."""
    line = plan.spec_line(spec)
    if line is None:
        return 0
    kills = count_kill(line.record, CHECK_KILL_PREFIX, kill_reason, kill_log)
    plan.doc.rewrite(line)
    return kills


def record_check(plan: PlanReader, spec: str, run: CheckRecord) -> int:
    """The spec check's one write: its stop counted on the spec record (record_check_kill), or,
    once it finished, what it read recorded (record_spec_check) and the issues an earlier check
    cut resolved, superseded (all but the one it cut itself). The spec's record read once and
    written once. The stops so far (0 once a check finished)."""
    line = plan.spec_line(spec)
    issues = [] if run.kill_reason else plan.issues(spec)
    superseded = [issue["id"] for issue in issues if awaits_recheck(issue) and issue["id"] != run.cut_issue]
    if line is None:
        kills = 0
    elif run.kill_reason is not None:
        kills = count_kill(line.record, CHECK_KILL_PREFIX, run.kill_reason, run.kill_log)
    else:
        kills = 0
        _checked_on(line.record, run.commit, run.digest)
    if line is not None:
        plan.doc.rewrite(line)
    for issue_id in superseded:  # it read the spec again: what was cut then is in its findings
        questions.resolve_issue(plan, issue_id, SUPERSEDED)
    return kills
