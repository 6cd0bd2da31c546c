"""Checks that span records: unique ids, known dependencies, no cycles, single config/state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ralph.errors import Problem

if TYPE_CHECKING:
    from ralph.plan.document import Document, RecordLine

SINGLETONS = ("config", "state")
SHOWN_OF_A_CYCLE = 8


def record_key(record: dict[str, Any]) -> str:
    """What a record is, whatever its fields say: a task or issue (or another record with an id)
    by id, a spec by path, config and state by type."""
    if record.get("t") == "spec":
        return f"spec {record.get('path')}"
    if record.get("t") in SINGLETONS or "id" not in record:
        return str(record.get("t"))
    return str(record["id"])


def cycle_text(cycle: list[str]) -> str:
    """A dependency cycle in words, short even when it runs through thousands of tasks."""
    if len(cycle) <= 2 * SHOWN_OF_A_CYCLE:
        return "dependency cycle: " + " -> ".join(cycle)
    head, tail = cycle[:SHOWN_OF_A_CYCLE], cycle[-SHOWN_OF_A_CYCLE:]
    hidden = len(cycle) - 2 * SHOWN_OF_A_CYCLE
    return f"dependency cycle of {len(cycle) - 1} tasks: {' -> '.join(head)} -> ... ({hidden} more) -> " + (
        " -> ".join(tail)
    )


def integrity_problems(doc: Document) -> list[Problem]:
    """Every rule across records broken in `doc`, by line. Read off the lines' types and heads (type
    and id) in passes of C: only the few live records are walked, and the tasks' records made."""
    problems: list[Problem] = []
    number = doc.number
    first_line: dict[str, int] = {}  # live task/issue id -> its index
    live = sorted(index for kind in (*SINGLETONS, "task", "issue") for index in doc.positions(kind))
    singletons: dict[str, int] = {}
    tasks: list[int] = []
    for index in live:
        kind, ident = doc.head(index)  # type: ignore[misc]  # a record's line has a head
        if kind in SINGLETONS:
            if kind in singletons:
                first = number(singletons[kind])
                message = f"a second {kind} record (the first is on line {first}); keep one"
                problems.append(Problem(doc.name, number(index), message))
            singletons.setdefault(kind, index)
            continue
        if ident in first_line:
            message = f"duplicate id {ident} (also on line {number(first_line[ident])})"
            problems.append(Problem(doc.name, number(index), message))
        first_line.setdefault(ident, index)  # type: ignore[arg-type]  # a task or issue has one
        if kind == "task":
            tasks.append(index)
    accepted = doc.accepted_ids()

    def accepted_on(task_id: str) -> int:
        return number(doc.heads().index(("accept", task_id)))  # a problem's line: all heads read then

    task_lines = [doc.record_line(index) for index in tasks]
    for line in task_lines:
        task_id = line.record["id"]
        if task_id in accepted:
            message = f"task {task_id} is also accepted (line {accepted_on(task_id)})"
            problems.append(Problem(doc.name, line.number, message))
        for dep in line.record.get("deps", []):
            if dep == task_id:
                problems.append(Problem(doc.name, line.number, f"task {task_id} depends on itself"))
            elif dep not in accepted and not (dep in first_line and dep.startswith("t-")):
                problems.append(
                    Problem(doc.name, line.number, f"task {task_id} depends on unknown task {dep}")
                )
    if not problems:
        problems.extend(_cycle_problems(doc.name, task_lines))
    return sorted(problems, key=lambda p: p.line)


def _cycle_problems(name: str, tasks: list[RecordLine]) -> list[Problem]:
    position = {line.record["id"]: index for index, line in enumerate(tasks)}
    if all(
        position.get(dep, -1) < index
        for index, line in enumerate(tasks)
        for dep in line.record.get("deps", ())
    ):
        return []  # the usual case: every dependency is on an earlier line (or accepted), so no cycle
    from graphlib import CycleError, TopologicalSorter

    graph = {line.record["id"]: line.record.get("deps", []) for line in tasks}
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        cycle = exc.args[1]
        line_of = {line.record["id"]: line.number for line in tasks}
        first = min(line_of[task_id] for task_id in cycle[:-1])
        return [Problem(name, first, cycle_text(cycle))]
    return []
