"""Small plans made in memory for the tests of operations and their replay (tests/plan/test_ops.py,
tests/plan/test_replay.py)."""

from __future__ import annotations

import json

from ralph.plan.loader import load
from ralph.plan.ops import made_by_ops
from ralph.plan.plan import Plan

T0 = "2026-01-01T10:00:00+00:00"


def data_of(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def plan_of(data: bytes) -> Plan:
    return Plan(load(data))


def task(task_id: str, **fields) -> dict:
    return {"t": "task", "id": f"t-{task_id}", "name": task_id.upper(), "s": "p", **fields}


BASE = data_of({"t": "config"}, task("a"), task("b"), task("c", deps=["t-b"]))


def records_of(data: bytes, field: str, value: str) -> list[dict]:
    return [line.record for line in plan_of(data).doc.records() if line.record.get(field) == value]


def ops_of(data: bytes, change) -> list[dict]:
    plan = plan_of(data)
    change(plan)
    ops = made_by_ops(plan)
    assert ops is not None
    return ops


def decomposed(data: bytes, task_id: str, parts: list[str]) -> bytes:
    """`data` with `task_id` decomposed into `parts` (as DECOMPOSE does it)."""
    plan = plan_of(data)
    plan.add_tasks([{"id": part, "name": part, "parent": task_id} for part in parts])
    plan.record_decomposition(task_id, parts)
    return plan.doc.to_bytes()
