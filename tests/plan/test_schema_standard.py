"""`ralph schema` under a standard JSON Schema validator (the jsonschema package): it checks each
record type fully and agrees with `ralph check` on a corpus of valid and broken records."""

from __future__ import annotations

import json

import jsonschema
import pytest

from ralph.plan.loader import parse
from ralph.plan.models import json_schema

VALID = [
    {"t": "task", "id": "t-aaaaaa", "name": "x"},
    {"t": "task", "id": "t-aaaaaa", "name": "x", "s": "d", "priority": "high", "extra": 1},
    {"t": "issue", "id": "i-aaaaaa", "text": "why?"},
    {"t": "accept", "id": "t-aaaaaa"},
    {"t": "reject", "id": "t-aaaaaa", "reason": "no"},
    {"t": "spec", "path": "specs/x.md"},
    {"t": "config", "gate": "make check"},
    {"t": "config", "gate": ["make", "check"]},
    {"t": "config", "timeout_ms": 300000, "gate_timeout_ms": "10m", "max_wait_ms": "1500ms"},
    {"t": "config", "timeout_ms": "300000", "agent_cmd": "python agent.py", "agent_args": ["-v"]},
    {"t": "state", "iteration": 2},
    {"t": "something-new", "anything": [1]},  # an unknown type is kept as it is
]
BROKEN = [
    {"t": "task", "id": "t-aaaaaa"},  # no name
    {"t": "task", "id": "t-aaaaaa", "name": ""},
    {"t": "task", "id": "x-aaaaaa", "name": "x"},
    {"t": "task", "id": "t-aaaaaa", "name": "x", "s": "q"},
    {"t": "task", "id": "t-aaaaaa", "name": "x", "deps": "t-bbbbbb"},
    {"t": "task", "id": "t-aaaaaa", "name": "x", "attempts": -1},
    {"t": "issue", "id": "i-aaaaaa"},
    {"t": "reject", "id": "t-aaaaaa"},
    {"t": "config", "gate": 3},
    {"t": "config", "timeout_ms": "5 minutes"},
    {"t": "config", "timeout_ms": "0s"},
    {"t": "config", "timeout_ms": 0},
    {"t": "config", "agent_cmd": ["python", 3]},
    {"t": "state", "iteration": -1},
    {"id": "t-aaaaaa", "name": "x"},  # no type
]


def ralph_accepts(record: dict) -> bool:
    _, problems = parse(json.dumps(record).encode() + b"\n")
    return not problems


@pytest.mark.parametrize("record", VALID + BROKEN, ids=lambda record: json.dumps(record)[:60])
def test_a_standard_validator_and_ralph_check_agree(record):
    valid = jsonschema.Draft202012Validator(json_schema()).is_valid(record)
    assert valid == ralph_accepts(record) == (record in VALID)


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(json_schema())
