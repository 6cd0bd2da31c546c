"""Small plans made in memory for the tests of operations and their replay (tests/plan/test_ops.py,
tests/plan/test_replay.py)."""

from __future__ import annotations

import json
from collections.abc import Callable

from ralph.plan.document import Record
from ralph.plan.loader import load
from ralph.plan.ops import Op, made_by_ops
from ralph.plan.plan import Plan

T0 = "2026-01-01T10:00:00+00:00"


def data_of(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def plan_of(data: bytes) -> Plan:
    return Plan(load(data))


def task_in(plan: Plan, task_id: str) -> Record:
    """The task's record, which the test knows is there (Plan.find_task, with None a failure)."""
    record = plan.find_task(task_id)
    assert record is not None, f"{task_id} is not a task of the plan"
    return record


def ops_made(plan: Plan) -> list[Op]:
    """The operations that made the plan's changes, which the test knows it made (made_by_ops)."""
    ops = made_by_ops(plan)
    assert ops is not None, "the plan records no operations"
    return ops


def task(task_id: str, **fields: object) -> dict:
    return {"t": "task", "id": f"t-{task_id}", "name": task_id.upper(), "s": "p", **fields}


BASE = data_of({"t": "config"}, task("a"), task("b"), task("c", deps=["t-b"]))


def records_of(data: bytes, field: str, value: str) -> list[dict]:
    return [line.record for line in plan_of(data).doc.records() if line.record.get(field) == value]


def ops_of(data: bytes, change: Callable[[Plan], object]) -> list[Op]:
    plan = plan_of(data)
    change(plan)
    return ops_made(plan)


def decomposed(data: bytes, task_id: str, parts: list[str]) -> bytes:
    """`data` with `task_id` decomposed into `parts` (as DECOMPOSE does it)."""
    plan = plan_of(data)
    plan.add_tasks([{"id": part, "name": part, "parent": task_id} for part in parts])
    plan.record_decomposition(task_id, parts)
    return plan.doc.to_bytes()


# Two tasks set aside for DECOMPOSE: one killed for time (the loop's words, never VERIFY's), one
# rejected by VERIFY until it was set aside (its reasons, then the loop's).
SET_ASIDE_TIMED_OUT = "the agent run hit its time limit"
SET_ASIDE_REJECTED_TOO_OFTEN = "VERIFY rejected it 2 times; split it into smaller tasks"


def set_aside_for_decompose() -> list[dict]:
    timed_out, rejected_too_often = SET_ASIDE_TIMED_OUT, SET_ASIDE_REJECTED_TOO_OFTEN
    return [
        {"t": "task", "id": "t-slow00", "name": "Slow", "kill_reason": "timeout", "reject_reason": timed_out},
        {"t": "reject", "id": "t-slow00", "reason": timed_out, "kill_reason": "timeout"},
        {
            "t": "task",
            "id": "t-picky0",
            "name": "Picky",
            "attempts": 2,
            "kill_reason": "doom_loop",
            "reject_reason": rejected_too_often,
        },
        {"t": "reject", "id": "t-picky0", "reason": "the sum is off by one"},
        {"t": "reject", "id": "t-picky0", "reason": "the sum is still off by one"},
        {"t": "reject", "id": "t-picky0", "reason": rejected_too_often, "kill_reason": "doom_loop"},
    ]
