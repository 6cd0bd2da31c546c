"""VERIFY: one agent run per done task, up to --parallel at once (fork/join); each accepts or
rejects its task. A task given no verdict stays done for the next VERIFY. Then prioritize."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ralph.loop.agentrun import AgentResult
from ralph.loop.prompts import one_line, task_details
from ralph.loop.signals import deferred_signals
from ralph.loop.workspace import StageReport, Workspace
from ralph.plan.records import Stage, TaskView


class VerifyStage:
    def __init__(self, ws: Workspace):
        self.ws = ws

    def run(self, iteration: int) -> StageReport:
        plan = self.ws.read_plan()
        done = [task for task in self.ws.tasks(plan) if task.done]
        report = StageReport(Stage.VERIFY, items=len(done))
        if not done:
            return report
        span = self.ws.journal.span("stage", stage="VERIFY", iteration=iteration, items=len(done))
        names = {t["id"]: t["name"] for t in plan.tasks()}
        self.ws.set_state(stage=str(Stage.VERIFY))
        before, old = self.ws.snapshot(), self.ws.read_plan()
        pool = ThreadPoolExecutor(max_workers=self.ws.settings.parallel)
        try:
            results = list(pool.map(lambda task: self._verify_one(task, iteration, names), done))
        except BaseException:  # Ctrl-C or a stop signal: stop every verifier, not only the waited one
            with deferred_signals():
                # Stopped before the threads are joined (`with pool` would wait for every verifier
                # to finish); the queued ones never start.
                pool.shutdown(wait=False, cancel_futures=True)
                self.ws.runner.supervisor.stop_all()
                pool.shutdown(wait=True)
            raise
        pool.shutdown(wait=True)
        # The verifiers share one plan and one work tree, so their permissions are checked together:
        # verdicts only on this batch's tasks, no code changed, HEAD where it was.
        self.ws.enforce(Stage.VERIFY, {task.id for task in done}, before, old, results)
        verdicts = self._verdicts(done)
        report.accepted = [f"{task.id} {task.name}" for task in done if task.id in verdicts["accepted"]]
        summary = "; ".join(f"{kind} {', '.join(ids)}" for kind, ids in verdicts.items() if ids)
        commit = self.ws.commit(f"ralph(verify): {summary}")
        report.commits += [commit] if commit else []
        self.ws.prioritize()
        span.end(**{kind.replace(" ", "_"): ids for kind, ids in verdicts.items() if ids})
        return report

    def _verify_one(self, task: TaskView, iteration: int, names: dict[str, str]) -> AgentResult:
        values = {
            "task_id": task.id,
            "task_name": one_line(task.name),
            "task_details": task_details(task.record, names),
            "task_commit": task.commit or "HEAD",
        }
        return self.ws.run_agent(Stage.VERIFY, iteration, task.id, values)

    def _verdicts(self, done: list[TaskView]) -> dict[str, list[str]]:
        plan = self.ws.read_plan()
        accepted, current = plan.accepted(), {task.id: task for task in plan.task_views()}
        verdicts: dict[str, list[str]] = {"accepted": [], "rejected": [], "no verdict": []}
        for task in done:
            if task.id in accepted:
                verdicts["accepted"].append(task.id)
            elif task.id in current and current[task.id].done:
                verdicts["no verdict"].append(task.id)
                self.ws.journal.event("no_verdict", item=task.id)
            else:
                verdicts["rejected"].append(task.id)
        return verdicts
