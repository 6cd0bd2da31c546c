"""`ralph schema` under a standard JSON Schema validator (the jsonschema package): it checks each
record type fully and agrees with `ralph check` on a corpus of valid and broken records, and on
records generated from the schema's own definitions."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ralph.plan.loader import parse_lines
from ralph.plan.models import json_schema
from tests.support.plan_records import KINDS, any_record, records

VALID = [
    {"t": "task", "id": "t-aaaaaa", "name": "x"},
    {"t": "task", "id": "t-aaaaaa", "name": "x", "s": "d", "priority": "high", "x-extra": 1},
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
    {"t": "task", "id": "t-aaaaaa", "name": "x", "acept": "y"},  # a typo, not a field of ralph or yours
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
    """Whether `ralph check` accepts the record as a line (the rules across records aside: a
    generated task may well depend on itself)."""
    _, problems = parse_lines(json.dumps(record).encode() + b"\n")
    return not problems


# One validator for the module: building the schema and compiling it took 60 ms per test.
STANDARD = jsonschema.Draft202012Validator(json_schema())


@pytest.mark.parametrize("record", VALID + BROKEN, ids=lambda record: json.dumps(record)[:60])
def test_a_standard_validator_and_ralph_check_agree(record):
    valid = STANDARD.is_valid(record)
    assert valid == ralph_accepts(record) == (record in VALID)


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(json_schema())


# --- generated records (tests/support/plan_records.py: from plan.schema.json's definitions) ----

# Besides the known types: a line of a type ralph does not know (kept as it is), one without a type.
OTHER_LINES = st.one_of(
    st.fixed_dictionaries({"t": st.text(min_size=1, max_size=8).filter(lambda t: t not in KINDS)}),
    any_record(portable=True).map(lambda record: {k: v for k, v in record.items() if k != "t"}),
    any_record(portable=True).map(lambda record: {**record, "t": len(record)}),  # `t` not a string
)
PROPERTY_SETTINGS = settings(
    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)


def _agree(record: dict) -> None:
    line = json.dumps(record, ensure_ascii=False)
    read = json.loads(line)
    standard = STANDARD.is_valid(read)
    assert standard == ralph_accepts(read), (
        f"jsonschema says {'valid' if standard else 'invalid'}, ralph check the opposite: {line}"
    )


# By kind, and the other lines, so each is drawn (drawn from any kind, 100 examples left `issue`,
# `resolve`, `config` and `state` out): 10 each, the 100 in all of before; the slow run below
# draws 3000 from any.
@pytest.mark.parametrize("kind", [*sorted(KINDS), "other lines"])
@settings(PROPERTY_SETTINGS, max_examples=10)
@given(data=st.data())
def test_a_standard_validator_and_ralph_check_agree_on_generated_records(kind, data):
    if kind == "other lines":
        _agree(data.draw(OTHER_LINES))
    else:
        _agree(
            data.draw(st.one_of(records(kind, portable=True), records(kind, valid_only=True, portable=True)))
        )


@pytest.mark.slow
@settings(PROPERTY_SETTINGS, max_examples=3000)
@given(st.one_of(any_record(portable=True), any_record(valid_only=True, portable=True), OTHER_LINES))
def test_a_standard_validator_and_ralph_check_agree_on_generated_records_long(record):
    _agree(record)


# Where JSON Schema's meaning and pydantic's strict types differ, ralph follows pydantic (the
# definition) and a standard validator accepts: the generator above leaves these values out.
@pytest.mark.parametrize(
    "record",
    [
        {"t": "task", "id": "t-abc", "name": "x", "attempts": 1.0},  # 1.0 is an integer to JSON Schema
        {"t": "task", "id": "t-abc", "name": "x\ud800"},  # a lone surrogate ("\ud800" in JSON)
        {"t": "task", "id": "t-abc", "name": "x", "cost_usd": 2**1024},  # beyond a float's range
        {"t": "task", "id": "t-abc\n", "name": "x"},  # jsonschema's re lets $ match before a final \n
    ],
    ids=repr,
)
def test_where_ralph_is_stricter_than_a_standard_validator(record):
    read = json.loads(json.dumps(record))
    assert STANDARD.is_valid(read) and not ralph_accepts(read)
