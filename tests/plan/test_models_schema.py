"""The models define the format; plan.schema.json is exported from them (test_generate.py checks
it is current), and ralph.validate (which reads that schema without pydantic) must accept exactly
the records pydantic accepts."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ralph.plan.models import RECORD_MODELS
from ralph.plan.validate import record_problems
from tests.support.plan_records import any_record, records

# One smallest valid line per record type, and the same line with a field only that type has made
# wrong: the validator must pick each type's own definition by "t" (and agree with pydantic).
SAMPLES: dict[str, tuple[dict[str, object], dict[str, object]]] = {
    "task": ({"t": "task", "id": "t-abc", "name": "x"}, {"s": "x"}),
    "issue": ({"t": "issue", "id": "i-abc", "text": "why?"}, {"id": "t-abc"}),
    "accept": ({"t": "accept", "id": "t-abc"}, {"id": "i-abc"}),
    "reject": ({"t": "reject", "id": "t-abc", "reason": "no"}, {"reason": None}),
    "resolve": ({"t": "resolve", "id": "i-abc", "note": "out of scope"}, {"note": ""}),
    "takeover": (
        {"t": "takeover", "id": "t-abc", "by": "h2", "at": "now", "was_claimed_by": "h1"},
        {"by": ""},
    ),
    "spec": ({"t": "spec", "path": "specs/a.md"}, {"path": ""}),
    "config": ({"t": "config"}, {"parallel": 0}),
    "state": ({"t": "state"}, {"iteration": -1}),
}


@pytest.mark.parametrize("kind", sorted(RECORD_MODELS))
def test_a_line_of_each_record_type_is_checked_by_its_own_definition(kind):
    valid, wrong = SAMPLES[kind]
    assert record_problems(valid) == [] and _pydantic_accepts(valid)
    broken = {**valid, **wrong}
    problems = record_problems(broken)
    assert problems and all(problem.startswith(f"{kind} ") for problem in problems), problems
    assert not _pydantic_accepts(broken)


# --- generated records (tests/support/plan_records.py: from plan.schema.json's definitions) ----


def _pydantic_accepts(record: dict) -> bool:
    try:
        RECORD_MODELS[record["t"]].model_validate(record)
    except ValidationError:
        return False
    return True


def _show(record: dict) -> str:
    return json.dumps(record, ensure_ascii=True, default=repr) if not _has_nan(record) else repr(record)


def _has_nan(value: object) -> bool:
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, dict):
        return any(map(_has_nan, value.values()))
    if isinstance(value, list):
        return any(map(_has_nan, value))
    return False


ANY_RECORD = any_record()
# The fast suite runs each property on a fixed (derandomized) sample; `make e2e` runs the long
# versions, on new random examples each time.
PROPERTY_SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _validator_agrees_with_pydantic(record: dict) -> None:
    problems = record_problems(record)
    accepted = _pydantic_accepts(record)
    assert (problems == []) == accepted, (
        f"validate.py says {problems or 'valid'}, pydantic says {'valid' if accepted else 'invalid'}: "
        + _show(record)
    )
    for problem in problems:
        assert problem.startswith(f"{record['t']} "), problem


# By kind, so each is drawn (drawn from any kind, 100 examples left `spec` and `state` out): 11
# each, about the 100 in all of before; the slow run below draws 2000 from any kind.
@pytest.mark.parametrize("kind", sorted(RECORD_MODELS))
@settings(PROPERTY_SETTINGS, max_examples=11)
@given(data=st.data())
def test_validator_agrees_with_pydantic(kind, data):
    _validator_agrees_with_pydantic(data.draw(records(kind)))


@pytest.mark.slow
@settings(PROPERTY_SETTINGS, max_examples=2000)
@given(ANY_RECORD)
def test_validator_agrees_with_pydantic_long(record):
    _validator_agrees_with_pydantic(record)


def _valid_records_pass_both(kind: str, data: st.DataObject) -> None:
    record = data.draw(records(kind, valid_only=True))
    assert _pydantic_accepts(record), _show(record)
    assert record_problems(record) == [], _show(record)


@pytest.mark.parametrize("kind", sorted(RECORD_MODELS))
@settings(PROPERTY_SETTINGS, max_examples=20)  # 300 in the slow run below
@given(data=st.data())
def test_valid_records_pass_both(kind, data):
    """The generator's valid values really are valid, so the property above sees both outcomes."""
    _valid_records_pass_both(kind, data)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(RECORD_MODELS))
