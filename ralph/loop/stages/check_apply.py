"""What one spec check came to, applied in one place. `apply` takes the check's `CheckOutcome`
(ralph.loop.stages.check_outcome) and its run, and does, in this order: a stopped or failed run
undone, the plan's one write (spec_records.record_check: a stop counted; or a finished check's
additions taken, bounded, and what it read recorded), then the journal, the console and the report
told, and the commit made. Whether a finished check added anything the plan finds as it takes its
additions: decided there, in that write."""

from __future__ import annotations

from typing import NamedTuple

from ralph.loop.observe.journal import Span
from ralph.loop.runs.agent_process import AgentResult
from ralph.loop.stages.check_outcome import CheckFacts, CheckOutcome, decide
from ralph.loop.stages.workspace import StageReport, Workspace
from ralph.plan.new_work import Bounded, bound_new_work
from ralph.plan.plan import Plan
from ralph.plan.records import KillReason, kill_reason_of
from ralph.plan.run_records import CheckRecord


class CheckRun(NamedTuple):
    """The check's agent run, and what applying its outcome needs of it besides."""

    result: AgentResult
    before: bytes  # plan.jsonl as it was: what a stopped or failed run's changes go back to
    base: Plan  # what its additions are taken against (a person's changes meanwhile are not its)
    span: Span


class Read(NamedTuple):
    """What the check read: HEAD and the spec's SHA-256 (recorded when it finds nothing missing)."""

    head: str | None
    digest: str


class Written(NamedTuple):
    """What the check's write came to: its outcome (a finished check's: MET or ADDED, decided as
    its additions were taken), a stop's count, what of its additions was taken."""

    outcome: CheckOutcome
    stops: int = 0
    bounded: Bounded | None = None


def apply(ws: Workspace, spec: str, run: CheckRun, read: Read, report: StageReport) -> CheckOutcome:
    """What the check's run came to, decided from what it did and written (_write), then the
    person told and the commit made. The outcome, once written."""
    written = _write(ws, spec, facts(run.result), run, read)
    commit = _tell(ws, spec, written, run, report)
    report.commits += [commit] if commit else []
    return written.outcome


def _write(ws: Workspace, spec: str, did: CheckFacts, run: CheckRun, read: Read) -> Written:
    """What the run did, decided; then its one write to the plan: a stopped or failed run undone
    (a stop counted), or what it added taken, bounded by ralph (the rest go into one issue that
    awaits the next check), with what a check that added nothing read."""
    outcome = decide(did)
    if outcome in (CheckOutcome.STOPPED, CheckOutcome.FAILED):
        ws.plan.undo_since(run.before, run.result, spec)
    if outcome is CheckOutcome.FAILED:
        return Written(outcome)
    with ws.plan.change() as change:  # goes in with the commit that tells it
        if did.stopped is not None:
            stops = change.plan.record_check(spec, CheckRecord(did.stopped, str(run.result.log_path)))
            return Written(outcome, stops)
        max_new = ws.settings.max_new_items
        bounded = bound_new_work(change.plan, run.base, max_new, f"the spec check of {spec}", recheck=True)
        added = bounded.taken()
        outcome = decide(CheckFacts(added=len(added)))  # MET or ADDED
        met = outcome is CheckOutcome.MET
        head, digest = (read.head, read.digest) if met else (None, None)
        change.plan.record_check(spec, CheckRecord(commit=head, digest=digest, cut_issue=bounded.issue))
    return Written(outcome, bounded=bounded)


def _tell(ws: Workspace, spec: str, written: Written, run: CheckRun, report: StageReport) -> str | None:
    """What the check came to, where the person looks (the journal, the console, the report), and
    the commit that carries its write (none for a failed run: nothing of it is kept)."""
    outcome, log = written.outcome, str(run.result.log_path)
    if outcome is CheckOutcome.FAILED:
        result = run.result
        why = result.violation or result.plan_problem or f"the agent ended ({result.describe()})"
        ws.journal.event("check_failed", item=spec, why=why, log=log)
        report.failed.append(f"{spec} CHECK failed: {why}; nothing of it kept; log {log}")
        ws.console.event(f"CHECK {spec} failed: {why}; nothing of it kept")
        run.span.end(failed=True)
        return None
    if outcome is CheckOutcome.STOPPED:
        reason = kill_reason_of(run.result.run.stop_reason)
        return _tell_stop(ws, spec, reason, written.stops, run, report)
    bounded = written.bounded or Bounded()
    added = bounded.taken()
    cut = [c.record["id"] for c in bounded.cut]
    ws.journal.event(
        "spec_checked", item=spec, added=bounded.kept or None, cut=cut or None, cut_issue=bounded.issue
    )
    said = bounded.summary() if added else "nothing missing"
    ws.console.event(f"CHECK {spec}: {said}")
    if outcome is CheckOutcome.ADDED:
        ws.plan.prioritize(commit=False)
    commit = ws.tree.commit(f"ralph(check): {spec}: {said}")
    run.span.end(added=added or None)
    return commit


def _tell_stop(
    ws: Workspace, spec: str, reason: KillReason | None, stops: int, run: CheckRun, report: StageReport
) -> str | None:
    log = str(run.result.log_path)
    ws.journal.event("check_stopped", item=spec, kill_reason=reason, stops=stops, log=log)
    report.stopped.append(f"{spec} CHECK stopped ({reason}), nothing of it kept; log {log}")
    ws.console.event(f"CHECK {spec} stopped ({reason}); nothing of it kept")
    commit = ws.tree.commit(f"ralph(check): {spec} stopped ({reason})")
    run.span.end(kill_reason=str(reason))
    return commit


def facts(result: AgentResult) -> CheckFacts:
    """What the check's run did, asked in decide's order (what it added is asked as it is taken)."""
    stop = kill_reason_of(result.run.stop_reason)
    if stop:
        return CheckFacts(stopped=stop)
    return CheckFacts(failed=not result.ok or bool(result.violation or result.plan_problem))
