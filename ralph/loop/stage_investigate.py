"""INVESTIGATE: one agent run per open issue of the spec; each turns its issue into tasks (or
finds it needs none) and resolves it. An issue the agent turned into tasks but did not resolve is
resolved by ralph, naming those tasks, so it is not investigated again (and its tasks not added
again) next iteration; one the agent kept open on purpose (`ralph issue keep`) is skipped."""

from __future__ import annotations

from ralph.loop.prompts import data_block
from ralph.loop.workspace import StageReport, Workspace
from ralph.plan.records import Stage


class InvestigateStage:
    def __init__(self, ws: Workspace):
        self.ws = ws

    def run(self, iteration: int) -> StageReport:
        issues = [issue for issue in self.ws.issues() if not issue.get("keep_open")]
        report = StageReport(Stage.INVESTIGATE, items=len(issues))
        if not issues:
            return report
        span = self.ws.journal.span("stage", stage="INVESTIGATE", iteration=iteration, items=len(issues))
        for issue in issues:
            values = {"issue_id": issue["id"], "issue_text": data_block("the issue", issue["text"])}
            result = self.ws.run_agent(Stage.INVESTIGATE, iteration, issue["id"], values)
            self.ws.check_plan(result)
            message = f"ralph(investigate): {issue['id']} {issue['text'][:60]}"
            if self._still_open(issue["id"]):
                message = self._resolve_if_it_became_tasks(issue["id"], message, str(result.log_path))
            commit = self.ws.commit(message)
            report.commits += [commit] if commit else []
        span.end()
        return report

    def _still_open(self, issue_id: str) -> bool:
        return any(issue["id"] == issue_id for issue in self.ws.issues())

    def _resolve_if_it_became_tasks(self, issue_id: str, message: str, log: str) -> str:
        plan = self.ws.read_plan()
        made = [task["id"] for task in plan.tasks() if task.get("issue") == issue_id]
        kept = any(issue.get("keep_open") for issue in plan.issues() if issue["id"] == issue_id)
        if not made or kept:
            self.ws.journal.event("issue_unresolved", item=issue_id, kept_open=kept or None, log=log)
            return message
        with self.ws.change_plan() as change:  # goes in with this stage's commit
            change.plan.resolve_issue(issue_id)
        self.ws.journal.event("issue_resolved_by_ralph", item=issue_id, tasks=made)
        return f"{message}\n\nresolved by ralph: it became {', '.join(made)}"
