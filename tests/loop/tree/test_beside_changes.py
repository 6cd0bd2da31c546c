"""ralph.loop.tree.beside_changes: the plan as it was, with what a person changed beside the run."""

from __future__ import annotations

import json

from ralph.loop.tree.beside_changes import PersonsChanges, with_persons_changes
from ralph.plan.loader import load
from ralph.plan.plan import Plan
from ralph.store.beside import Entry


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

    persons = PersonsChanges((Entry("ralph: x", ("config", "t-person", "t-gone"), 1),), 1)
    theirs = with_persons_changes(old, now, persons)  # no lines kept (an older ledger): as now

    records = [line.record for line in theirs.doc.records()]
    assert records == [
        {"t": "config", "max_attempts": 7},
        {"t": "task", "id": "t-agent", "name": "Built by the agent"},  # the agent's change is not theirs
        {"t": "task", "id": "t-person", "name": "Added by the person"},
    ]
    assert [line.record for line in old.doc.records()][0] == {"t": "config", "max_attempts": 3}  # untouched


def test_one_command_keeps_its_message_and_several_are_listed():
    add, config = Entry("ralph: task add t-a A", ("t-a",), 1), Entry("ralph: config set x", ("config",), 1)
    one = PersonsChanges((add,), 10)
    two = PersonsChanges((add, config), 20)
    assert one.message() == "ralph: task add t-a A"
    assert two.message().splitlines() == [
        "ralph: 2 changes made beside the run",
        "",
        "ralph: task add t-a A",
        "ralph: config set x",
    ]


def test_a_persons_record_is_taken_as_their_command_left_it_not_as_an_agent_changed_it_since():
    """A person added C needing A while DECOMPOSE split A: the agent's delete of A moved C onto A's
    parts, which HEAD does not have. Theirs is C as they wrote it; the move is the agent's."""
    old = plan({"t": "task", "id": "t-a", "name": "A"})
    written = {"t": "task", "id": "t-c", "name": "C", "deps": ["t-a"]}
    now = plan(
        {"t": "task", "id": "t-a1", "name": "A part 1", "parent": "t-a"},
        {"t": "task", "id": "t-c", "name": "C", "deps": ["t-a1"]},
    )
    persons = PersonsChanges(
        (Entry("ralph: task add t-c C", ("t-c",), 1, records={"t-c": json.dumps(written)}),), 1
    )

    theirs = with_persons_changes(old, now, persons)

    assert [line.record for line in theirs.doc.records()] == [
        {"t": "task", "id": "t-a", "name": "A"},
        written,
    ]
    assert theirs.doc.to_bytes().count(b"t-a1") == 0
