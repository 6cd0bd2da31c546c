"""The plan's one config record and one state record."""

from __future__ import annotations

from typing import Any

from ralph.errors import Refused
from ralph.plan.document import Record
from ralph.plan.reading import PlanReader


def set_config(plan: PlanReader, key: str, value: object) -> Record:
    """Set one key of the config record (added when there is none); other keys keep theirs."""
    found = plan.of("config")
    if not found:
        return plan.doc.append({"t": "config", key: value}).record
    line = found[0]
    if line.record.get(key, object()) != value:
        line.record[key] = value
        plan.doc.rewrite(line)
    return line.record


def unset_config(plan: PlanReader, key: str) -> Record:
    """Remove one key from the config record; a record left with no key goes."""
    found = plan.of("config")
    if not found or key not in found[0].record:
        raise Refused(f"config key {key} is not set in plan.jsonl")
    line = found[0]
    del line.record[key]
    if set(line.record) == {"t"}:
        plan.doc.remove(line)
    else:
        plan.doc.rewrite(line)
    return line.record


def update_state(plan: PlanReader, **fields: object) -> Record:
    found = plan.of("state")
    if found:
        line = found[0]
        if all(line.record.get(key) == value for key, value in fields.items()):
            return line.record
        line.record.update(fields)
        plan.doc.rewrite(line)
        return line.record
    return plan.doc.append({"t": "state", **fields}).record


def add_spending(plan: PlanReader, by_stage: dict[str, dict[str, Any]]) -> Record:
    """Add runs' spending ({stage: {runs, tokens, cost_usd, unknown_runs}}) to the state
    record's totals: what every run so far spent, per stage."""
    spent = {stage: dict(row) for stage, row in plan.state().get("spent", {}).items()}
    for stage, row in by_stage.items():
        total = spent.setdefault(stage, {"runs": 0, "tokens": 0, "cost_usd": 0.0, "unknown_runs": 0})
        for key in ("runs", "tokens", "unknown_runs"):
            total[key] = total.get(key, 0) + row.get(key, 0)
        total["cost_usd"] = round(total.get("cost_usd", 0.0) + row.get("cost_usd", 0.0), 6)
    return update_state(plan, spent=spent)
