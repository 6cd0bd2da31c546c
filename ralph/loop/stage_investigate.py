"""INVESTIGATE: one agent run per open issue of the spec; each turns its issue into tasks (or
finds it needs none) and resolves it."""

from __future__ import annotations

from ralph.loop.prompts import data_block
from ralph.loop.workspace import StageReport, Workspace
from ralph.plan.records import Stage


class InvestigateStage:
    def __init__(self, ws: Workspace):
        self.ws = ws

    def run(self, iteration: int) -> StageReport:
        issues = self.ws.issues()
        report = StageReport(Stage.INVESTIGATE, items=len(issues))
        if not issues:
            return report
        span = self.ws.journal.span("stage", stage="INVESTIGATE", iteration=iteration, items=len(issues))
        for issue in issues:
            values = {"issue_id": issue["id"], "issue_text": data_block("the issue", issue["text"])}
            result = self.ws.run_agent(Stage.INVESTIGATE, iteration, issue["id"], values)
            self.ws.check_plan(result)
            if any(still_open["id"] == issue["id"] for still_open in self.ws.issues()):
                self.ws.journal.event("issue_unresolved", item=issue["id"], log=str(result.log_path))
            commit = self.ws.commit(f"ralph(investigate): {issue['id']} {issue['text'][:60]}")
            report.commits += [commit] if commit else []
        span.end()
        return report
