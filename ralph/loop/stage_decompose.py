"""DECOMPOSE: an agent replaces a killed task with 2-5 smaller ones that name it as parent,
reading only the head and tail of the killed run's log."""

from __future__ import annotations

from pathlib import Path

from ralph.loop.agentrun import LOG_DIR
from ralph.loop.prompts import data_block, one_line, task_details
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
        log = self._kill_log(task)
        head, tail = log_sample(log) if log else ("(no log)", "(no log)")
        values = {
            "task_id": task.id,
            "task_name": one_line(task.name),
            "task_details": task_details(task.record, {}),
            "kill_reason": task.kill_reason,
            "kill_log": one_line(task.kill_log) if log else "(none)",
            "log_head": data_block("first lines of the log", head),
            "log_tail": data_block("last lines of the log", tail),
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

    def _kill_log(self, task: TaskView) -> Path | None:
        """The killed run's log, only if it is one of ralph's logs: kill_log comes from the plan, and
        an absolute or ../ path there would put any readable file into a prompt a model reads."""
        if not task.kill_log:
            return None
        logs = (self.ws.root / LOG_DIR).resolve()
        path = (self.ws.root / task.kill_log).resolve()
        if _inside(path, logs):
            return path
        self.ws.journal.event("kill_log_refused", item=task.id, kill_log=task.kill_log)
        return None


def _inside(path: Path, folder: Path) -> bool:
    return path != folder and path.is_relative_to(folder)


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
