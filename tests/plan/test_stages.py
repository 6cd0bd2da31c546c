"""The stage comes from the plan alone: DECOMPOSE > INVESTIGATE > BUILD > VERIFY > COMPLETE."""

from __future__ import annotations

import json

import pytest

from ralph.plan.loader import load
from ralph.plan.plan import Plan
from ralph.plan.stages import stage_of

PENDING = {"t": "task", "id": "t-p", "name": "p"}
DONE = {"t": "task", "id": "t-d", "name": "d", "s": "d"}
KILLED = {"t": "task", "id": "t-k", "name": "k", "kill_reason": "context_limit"}
KILLED_DONE = {"t": "task", "id": "t-kd", "name": "kd", "s": "d", "kill_reason": "timeout"}
ISSUE = {"t": "issue", "id": "i-1", "text": "?"}


@pytest.mark.parametrize(
    "tasks, issues, stage",
    [
        ([KILLED, PENDING, DONE], [ISSUE], "DECOMPOSE"),
        ([KILLED], [], "DECOMPOSE"),
        ([PENDING, DONE], [ISSUE], "INVESTIGATE"),
        ([], [ISSUE], "INVESTIGATE"),
        ([KILLED_DONE], [ISSUE], "INVESTIGATE"),  # a done task's old kill_reason does not count
        ([DONE, PENDING], [], "BUILD"),
        ([{"t": "task", "id": "t-x", "name": "no s"}], [], "BUILD"),
        ([KILLED_DONE, PENDING], [], "BUILD"),
        ([DONE], [], "VERIFY"),
        ([DONE, KILLED_DONE], [], "VERIFY"),
        ([], [], "COMPLETE"),
    ],
)
def test_stage_precedence(tasks, issues, stage):
    assert stage_of(tasks, issues) == stage


def test_the_plan_reads_its_stage_from_its_records():
    lines = [PENDING, DONE, {"t": "accept", "id": "t-old"}, {"t": "someday", "x": 1}]
    plan = Plan(load(b"".join(json.dumps(r).encode() + b"\n" for r in lines)))
    assert plan.stage() == "BUILD"
    plan.done("t-p")
    assert plan.stage() == "VERIFY"
    plan.add_issue("why?")
    assert plan.stage() == "INVESTIGATE"
    plan.resolve_issue(plan.issues()[0]["id"])
    plan.accept(None)
    assert plan.stage() == "COMPLETE"