@settings(PROPERTY_SETTINGS, max_examples=300)
@given(data=st.data())
def test_valid_records_pass_both_long(kind, data):
    _valid_records_pass_both(kind, data)


def _fields_exist(record: dict) -> None:
    unknown = {key for key in set(record) - set(RECORD_MODELS[record["t"]].model_fields) if key[:2] != "x-"}
    assert not unknown, f"the models no longer have {unknown}: update this case"


@pytest.mark.parametrize(
    "record",
    [
        {"t": "task", "id": "t-abc\n", "name": "x"},
        {"t": "task", "id": "t-abc", "name": "x", "deps": ["t-abd\n"]},
        {"t": "issue", "id": "i-abc", "text": "\ud800"},
        {"t": "task", "id": "t-abc", "name": "x\udfff"},
        {"t": "spec", "path": "\udfffspecs/a.md"},
        {"t": "task", "id": "t-abc", "name": "x", "cost_usd": 2**1024},
        {"t": "task", "id": "t-abc", "name": "x", "cost_usd": True},
        {"t": "task", "id": "t-abc", "name": "x", "attempt_tokens": [1, True]},
        {"t": "config", "context_warn": True},
        {"t": "config", "timeout_ms": True},
        {"t": "config", "timeout_ms": 1.0},
        {"t": "config", "context_kill": 0},
        {"t": "config", "context_kill": float("nan")},
        {"t": "task", "id": "t-abc", "name": ""},
        {"t": "task", "id": "t-abc", "name": "x", "s": None},
        {"t": "state", "iteration": -1},
        {"t": "reject", "id": "t-abc"},
    ],
    ids=repr,
)
def test_known_disagreements_stay_fixed(record):
    _fields_exist(record)
    assert not _pydantic_accepts(record)
    assert record_problems(record) != []


@pytest.mark.parametrize(
    "record",
    [
        {"t": "config", "context_warn": 1},
        {"t": "task", "id": "t-abc", "name": "x", "cost_usd": 10**308},
        {"t": "task", "id": "t-abc", "name": "x", "cost_usd": float("inf")},
        {"t": "task", "id": "t-abc", "name": "x", "cost_usd": 0},
        {"t": "task", "id": "t-" + "a" * 40, "name": "x", "accept": [], "x-extra": {"nested": [1]}},
        {"t": "state"},
        {"t": "reject", "id": "t-abc", "reason": ""},
        # pydantic checks a string is Unicode text only where it has a constraint
        {"t": "task", "id": "t-abc", "name": "x", "accept": ["ok", "bad\udfff"], "notes": "\ud800"},
    ],
    ids=repr,
)
def test_edge_values_both_accept(record):
    _fields_exist(record)
    assert _pydantic_accepts(record)
    assert record_problems(record) == []


def test_an_unknown_field_is_refused_by_both_and_a_users_own_x_field_passes_both():
    typo = {"t": "task", "id": "t-abc", "name": "x", "acept": "y"}
    assert not _pydantic_accepts(typo)
    assert record_problems(typo) == [
        "task: unknown field acept (did you mean accept?; allowed: see docs/plan-format.md;"
        " a field of your own starts with x-)"
    ]
    mine = {"t": "accept", "id": "t-abc", "x-mine": {"any": [1]}}
    assert _pydantic_accepts(mine) and record_problems(mine) == []
    assert record_problems({"t": "accept", "id": "t-abc", "whyy": 1}) == [
        "accept: unknown field whyy (allowed: t, id, name, spec, commit, aspect; a field of your own"
        " starts with x-)"
    ]


def test_unknown_record_types_and_non_objects():
    assert record_problems({"t": "someday", "anything": [1, {"x": None}]}) == []
    assert record_problems([1, 2]) == ["each line must be a JSON object, not list"]
    assert record_problems({"id": "t-abc"}) != []
    assert record_problems({"t": ""}) != []
    assert record_problems({"t": 3}) != []
