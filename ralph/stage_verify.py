"""VERIFY: one agent run per done task, up to --parallel at once (fork/join); each accepts or
rejects its task. A task given no verdict stays done for the next VERIFY. Then prioritize."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from ralph import process
from ralph.agentrun import AgentResult
from ralph.prompts import task_details

if TYPE_CHECKING:
    from ralph.construct import Loop


class VerifyStage:
    def __init__(self, loop: Loop):
        self.loop = loop

    def run(self, iteration: int) -> None:
        plan = self.loop.read_plan()
        done = [t for t in self.loop.tasks(plan) if t.get("s") == "d"]
        if not done:
            return
        span = self.loop.journal.span("stage", stage="VERIFY", iteration=iteration, items=len(done))
        names = {t["id"]: t["name"] for t in plan.tasks()}
        self.loop.set_state(stage="VERIFY")
        try:
            with ThreadPoolExecutor(max_workers=self.loop.settings.parallel) as pool:
                results = list(pool.map(lambda t: self._verify_one(t, iteration, names), done))
        except KeyboardInterrupt:
            process.stop_all(self.loop.settings.grace_s)
            raise
        for result in results:
            self.loop.check_plan(result)
        verdicts = self._verdicts(done)
        summary = "; ".join(f"{kind} {', '.join(ids)}" for kind, ids in verdicts.items() if ids)
        self.loop.commit_stage(f"ralph(verify): {summary}")
        self.loop.prioritize()
        span.end(**{kind.replace(" ", "_"): ids for kind, ids in verdicts.items() if ids})

    def _verify_one(self, task: dict, iteration: int, names: dict[str, str]) -> AgentResult:
        values = {
            "task_id": task["id"],
            "task_name": task["name"],
            "task_details": task_details(task, names),
            "task_commit": task.get("commit") or "HEAD",
        }
        return self.loop.agent("VERIFY", iteration, task["id"], values)

    def _verdicts(self, done: list[dict]) -> dict[str, list[str]]:
        plan = self.loop.read_plan()
        accepted, current = plan.accepted(), {t["id"]: t for t in plan.tasks()}
        verdicts: dict[str, list[str]] = {"accepted": [], "rejected": [], "no verdict": []}
        for task in done:
            if task["id"] in accepted:
                verdicts["accepted"].append(task["id"])
                self.loop.accepted.append(f"{task['id']} {task['name']}")
            elif task["id"] in current and current[task["id"]].get("s") == "d":
                verdicts["no verdict"].append(task["id"])
                self.loop.journal.event("no_verdict", item=task["id"])
            else:
                verdicts["rejected"].append(task["id"])
        return verdicts
