"""The checks that span records (ralph/plan/integrity.py), on documents parsed from bytes. Each
kind of problem in a real file is in tests/data/malformed (test_malformed.py); here, how a cycle
is told and where it is reported."""

from __future__ import annotations

import json

from ralph.plan.integrity import SHOWN_OF_A_CYCLE, cycle_text
from ralph.plan.loader import parse


def plan(*records: dict) -> bytes:
    return "".join(json.dumps(record) + "\n" for record in records).encode()


def task(task_id: str, *deps: str) -> dict:
    return {"t": "task", "id": task_id, "name": task_id, "deps": list(deps)}


def test_a_short_cycle_is_told_in_full():
    assert cycle_text(["t-a", "t-b", "t-a"]) == "dependency cycle: t-a -> t-b -> t-a"


def test_a_long_cycle_is_told_by_its_ends_and_how_many_are_left_out():
    cycle = [f"t-{n:06d}" for n in range(1000)] + ["t-000000"]
    text = cycle_text(cycle)
    hidden = len(cycle) - 2 * SHOWN_OF_A_CYCLE
    assert text.startswith("dependency cycle of 1000 tasks: t-000000 -> t-000001 -> ")
    assert f" -> ... ({hidden} more) -> " in text and text.endswith("t-000999 -> t-000000")
    assert len(text) < 400


def test_a_cycle_is_one_problem_on_the_first_line_of_its_tasks():
    records = (task("t-one", "t-three"), task("t-two", "t-one"), task("t-three", "t-two"))
    _, problems = parse(plan({"t": "config"}, *records))
    ((problem,),) = [problems]
    assert problem.line == 2 and problem.message.startswith("dependency cycle: ")
    walk = problem.message.removeprefix("dependency cycle: ").split(" -> ")
    assert walk[0] == walk[-1] and sorted(walk[:-1]) == ["t-one", "t-three", "t-two"]


def test_dependencies_on_earlier_and_accepted_tasks_are_no_problem():
    accepted = {"t": "accept", "id": "t-old", "name": "old"}
    _, problems = parse(plan(accepted, task("t-one", "t-old"), task("t-two", "t-one", "t-old")))
    assert problems == []


def test_a_second_config_record_is_reported_on_its_line_naming_the_first():
    _, problems = parse(plan({"t": "config"}, task("t-one"), {"t": "config"}))
    assert [(p.line, p.message) for p in problems] == [
        (3, "a second config record (the first is on line 1); keep one")
    ]
