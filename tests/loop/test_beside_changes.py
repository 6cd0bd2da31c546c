"""ralph.loop.beside_changes: the plan as it was, with what a person changed beside the run."""

from __future__ import annotations

import json

from ralph.loop.beside_changes import PersonsChanges, with_persons_changes
from ralph.plan.loader import load
from ralph.plan.plan import Plan


def plan(*records: dict) -> Plan:
    return Plan(load(b"".join(json.dumps(r).encode() + b"\n" for r in records)))


def test_only_the_records_the_person_changed_are_taken():
    old = plan(
        {"t": "config", "max_attempts": 3},
        {"t": "task", "id": "t-agent", "name": "Built by the agent"},
        {"t": "task", "id": "t-gone", "name": "Deleted by the person"},
    )
    now = plan(
        {"t": "config", "max_attempts": 7},
        {"t": "task", "id": "t-agent", "name": "Built by the agent", "s": "d"},
        {"t": "task", "id": "t-person", "name": "Added by the person"},
    )

    theirs = with_persons_changes(old, now, frozenset({"config", "t-person", "t-gone"}))

    records = [line.record for line in theirs.doc.records()]
    assert records == [
        {"t": "config", "max_attempts": 7},
        {"t": "task", "id": "t-agent", "name": "Built by the agent"},  # the agent's change is not theirs
        {"t": "task", "id": "t-person", "name": "Added by the person"},
    ]
    assert [line.record for line in old.doc.records()][0] == {"t": "config", "max_attempts": 3}  # untouched


def test_one_command_keeps_its_message_and_several_are_listed():
    one = PersonsChanges(frozenset({"t-a"}), ("ralph: task add t-a A",), 10)
    two = PersonsChanges(frozenset({"t-a", "config"}), ("ralph: task add t-a A", "ralph: config set x"), 20)
    assert one.message() == "ralph: task add t-a A"
    assert two.message().splitlines() == [
        "ralph: 2 changes made beside the run",
        "",
        "ralph: task add t-a A",
        "ralph: config set x",
    ]
