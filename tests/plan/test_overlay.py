"""ralph.plan.overlay: a plan with some records taken from another version, by record key."""

from __future__ import annotations

import json

from ralph.plan.loader import load
from ralph.plan.overlay import records_by_key, with_records_of


def doc(*records: dict):
    return load(b"".join(json.dumps(r).encode() + b"\n" for r in records))


def test_each_record_given_is_added_changed_or_removed_and_the_rest_keep_their_bytes():
    kept = {"t": "task", "id": "t-kept", "name": "Kept", "notes": "as   typed"}
    old = doc({"t": "config", "max_attempts": 3}, kept, {"t": "task", "id": "t-gone", "name": "Gone"})
    raw_kept = old.records()[1].raw

    new = with_records_of(
        old,
        {
            "config": {"t": "config", "max_attempts": 5},
            "t-gone": None,
            "t-new": {"t": "task", "id": "t-new", "name": "New"},
        },
    )

    assert [line.record for line in new.records()] == [
        {"t": "config", "max_attempts": 5},
        kept,
        {"t": "task", "id": "t-new", "name": "New"},
    ]
    assert new.records()[1].raw == raw_kept
    assert [line.record["t"] for line in old.records()] == ["config", "task", "task"]  # a copy


def test_records_by_key_gives_none_for_a_key_the_plan_lacks():
    plan = doc({"t": "spec", "path": "specs/a.md"}, {"t": "task", "id": "t-a", "name": "A"})
    assert records_by_key(plan, frozenset({"spec specs/a.md", "t-a", "t-b"})) == {
        "spec specs/a.md": {"t": "spec", "path": "specs/a.md"},
        "t-a": {"t": "task", "id": "t-a", "name": "A"},
        "t-b": None,
    }
