"""Ordering work: which task is next, and what priority each pending task deserves.

A dependency counts as satisfied once the task it names is done (built and through the gate) or
accepted. Waiting for acceptance would let BUILD finish only one link of a dependency chain per
iteration; a done task that VERIFY later rejects goes back to pending and its dependents are
verified again anyway.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Set

from ralph.errors import Refused
from ralph.plan.document import Record
from ralph.plan.integrity import cycle_text
from ralph.plan.records import awaits_recheck, is_done, is_pending

PRIORITY_RANK = {"high": 0, "medium": 1, "low": 2, None: 1}


def satisfied_ids(tasks: list[Record], accepted: Set[str]) -> set[str]:
    return set(accepted) | _done_ids(tasks)


def _done_ids(tasks: list[Record]) -> set[str]:
    return {task["id"] for task in tasks if is_done(task)}


def blockers(task: Record, tasks: list[Record], accepted: Set[str]) -> list[str]:
    """Dependencies of `task` that are not yet satisfied."""
    done = _done_ids(tasks)  # the accepted ids beside them, not copied in: there may be 10,000
    return [dep for dep in task.get("deps", []) if dep not in done and dep not in accepted]


def depth_of(tasks: list[Record], of: list[str] | None = None) -> dict[str, int]:
    """Length of the longest dependency chain below each task (0 for a task with no deps): of
    every task, or of the tasks `of` names (and those below them). Iterative: a chain of
    thousands of tasks must not exhaust Python's recursion limit."""
    by_id = {task["id"]: task for task in tasks}
    depth: dict[str, int] = {}
    for start in by_id if of is None else of:
        path, on_path = [start], {start}  # the stack is the path being walked down
        while path:
            task_id = path[-1]
            deps = [d for d in by_id[task_id].get("deps", []) if d in by_id]
            below = next((d for d in deps if d not in depth and d not in on_path), None)  # on_path: a cycle
            if below is not None:
                path.append(below)
                on_path.add(below)
                continue
            depth[task_id] = 1 + max((depth.get(d, 0) for d in deps), default=-1)
            on_path.discard(path.pop())
    return depth


def buildable(tasks: list[Record], accepted: Set[str]) -> list[Record]:
    """Pending tasks ready to build, best first: priority, dependency order, file order."""
    done = _done_ids(tasks)  # the accepted ids beside them, not copied in: there may be 10,000
    ready = [
        (position, task)
        for position, task in enumerate(tasks)
        if is_pending(task)
        and not task.get("kill_reason")
        and all(dep in done or dep in accepted for dep in task.get("deps", []))
    ]
    depth = depth_of(tasks, [task["id"] for _, task in ready])
    ready.sort(key=lambda entry: (PRIORITY_RANK[entry[1].get("priority")], depth[entry[1]["id"]], entry[0]))
    return [task for _, task in ready]


def held_by_questions(tasks: list[Record], questions: list[Record]) -> set[str]:
    """The tasks open questions hold: each task asked about, each task blocked by one of them (a
    family's, waiting with it), and every task that depends on one of those, directly or not."""
    dependents: dict[str, list[str]] = {}
    for task in tasks:
        for dep in task.get("deps", []):
            dependents.setdefault(dep, []).append(task["id"])
    held: set[str] = set()
    asked = {question["id"] for question in questions}
    stack = [question["task"] for question in questions if question.get("task")]
    stack += [task["id"] for task in tasks if task.get("blocked_by") in asked]
    while stack:
        task_id = stack.pop()
        if task_id not in held:
            held.add(task_id)
            stack.extend(dependents.get(task_id, ()))
    return held & {task["id"] for task in tasks}


def only_questions_left(tasks: list[Record], issues: list[Record], questions: list[Record]) -> bool:
    """Whether open questions hold every task left (directly or through dependencies), with no
    issue left (but the cut of a spec check, which waits for the next check: awaits_recheck) and
    no done or killed task: only a person's answers can move it on."""
    if not questions or any(not awaits_recheck(issue) for issue in issues):
        return False
    held = held_by_questions(tasks, questions)
    return all(task["id"] in held and not is_done(task) and not task.get("kill_reason") for task in tasks)


def next_task(tasks: list[Record], accepted: Set[str]) -> Record | None:
    ready = buildable(tasks, accepted)
    return ready[0] if ready else None


# --- prioritize -----------------------------------------------------------------------------

