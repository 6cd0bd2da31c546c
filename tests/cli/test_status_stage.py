"""`ralph status` and `ralph query stage` say what is true of the stage: an empty plan has nothing
planned yet (PLAN comes first), a run planning now is in PLAN, and only a plan whose tasks are all
accepted is COMPLETE."""

from __future__ import annotations

import fcntl
import json
import os

from tests.support.cli import Ralph


def stage_line(ralph: Ralph) -> str:
    return ralph("status").stdout.splitlines()[1]


def test_an_empty_plan_has_nothing_planned_and_an_accepted_one_is_complete(ralph: Ralph):
    assert stage_line(ralph) == (
        "stage PLAN: no spec planned yet (`ralph construct SPEC` plans one first), iteration 0"
    )
    summary = json.loads(ralph("status", "--json").stdout)
    assert (summary["stage"], summary["planned"]) == ("PLAN", False)
    assert ralph("query", "stage").stdout == "PLAN\n"  # the same answer a script gets
    ralph("task", "add", '{"id": "t-aaaaaa", "name": "x"}')
    assert stage_line(ralph).startswith("stage BUILD")
    assert ralph("query", "stage").stdout == "BUILD\n"
    ralph("task", "done", "t-aaaaaa")
    ralph("task", "accept", "t-aaaaaa")
    assert stage_line(ralph) == "stage COMPLETE, iteration 0"
    assert json.loads(ralph("status", "--json").stdout)["planned"] is True
    assert ralph("query", "stage").stdout == "COMPLETE\n"


def test_a_run_planning_now_is_in_plan(ralph: Ralph):
    """The lock held as a running construct holds it, its journal in PLAN (after an earlier spec
    was accepted: the plan alone would say COMPLETE)."""
    ralph("task", "add", '{"id": "t-aaaaaa", "name": "x"}')
    ralph("task", "done", "t-aaaaaa")
    ralph("task", "accept", "t-aaaaaa")
    journal = ralph.root / "build" / "ralph-logs" / "events.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    events = [
        {"ts": "2026-11-23T13:00:01.000+00:00", "event": "construct_begin", "spec": "specs/next.md"},
        {"ts": "2026-11-23T13:00:02.000+00:00", "event": "stage_begin", "stage": "PLAN"},
        {"ts": "2026-11-23T13:00:02.000+00:00", "event": "agent_begin", "stage": "PLAN", "item": None},
    ]
    journal.write_text("".join(json.dumps(event) + "\n" for event in events))
    with open(ralph.root / ".git" / "ralph-construct.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write(f"pid {os.getpid()}, since 2026-11-23 13:00:00 UTC")
        lock.flush()
        assert stage_line(ralph) == "stage PLAN: planning now, iteration 0"
        assert json.loads(ralph("status", "--json").stdout)["stage"] == "PLAN"
    assert stage_line(ralph) == "stage COMPLETE, iteration 0"
