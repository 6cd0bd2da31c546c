"""PLAN: one agent run turns the spec into tasks; ralph then commits and prioritizes them.

A run stopped by its time limit or a full context keeps nothing: a half-made plan would be built
as if it were the whole spec. Its tasks are kept beside its log, the spec's record says why, and
the loop ends for a person to decide (a longer --timeout, or a smaller spec).

A run that broke the stage's rules (wrote code, gave a verdict, ...) is undone whole, tasks and all
(ralph.loop.stages.retries), and PLAN runs again, up to max_attempts runs in all: its work is still to
do, and an agent that scaffolded code beside its tasks once need not end the loop. When no run
kept them, or none added a task, the loop ends STUCK (`plan_failed`) with what each did.

The stage is recorded before its agent starts (ralph.store.intent, PLAN): a kill while the agent
runs is undone by the next start (what it wrote kept under build/ralph-logs/doctor/), one after it
ended is finished (its tasks committed). Uncommitted tasks were built in worktrees that have only
the committed plan, and every build failed with `no task`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ralph.loop.observe.journal import Span
from ralph.loop.runs.agent_process import AgentResult
from ralph.loop.stages.job import Job
from ralph.loop.stages.workspace import StageReport, Workspace
from ralph.plan.plan import Plan
from ralph.plan.records import KillReason, Stage, kill_reason_of
from ralph.usecases.settings import Settings


def needed(plan: Plan | None, spec: str) -> bool:
    """Whether a spec needs its PLAN run: PLAN never finished with tasks for it (open issues of the
    spec do not count: PlanReader.planned)."""
    return plan is None or not plan.planned(spec)


def jobs(plan: Plan | None, settings: Settings, root: Path | None = None) -> list[Job]:
    """The PLAN run a plan calls for: one, when the spec has not been planned. (`root`: every
    stage's jobs take the same arguments, ralph.loop.stages.modules.)"""
    return [Job(Stage.PLAN, None, settings.spec)] if needed(plan, settings.spec) else []


class PlanStage:
    def __init__(self, ws: Workspace):
        self.ws = ws
        self.plan, self.agents, self.tree = ws.plan, ws.agents, ws.tree  # the parts it acts through

    def run(self, iteration: int) -> StageReport:
        span = self.ws.journal.span("stage", stage="PLAN")
        before = self.plan.raw()
        with self.plan.planning(before) as whole:
            return self._run(iteration, span, before, whole)

    def _run(self, iteration: int, span: Span, before: bytes, whole: Callable[[str], None]) -> StageReport:
        report = StageReport(Stage.PLAN, items=1)
        result = self._agent(iteration, report)
        stop = kill_reason_of(result.run.stop_reason)
        if stop:
            commit = self._stopped(stop, result, before, report)
            span.end(tasks=0, kill_reason=str(stop))
        else:
            count = len(self.plan.tasks())
            message = f"ralph(plan): {self.ws.settings.spec}: {count} tasks"
            whole(message)  # its output is whole: a kill from here on is finished, not undone
            with self.plan.change() as change:  # goes in with the commit below
                change.plan.record_plan_kill(self.ws.settings.spec, None)
                if count:  # planned: later issues of the spec never skip its PLAN, nor does it run again
                    change.plan.record_planned(self.ws.settings.spec)
            # The priorities go in the plan's commit: one commit, not a second 'task prioritize'.
            counts = self.plan.prioritize(commit=False)
            priorities = f"{counts['high']} high, {counts['medium']} medium, {counts['low']} low"
            commit = self.tree.commit(f"{message} ({priorities})")
            span.end(tasks=count)
        report.commits += [commit] if commit else []
        return report

    def _agent(self, iteration: int, report: StageReport) -> AgentResult:
        """PLAN's agent run; again after a run that broke the stage's rules (undone, each in
        `report.failed`), up to max_attempts runs. The last run, whatever came of it."""
        limit = self.ws.settings.max_attempts
        for run in range(1, limit + 1):
            result = self.agents.run_agent(Stage.PLAN, iteration, None, {})
            self.agents.check_plan(result)
            if not result.violation or kill_reason_of(result.run.stop_reason):
                return result
            spec, log = self.ws.settings.spec, str(result.log_path)
            report.failed.append(f"{spec} PLAN run {run} of {limit}: permission violation, undone:"
                                 f" {result.violation}; log {log}")  # fmt: skip
            if run < limit:
                self.ws.journal.event("plan_again", item=spec, run=run + 1, max_runs=limit, log=log)
                self.ws.console.event(
                    f"PLAN {spec}: its run broke the stage's rules; run {run + 1} of {limit}"
                )
        return result

    def _stopped(
        self, reason: KillReason, result: AgentResult, before: bytes, report: StageReport
    ) -> str | None:
        spec, log = self.ws.settings.spec, str(result.log_path)
        self.plan.undo_since(before, result, spec)
        with self.plan.change() as change:
            change.plan.record_plan_kill(spec, reason, log)
        self.ws.journal.event("plan_stopped", item=spec, kill_reason=reason, log=log)
        report.stopped.append(f"{spec} PLAN stopped ({reason}), nothing of it kept; log {log}")
        self.ws.console.event(f"PLAN {spec} stopped ({reason}); nothing of it kept")
        return self.tree.commit(f"ralph(plan): {spec} stopped ({reason})")
