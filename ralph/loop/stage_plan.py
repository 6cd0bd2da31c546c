"""PLAN: one agent run turns the spec into tasks; ralph then commits and prioritizes them."""

from __future__ import annotations

from ralph.loop.workspace import StageReport, Workspace
from ralph.plan.records import Stage


class PlanStage:
    def __init__(self, ws: Workspace):
        self.ws = ws

    def run(self, iteration: int) -> StageReport:
        span = self.ws.journal.span("stage", stage="PLAN")
        result = self.ws.run_agent(Stage.PLAN, iteration, None, {})
        self.ws.check_plan(result)
        count = len(self.ws.tasks())
        commit = self.ws.commit(f"ralph(plan): {self.ws.settings.spec}: {count} tasks")
        self.ws.prioritize()
        span.end(tasks=count)
        return StageReport(Stage.PLAN, items=1, commits=[commit] if commit else [])
