"""Which task is next: dependencies satisfied by done or accepted tasks; priority, then dependency
depth, then file order; killed tasks wait for DECOMPOSE."""

from __future__ import annotations

import pytest

from ralph.errors import Refused
from ralph.plan import schedule
from tests.support.present import present


def task(task_id: str, **fields) -> dict:
    return {"t": "task", "id": task_id, "name": fields.pop("name", task_id), **fields}


def ids(tasks: list[dict]) -> list[str]:
    return [t["id"] for t in tasks]


def test_a_dependency_is_satisfied_by_a_done_or_accepted_task_only():
    tasks = [
        task("t-done", s="d"),
        task("t-pending"),
        task("t-needs-done", deps=["t-done"]),
        task("t-needs-accepted", deps=["t-acc"]),
        task("t-needs-pending", deps=["t-pending"]),
        task("t-needs-both", deps=["t-done", "t-pending"]),
    ]
    # (t-acc is no longer a task line, so t-needs-accepted has depth 0, t-needs-done depth 1)
    assert ids(schedule.buildable(tasks, {"t-acc"})) == ["t-pending", "t-needs-accepted", "t-needs-done"]
    assert ids(schedule.buildable(tasks, set())) == ["t-pending", "t-needs-done"]
    assert schedule.blockers(tasks[5], tasks, {"t-acc"}) == ["t-pending"]
    assert schedule.blockers(tasks[3], tasks, set()) == ["t-acc"]
    assert schedule.satisfied_ids(tasks, {"t-acc"}) == {"t-acc", "t-done"}


def test_priority_comes_first():
    tasks = [task("t-low", priority="low"), task("t-none"), task("t-high", priority="high")]
    tasks.append(task("t-medium", priority="medium"))
    assert ids(schedule.buildable(tasks, set())) == ["t-high", "t-none", "t-medium", "t-low"]


def test_within_a_priority_shallower_dependency_depth_comes_first():
    tasks = [
        task("t-base", s="d"),
        task("t-mid", s="d", deps=["t-base"]),
        task("t-deep", deps=["t-mid"]),  # depth 2
        task("t-shallow", deps=["t-base"]),  # depth 1
        task("t-free"),  # depth 0
        task("t-deep-high", deps=["t-mid"], priority="high"),
    ]
    assert ids(schedule.buildable(tasks, set())) == ["t-deep-high", "t-free", "t-shallow", "t-deep"]


def test_ties_keep_file_order():
    tasks = [task("t-c"), task("t-a"), task("t-b")]
    assert ids(schedule.buildable(tasks, set())) == ["t-c", "t-a", "t-b"]
    assert present(schedule.next_task(tasks, set()))["id"] == "t-c"


def test_done_and_killed_tasks_are_not_buildable():
    tasks = [
        task("t-done", s="d"),
        task("t-killed", kill_reason="timeout", priority="high"),
        task("t-ok", priority="low"),
    ]
    assert ids(schedule.buildable(tasks, set())) == ["t-ok"]
    assert schedule.next_task([tasks[0], tasks[1]], set()) is None


def test_depth_counts_the_longest_chain_and_ignores_unknown_deps():
    tasks = [
        task("t-a"),
        task("t-b", deps=["t-a"]),
        task("t-c", deps=["t-a", "t-b", "t-accepted"]),
    ]
    assert schedule.depth_of(tasks) == {"t-a": 0, "t-b": 1, "t-c": 2}


@pytest.mark.parametrize(
    "fields, size",
    [
        ({"name": "Fix typo"}, "small"),
        ({"name": "Refactor the storage layer"}, "large"),
        ({"name": "x", "accept": ["a", "b", "c", "d", "e", "f"]}, "large"),
        ({"name": " ".join(["word"] * 81)}, "large"),
        ({"name": "Add a login form with validation and clear error states for the users of it"}, "medium"),
    ],
)
def test_complexity(fields, size):
    assert schedule.complexity(task("t-a", **fields)) == size


def test_priorities_put_the_critical_path_high_and_cleanup_low():
    tasks = [
        task("t-root", name="Create the schema"),
        task("t-mid", name="Write the model", deps=["t-root"]),
        task("t-top", name="Serve the model", deps=["t-mid"]),
        task("t-readme", name="Update the README"),
        task("t-side", name="Add a login form with validation and error states for users"),
    ]
    assert schedule.compute_priorities(tasks) == {
        "t-root": "high",
        "t-mid": "high",
        "t-top": "medium",
        "t-readme": "low",
        "t-side": "medium",
    }


def test_a_small_task_blocking_two_is_high_but_a_large_one_is_not():
    tasks = [
        task("t-small", name="Add the config flag"),
        task("t-big", name="Rewrite the entire storage architecture"),
        task("t-u1", name="u1", deps=["t-small", "t-big"]),
        task("t-u2", name="u2", deps=["t-small", "t-big"]),
        task("t-x", name="x", deps=["t-u1"]),
        task("t-y", name="y", deps=["t-x"]),
        task("t-z", name="z", deps=["t-y"]),
        task("t-long", name="long", deps=["t-z"]),
    ]
    result = schedule.compute_priorities(tasks)
    assert result["t-small"] == "high"
    assert result["t-big"] == "high"  # on the critical path, so high whatever its size
    off_path = [t for t in tasks if t["id"] in ("t-small", "t-big", "t-u1", "t-u2")]
    off_path += [task("t-long1", deps=["t-small"]), task("t-long2", deps=["t-long1"])]
    result = schedule.compute_priorities(off_path)
    assert result["t-small"] == "high"
    assert result["t-big"] == "medium"


def test_explicit_priorities_are_kept_and_auto_ones_recomputed():
    tasks = [
        task("t-a", name="Update the docs", priority="high"),
        task("t-b", name="Update the docs", priority="high", auto_priority=True),
    ]
    assert schedule.compute_priorities(tasks) == {"t-a": "high", "t-b": "low"}


def test_priorities_refuse_a_cycle():
    tasks = [task("t-a", deps=["t-c"]), task("t-b", deps=["t-a"]), task("t-c", deps=["t-b"])]
    with pytest.raises(Refused, match="dependency cycle"):
        schedule.compute_priorities(tasks)
