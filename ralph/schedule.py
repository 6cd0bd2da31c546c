"""Ordering work: which task is next, and what priority each pending task deserves.

A dependency counts as satisfied once the task it names is done (built and through the gate) or
accepted. Waiting for acceptance would let BUILD finish only one link of a dependency chain per
iteration; a done task that VERIFY later rejects goes back to pending and its dependents are
verified again anyway.
"""

from __future__ import annotations

import re

PRIORITY_RANK = {"high": 0, "medium": 1, "low": 2, None: 1}


def satisfied_ids(tasks: list[dict], accepted: set[str]) -> set[str]:
    return accepted | {task["id"] for task in tasks if task.get("s") == "d"}


def blockers(task: dict, tasks: list[dict], accepted: set[str]) -> list[str]:
    """Dependencies of `task` that are not yet satisfied."""
    done = satisfied_ids(tasks, accepted)
    return [dep for dep in task.get("deps", []) if dep not in done]


def depth_of(tasks: list[dict]) -> dict[str, int]:
    """Length of the longest dependency chain below each task (0 for a task with no deps)."""
    by_id = {task["id"]: task for task in tasks}
    depth: dict[str, int] = {}

    def visit(task_id: str) -> int:
        if task_id not in depth:
            depth[task_id] = 0  # guards against cycles; the loader refuses them anyway
            deps = [d for d in by_id[task_id].get("deps", []) if d in by_id]
            depth[task_id] = 1 + max(map(visit, deps)) if deps else 0
        return depth[task_id]

    for task_id in by_id:
        visit(task_id)
    return depth


def buildable(tasks: list[dict], accepted: set[str]) -> list[dict]:
    """Pending tasks ready to build, best first: priority, dependency order, file order."""
    done = satisfied_ids(tasks, accepted)
    depth = depth_of(tasks)
    ready = [
        (PRIORITY_RANK[task.get("priority")], depth[task["id"]], position, task)
        for position, task in enumerate(tasks)
        if task.get("s", "p") == "p"
        and not task.get("kill_reason")
        and all(dep in done for dep in task.get("deps", []))
    ]
    ready.sort(key=lambda entry: entry[:3])
    return [entry[3] for entry in ready]


def next_task(tasks: list[dict], accepted: set[str]) -> dict | None:
    ready = buildable(tasks, accepted)
    return ready[0] if ready else None


# --- prioritize -----------------------------------------------------------------------------

_LARGE_WORDS = re.compile(
    r"\b(refactor|rewrite|redesign|migrat\w*|integrat\w*|architecture|framework|entire|"
    r"all|every|end-to-end|e2e|concurren\w*|parallel|security|performance)\b",
    re.IGNORECASE,
)
_SMALL_WORDS = re.compile(
    r"\b(typo|rename|bump|tweak|constant|flag|option|message|wording|comment|log line)\b", re.IGNORECASE
)
_LOW_WORDS = re.compile(
    r"\b(docs?|documentation|readme|cleanup|clean up|tidy|polish|nice[- ]to[- ]have|optional|"
    r"cosmetic|changelog|example)\b",
    re.IGNORECASE,
)


def complexity(task: dict) -> str:
    """small / medium / large, estimated from the task's words."""
    accept = task.get("accept") or ""
    text = " ".join(
        [
            task.get("name", ""),
            task.get("notes") or "",
            " ".join(accept) if isinstance(accept, list) else accept,
        ]
    )
    words = len(text.split())
    criteria = (
        len(accept) if isinstance(accept, list) else accept.count(";") + accept.count("\n") + bool(accept)
    )
    if _LARGE_WORDS.search(text) or words > 80 or criteria > 5:
        return "large"
    if _SMALL_WORDS.search(text) or (words <= 12 and criteria <= 1):
        return "small"
    return "medium"


def dependents(tasks: list[dict]) -> dict[str, set[str]]:
    """For each task, every task that waits on it, directly or transitively."""
    direct: dict[str, set[str]] = {task["id"]: set() for task in tasks}
    for task in tasks:
        for dep in task.get("deps", []):
            if dep in direct:
                direct[dep].add(task["id"])
    closure: dict[str, set[str]] = {}

    def visit(task_id: str) -> set[str]:
        if task_id not in closure:
            closure[task_id] = set()
            found = set(direct[task_id])
            for child in direct[task_id]:
                found |= visit(child)
            closure[task_id] = found
        return closure[task_id]

    for task_id in direct:
        visit(task_id)
    return closure


def compute_priorities(tasks: list[dict]) -> dict[str, str]:
    """A priority for each task: HIGH for small unblockers and the critical path, LOW for cleanup.

    `tasks` are the pending tasks in scope; the result covers them all, explicit ones unchanged.
    """
    from graphlib import TopologicalSorter

    from ralph.errors import Refused

    ids = {task["id"] for task in tasks}
    graph = {task["id"]: [d for d in task.get("deps", []) if d in ids] for task in tasks}
    try:
        TopologicalSorter(graph).prepare()
    except Exception as exc:  # graphlib.CycleError
        raise Refused("dependency cycle: " + " -> ".join(exc.args[1])) from None
    waiting = dependents(tasks)
    below = depth_of(tasks)
    above = {
        task_id: max((below[w] - below[task_id] for w in waiting[task_id]), default=0) for task_id in ids
    }
    longest = max((below[i] + above[i] for i in ids), default=0)
    result = {}
    for task in tasks:
        task_id = task["id"]
        if task.get("priority") and not task.get("auto_priority"):
            result[task_id] = task["priority"]
            continue
        size, blocks = complexity(task), len(waiting[task_id])
        on_critical_path = longest > 0 and below[task_id] + above[task_id] == longest and blocks > 0
        text = f"{task.get('name', '')} {task.get('notes') or ''}"
        if (blocks >= 2 and size != "large") or on_critical_path:
            result[task_id] = "high"
        elif blocks == 0 and _LOW_WORDS.search(text):
            result[task_id] = "low"
        else:
            result[task_id] = "medium"
    return result
