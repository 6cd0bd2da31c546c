"""INVESTIGATE: one agent run per open issue of the spec; each turns its issue into tasks (or
finds it needs none) and resolves it. An issue the agent turned into tasks but did not resolve is
resolved by ralph, naming those tasks, so it is not investigated again (and its tasks not added
again) next iteration; one the agent kept open on purpose (`ralph issue keep`) is skipped.

A run stopped by its time limit or a full context changes nothing (what it did to the plan is kept
beside its log and undone); the issue records why and the log, the next run is told, and after
max_attempts stopped runs the issue is kept open for a person instead of being run again."""

from __future__ import annotations

from pathlib import Path

from ralph.loop.runs.agent_process import AgentResult
from ralph.loop.runs.prompts import data_block
from ralph.loop.stages.job import Job
from ralph.loop.stages.workspace import StageReport, Workspace
from ralph.plan.document import Record
from ralph.plan.new_work import bound_new_work
from ralph.plan.plan import Plan
from ralph.plan.records import IssueView, KillReason, Stage, kill_reason_of
from ralph.text import plural
from ralph.usecases.settings import Settings


class InvestigateStage:
    def __init__(self, ws: Workspace):
        self.ws = ws
        self.plan, self.agents, self.tree = ws.plan, ws.agents, ws.tree  # the parts it acts through

    def run(self, iteration: int) -> StageReport:
        found = jobs(self.plan.read(), self.ws.settings)
        report = StageReport(Stage.INVESTIGATE, items=len(found))
        if not found:
            return report
        span = self.ws.journal.span("stage", stage="INVESTIGATE", iteration=iteration, items=len(found))
        report.items = 0
        for job in self.ws.coordinator.each(Stage.INVESTIGATE, found, self._fresh, self._items):
            self._investigate(job.record, job.values, iteration, report)
            report.items += 1
        span.end()
        return report

    def _items(self, plan: Plan) -> list[Record]:
        return open_issues(plan, self.ws.settings.spec)

    def _fresh(self, issue_id: str) -> Job | None:
        return next((job for job in jobs(self.plan.read(), self.ws.settings) if job.item == issue_id), None)

    def _investigate(
        self, issue: Record, values: dict[str, object], iteration: int, report: StageReport
    ) -> None:
        self.plan.set_state(stage=str(Stage.INVESTIGATE))
        before, base = self.plan.raw(), self.plan.read()  # what a stopped run's changes go back to
        result = self.agents.run_agent(Stage.INVESTIGATE, iteration, issue["id"], values, plan=base)
        self.agents.check_plan(result)
        stop = kill_reason_of(result.run.stop_reason)
        if stop:
            commit = self._stopped(issue, stop, result, before, report)
        else:
            bound = self._bound(issue, result.with_persons or base)  # a person's additions are not the run's
            message = f"ralph(investigate): {issue['id']} {issue['text'][:60]}" + bound
            if self._still_open(issue["id"]):
                message = self._resolve_if_it_became_tasks(issue["id"], message, str(result.log_path))
            else:
                message += self._resolution(issue["id"], str(result.log_path))
            commit = self.tree.commit(message)
        report.commits += [commit] if commit else []

    def _bound(self, issue: Record, base: Plan) -> str:
        """What the run added, bounded by ralph (ralph.plan.new_work); for the commit subject."""
        with self.plan.change() as change:  # goes in with this stage's commit
            limit = self.ws.settings.max_new_items
            bounded = bound_new_work(change.plan, base, limit, f"INVESTIGATE of {issue['id']}")
        if bounded.cut:
            cut = [c.record["id"] for c in bounded.cut]
            self.ws.journal.event("new_work_cut", item=issue["id"], cut=cut, issue=bounded.issue)
        summary = bounded.summary()
        return f": {summary}" if summary else ""

    def _resolution(self, issue_id: str, log: str) -> str:
        """The agent resolved the issue: its note (why it needs no work, or what it became) goes
        into the commit's body and the journal; the plan keeps it as a resolve record."""
        note = self.plan.read().resolutions().get(issue_id)
        self.ws.journal.event("issue_resolved", item=issue_id, note=note, log=log)
        return f"\n\nresolved: {note}" if note else "\n\nresolved without a note"

    def _still_open(self, issue_id: str) -> bool:
        return any(issue["id"] == issue_id for issue in self.plan.issues())

    def _resolve_if_it_became_tasks(self, issue_id: str, message: str, log: str) -> str:
        plan = self.plan.read()
        made = [task["id"] for task in plan.tasks() if task.get("issue") == issue_id]
        kept = any(issue.get("keep_open") for issue in plan.issues() if issue["id"] == issue_id)
        if not made or kept:
            self.ws.journal.event("issue_unresolved", item=issue_id, kept_open=kept or None, log=log)
            return message
        with self.plan.change() as change:  # goes in with this stage's commit
            change.plan.resolve_issue(issue_id)
        self.ws.journal.event("issue_resolved_by_ralph", item=issue_id, tasks=made)
        return f"{message}\n\nresolved by ralph: it became {', '.join(made)}"

    def _stopped(
        self, issue: Record, reason: KillReason, result: AgentResult, before: bytes, report: StageReport
    ) -> str | None:
        """The run was stopped half way: its plan changes (tasks of a half-done investigation)
        are kept beside its log and undone, and the issue records the stop; at max_attempts
        stops it is kept open for a person."""
        log = str(result.log_path)
        self.plan.undo_since(before, result, issue["id"])
        limit = self.ws.settings.max_attempts
        with self.plan.change() as change:  # goes in with the commit below
            if not any(open_issue["id"] == issue["id"] for open_issue in change.plan.issues()):
                return None  # gone meanwhile (a person resolved it): nothing to record
            stops = change.plan.record_investigation_kill(issue["id"], reason, log)
            parked = stops >= limit
            if parked:
                change.plan.keep_issue_open(
                    issue["id"],
                    f"INVESTIGATE was stopped {stops} times ({reason}; last log {log}): a person must look"
                    " at it, or split it into smaller issues",
                )
        self.ws.journal.event(
            "issue_stopped", item=issue["id"], kill_reason=reason, stops=stops, parked=parked, log=log
        )
        then = "kept open for a person" if parked else f"investigated again next time ({stops} of {limit})"
        report.stopped.append(f"{issue['id']} INVESTIGATE stopped ({reason}), {then}; log {log}")
        self.ws.console.event(f"INVESTIGATE {issue['id']} stopped ({reason}); {then}")
        return self.tree.commit(f"ralph(investigate): {issue['id']} stopped ({reason}), {then}")