_LARGE = (
    r"\b(refactor|rewrite|redesign|migrat\w*|integrat\w*|architecture|framework|entire|"
    r"all|every|end-to-end|e2e|concurren\w*|parallel|security|performance)\b"
)
_SMALL = r"\b(typo|rename|bump|tweak|constant|flag|option|message|wording|comment|log line)\b"
_LOW = (
    r"\b(docs?|documentation|readme|cleanup|clean up|tidy|polish|nice[- ]to[- ]have|optional|"
    r"cosmetic|changelog|example)\b"
)


@functools.cache
def _words(pattern: str) -> re.Pattern[str]:
    # Compiled on first use: only prioritize needs them, and compiling costs every command ~0.7 ms.
    return re.compile(pattern, re.IGNORECASE)


def complexity(task: Record) -> str:
    """small / medium / large, estimated from the task's words."""
    text, words, criteria = _wording(task)
    if _is_large(text, words, criteria):
        return "large"
    if _words(_SMALL).search(text) or (words <= 12 and criteria <= 1):
        return "small"
    return "medium"


def _wording(task: Record) -> tuple[str, int, int]:
    """A task's text, its number of words and its number of acceptance criteria."""
    accept = task.get("accept") or ""
    text = " ".join(
        [
            task.get("name", ""),
            task.get("notes") or "",
            " ".join(accept) if isinstance(accept, list) else accept,
        ]
    )
    criteria = (
        len(accept) if isinstance(accept, list) else accept.count(";") + accept.count("\n") + bool(accept)
    )
    return text, len(text.split()), criteria


def _is_large(text: str, words: int, criteria: int) -> bool:
    return words > 80 or criteria > 5 or _words(_LARGE).search(text) is not None


def compute_priorities(tasks: list[Record]) -> dict[str, str]:
    """A priority for each task: HIGH for small unblockers and the critical path, LOW for cleanup.

    `tasks` are the pending tasks in scope; the result covers them all, explicit ones unchanged.
    """
    from graphlib import CycleError, TopologicalSorter

    ids = {task["id"] for task in tasks}
    graph = {task["id"]: [d for d in task.get("deps", []) if d in ids] for task in tasks}
    order = list(graph)  # every task after its deps: usually the file's order already
    seen: set[str] = set()
    for task_id in order:
        if not seen.issuperset(graph[task_id]):
            try:
                order = list(TopologicalSorter(graph).static_order())
            except CycleError as exc:
                raise Refused(cycle_text(exc.args[1])) from None
            break
        seen.add(task_id)
    below: dict[str, int] = {}  # the longest chain of deps under each task
    for task_id in order:
        deps = graph[task_id]
        below[task_id] = 1 + max(below[dep] for dep in deps) if deps else 0
    waiting: dict[str, set[str]] = {task_id: set() for task_id in ids}  # the tasks that need it directly
    for task_id, deps in graph.items():
        for dep in deps:
            waiting[dep].add(task_id)
    # Over every task waiting on it, directly or not: how many (counted up to 2, all the rules
    # need), and the longest chain under any of them, so how far the chain through it goes above.
    waiting_count: dict[str, int] = {}
    top: dict[str, int] = {}
    for task_id in reversed(order):
        direct = waiting[task_id]
        if direct:
            waiting_count[task_id] = min(2, len(direct) + sum(waiting_count[w] for w in direct))
            top[task_id] = max(max(below[w], top[w]) for w in direct)
        else:
            waiting_count[task_id], top[task_id] = 0, -1
    above = {task_id: top[task_id] - below[task_id] if waiting[task_id] else 0 for task_id in ids}
    longest = max((below[i] + above[i] for i in ids), default=0)
    result = {}
    for task in tasks:
        task_id = task["id"]
        if task.get("priority") and not task.get("auto_priority"):
            result[task_id] = task["priority"]
            continue
        blocks = waiting_count[task_id]
        on_critical_path = longest > 0 and below[task_id] + above[task_id] == longest and blocks > 0
        # The word searches are the slow part: done only where the answer depends on them.
        if on_critical_path or (blocks >= 2 and not _is_large(*_wording(task))):
            result[task_id] = "high"
        elif blocks == 0 and _words(_LOW).search(f"{task.get('name', '')} {task.get('notes') or ''}"):
            result[task_id] = "low"
        else:
            result[task_id] = "medium"
    return result
