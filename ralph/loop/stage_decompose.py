"""DECOMPOSE: an agent replaces a killed task with 2-5 smaller ones that name it as parent,
reading only the head and tail of the killed run's log."""

from __future__ import annotations

from pathlib import Path

from ralph.loop.prompts import task_details
from ralph.loop.workspace import StageReport, Workspace
from ralph.plan.records import Stage, TaskView


class DecomposeStage:
    def __init__(self, ws: Workspace):
        self.ws = ws

    def run(self, iteration: int) -> StageReport:
        killed = [task for task in self.ws.tasks() if task.killed]
        report = StageReport(Stage.DECOMPOSE, items=len(killed))
        if not killed:
            return report
        span = self.ws.journal.span("stage", stage="DECOMPOSE", iteration=iteration, items=len(killed))
        for task in killed:
            commit = self._decompose(task, iteration)
            report.commits += [commit] if commit else []
        span.end()
        return report

    def _decompose(self, task: TaskView, iteration: int) -> str | None:
        head, tail = log_sample(self.ws.root / (task.kill_log or ""))
        values = {
            "task_id": task.id,
            "task_name": task.name,
            "task_details": task_details(task.record, {}),
            "kill_reason": task.kill_reason,
            "kill_log": task.kill_log or "(none)",
            "log_head": head,
            "log_tail": tail,
        }
        result = self.ws.run_agent(Stage.DECOMPOSE, iteration, task.id, values)
        self.ws.check_plan(result)
        plan = self.ws.read_plan()
        children = [child.id for child in plan.task_views() if child.parent == task.id]
        if children and plan.find_task(task.id):
            with self.ws.change_plan() as change:
                change.plan.delete(task.id)
        if not children:
            self.ws.journal.event("decompose_failed", item=task.id, log=str(result.log_path))
            self.ws.console.event(f"DECOMPOSE of {task.id} added no subtasks")
        return self.ws.commit(f"ralph(decompose): {task.id} -> {', '.join(children) or 'nothing'}")


def log_sample(path: Path, head_lines: int = 50, tail_lines: int = 100, width: int = 400) -> tuple[str, str]:
    """The first and last lines of a log, each cut to `width`: never the whole log."""
    if not path.is_file():
        return "(no log)", "(no log)"
    with open(path, "rb") as handle:
        head = [handle.readline() for _ in range(head_lines)]
        size = handle.seek(0, 2)
        handle.seek(max(0, size - 64 * 1024))
        tail = handle.read().splitlines()[-tail_lines:]

    def clean(lines: list[bytes]) -> str:
        return "\n".join(line.decode("utf-8", "replace").rstrip()[:width] for line in lines if line)

    return clean(head), clean(tail)