def jobs(plan: Plan, settings: Settings, root: Path | None = None) -> list[Job]:
    """The INVESTIGATE runs a plan calls for: one per open issue of the spec, but those a person
    keeps open. (`root`: every stage's jobs take the same arguments, ralph.loop.stages.modules.)"""
    return [
        Job(
            Stage.INVESTIGATE, issue["id"], issue["text"], _values(issue, settings.max_attempts), record=issue
        )
        for issue in open_issues(plan, settings.spec)
    ]


def open_issues(plan: Plan, spec: str) -> list[Record]:
    """The issues INVESTIGATE runs on: the spec's open ones, but those a person keeps open."""
    return [issue for issue in plan.issues(spec) if not issue.get("keep_open")]


def _values(issue: Record, max_attempts: int) -> dict[str, object]:
    return {
        "issue_id": issue["id"],
        "issue_text": data_block("the issue", issue["text"]),
        "previous": _previous_stop(IssueView(issue), max_attempts),
    }


def _previous_stop(issue: IssueView, max_attempts: int) -> str:
    """What the investigator is told of earlier runs of the issue that were stopped."""
    if not issue.kill_reason:
        return ""
    said = (
        f"{plural(issue.kills, 'earlier INVESTIGATE run')} of this issue"
        f" {'was' if issue.kills == 1 else 'were'} stopped, the last one by"
        f" {issue.kill_reason} (log: {issue.kill_log}); at {max_attempts} the issue is left to a person."
    )
    return (
        f"\n{data_block('earlier INVESTIGATE runs', said)}\n"
        "Work in small steps, keep command output short, and end with one of the actions below.\n"
    )
