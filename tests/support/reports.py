"""Checks of a construct report that a real run's test and its in-process twin both make."""

from __future__ import annotations


def assert_costs_unknown(report: dict, runs: int, task: str) -> None:
    """A --json report of `runs` runs none of whose cost is known: null for the run, each stage
    and the task (never $0 spent), with tokens counted."""
    assert report["cost_usd"] is None and report["unknown_cost_runs"] == runs
    assert report["tokens"] > 0
    assert {stage: row["cost_usd"] for stage, row in report["by_stage"].items()} == {
        "BUILD": None,
        "VERIFY": None,
        "CHECK": None,
        "REVIEW": None,
    }
    assert report["by_task"][task]["cost_usd"] is None


def scope_section_at(lines: list[str], scoped: str) -> int:
    """Where the text report's scope section starts, checked to put the one scoped task's scope
    (work/**, docs/) beside the one file its build wrote (work/<id>.txt)."""
    at = lines.index(
        "scope and files (tasks with a scope 1: files planned and touched 1,"
        " patterns untouched 1 of 2, files unplanned 0):"
    )
    assert lines[at + 1] == (
        f"  {scoped} scope work/**, docs/: planned and touched work/{scoped}.txt;"
        " planned and untouched docs/; touched and unplanned -"
    )
    return at
