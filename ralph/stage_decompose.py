"""DECOMPOSE: an agent replaces a killed task with 2-5 smaller ones that name it as parent,
reading only the head and tail of the killed run's log."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ralph import store
from ralph.prompts import task_details

if TYPE_CHECKING:
    from ralph.construct import Loop


class DecomposeStage:
    def __init__(self, loop: Loop):
        self.loop = loop

    def run(self, iteration: int) -> None:
        killed = [t for t in self.loop.tasks() if t.get("kill_reason") and t.get("s", "p") == "p"]
        if not killed:
            return
        span = self.loop.journal.span("stage", stage="DECOMPOSE", iteration=iteration, items=len(killed))
        for task in killed:
            self._decompose(task, iteration)
        span.end()

    def _decompose(self, task: dict, iteration: int) -> None:
        head, tail = _log_sample(self.loop.root / task.get("kill_log", ""))
        values = {
            "task_id": task["id"],
            "task_name": task["name"],
            "task_details": task_details(task, {}),
            "kill_reason": task["kill_reason"],
            "kill_log": task.get("kill_log", "(none)"),
            "log_head": head,
            "log_tail": tail,
        }
        result = self.loop.agent("DECOMPOSE", iteration, task["id"], values)
        self.loop.check_plan(result)
        children = [t["id"] for t in self.loop.read_plan().tasks() if t.get("parent") == task["id"]]
        if children and self.loop.find_task(task["id"]):
            with store.transaction(self.loop.root, commit=False) as change:
                change.plan.delete(task["id"])
        if not children:
            self.loop.journal.event("decompose_failed", item=task["id"], log=str(result.log_path))
            self.loop.console.event(f"DECOMPOSE of {task['id']} added no subtasks")
        self.loop.commit_stage(f"ralph(decompose): {task['id']} -> {', '.join(children) or 'nothing'}")


def _log_sample(path: Path, head_lines: int = 50, tail_lines: int = 100, width: int = 400) -> tuple[str, str]:
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
