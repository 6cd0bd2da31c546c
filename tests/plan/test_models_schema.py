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

# One smallest valid line per record type, and the same line with a field only that type has made
# wrong: the validator must pick each type's own definition by "t" (and agree with pydantic).
SAMPLES = {
    "task": ({"t": "task", "id": "t-abc", "name": "x"}, {"s": "x"}),
    "issue": ({"t": "issue", "id": "i-abc", "text": "why?"}, {"id": "t-abc"}),
    "accept": ({"t": "accept", "id": "t-abc"}, {"id": "i-abc"}),
    "reject": ({"t": "reject", "id": "t-abc", "reason": "no"}, {"reason": None}),
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


# --- generated records ------------------------------------------------------------------------

# Values that are wrong almost everywhere, or that only a strict validator refuses.
SURROGATES = st.sampled_from(["\ud800", "ok\udfff", "\udc80x"])
HUGE_INTS = st.sampled_from([2**63, -(2**63) - 1, 2**1024, 2**1024 - 1, 10**308, 10**400])
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    HUGE_INTS,
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.just(""),
    SURROGATES,
    st.lists(st.one_of(st.text(max_size=4), st.integers(), st.none()), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _id(prefix: str) -> st.SearchStrategy[str]:
    return st.from_regex(rf"\A{prefix}-[0-9a-z][0-9a-z_-]{{0,39}}\Z", fullmatch=True)


BAD_IDS = st.sampled_from(
    ["", "t-", "i-", "t-A", "T-abc", "t-abc\n", "t-abc\r", "i-abc\n", "t_abc", " t-abc", "t-abc ", "t--a"]
    + ["t-" + "a" * 41, "i-" + "b" * 41, "t-\u00e9t\u00e9", "t-ab/c", "x-abc", "t-a\nb"]
)
TASK_IDS = _id("t")
ISSUE_IDS = _id("i")
TEXT = st.text(max_size=8)
NON_EMPTY = st.text(min_size=1, max_size=8)
PRIORITIES = st.sampled_from(["high", "medium", "low"])
KILL_REASONS = st.sampled_from(["timeout", "context_limit", "doom_loop"])
STRINGS = st.lists(TEXT, max_size=3)
POSITIVE = st.integers(min_value=1, max_value=2**64)
FRACTION = st.one_of(st.floats(min_value=0, max_value=1, exclude_min=True), st.just(1))
NEAR_MISSES = st.one_of(
    st.sampled_from([0, -1, 0.0, -0.0, 1.0, 1.5, 2, "1", "p", "HIGH", "High", "true", [], {}, [""]]),
    st.floats(min_value=-2, max_value=2),
)


def _optional(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(strategy, st.none())


# Valid values of each field, by (record type, field); fields not listed get valid values by name.
GOOD_BY_TYPE = {
    ("task", "id"): TASK_IDS,
    ("issue", "id"): ISSUE_IDS,
    ("accept", "id"): TASK_IDS,
    ("reject", "id"): TASK_IDS,
    ("takeover", "id"): TASK_IDS,
    ("task", "commit"): _optional(TEXT),
    ("config", "commit"): _optional(st.booleans()),
    ("reject", "reason"): TEXT,
    ("accept", "name"): _optional(TEXT),
    ("state", "stage"): _optional(TEXT),
    ("state", "spec"): _optional(TEXT),
}
GOOD_BY_NAME = {
    "name": NON_EMPTY,
    "text": NON_EMPTY,
    "path": NON_EMPTY,
    "s": st.sampled_from(["p", "d"]),
    "spec": _optional(TEXT),
    "accept": st.one_of(st.none(), TEXT, STRINGS),
    "deps": st.lists(TASK_IDS, max_size=3),
    "priority": _optional(PRIORITIES),
    "auto_priority": _optional(st.booleans()),
    "notes": _optional(TEXT),
    "parent": _optional(TASK_IDS),
    "attempts": _optional(st.integers(min_value=0, max_value=2**70)),
    "reject_reason": _optional(TEXT),
    "gate_failure": _optional(TEXT),
    "kill_reason": _optional(KILL_REASONS),
    "kill_log": _optional(TEXT),
    "files": _optional(STRINGS),
    "timeout_ms": _optional(POSITIVE),
    "max_iterations": _optional(POSITIVE),
    "max_minutes": _optional(POSITIVE),
    "max_attempts": _optional(POSITIVE),
    "parallel": _optional(POSITIVE),
    "gate_timeout_ms": _optional(POSITIVE),
    "context_warn": _optional(FRACTION),
    "context_compact": _optional(FRACTION),
    "context_kill": _optional(FRACTION),
    "gate": _optional(STRINGS),
    "agent_cmd": _optional(STRINGS),
    "agent": _optional(TEXT),
    "model": _optional(TEXT),
    "agent_args": _optional(STRINGS),
    "context_window": _optional(POSITIVE),
    "tokens": _optional(st.integers(min_value=0, max_value=2**70)),
    "attempt_tokens": _optional(st.lists(st.integers(min_value=0, max_value=2**70), max_size=3)),
    "cost_usd": _optional(st.one_of(st.floats(min_value=0, allow_infinity=True), st.integers(0, 10**300))),
    "iteration": st.integers(min_value=0, max_value=2**70),
    "claimed_by": _optional(NON_EMPTY),
    "claimed_at": _optional(NON_EMPTY),
    "claim_ttl_ms": _optional(POSITIVE),
    "by": NON_EMPTY,
    "at": NON_EMPTY,
    "was_claimed_by": NON_EMPTY,
    "was_claimed_at": _optional(TEXT),
    "max_cost_usd": _optional(st.floats(min_value=0.01, max_value=1e6)),
    "prices": _optional(
        st.dictionaries(
            TEXT,
            st.fixed_dictionaries(
                {"input": st.floats(0, 100), "output": st.integers(0, 100)},
                optional={"cache_read": _optional(st.floats(0, 10))},
            ),
            max_size=2,
        )
    ),
}
# Wrong values that are close to right ones, per field kind.
BAD_BY_NAME = {
    "id": BAD_IDS,
    "deps": st.one_of(st.lists(st.one_of(TASK_IDS, BAD_IDS, st.integers()), min_size=1, max_size=3), TEXT),
    "parent": BAD_IDS,
    "accept": st.lists(st.one_of(TEXT, st.integers(), st.none()), min_size=1, max_size=3),
    "files": st.lists(st.one_of(TEXT, st.integers(), st.none()), min_size=1, max_size=3),
    "gate": st.lists(st.one_of(TEXT, st.booleans()), min_size=1, max_size=3),
    "agent_cmd": st.lists(st.one_of(TEXT, SURROGATES), min_size=1, max_size=3),
    "attempt_tokens": st.lists(
        st.one_of(st.integers(-3, 3), st.booleans(), st.floats()), min_size=1, max_size=3
    ),
    "prices": st.dictionaries(
        TEXT,
        st.one_of(
            st.fixed_dictionaries({"input": NEAR_MISSES}),
            st.fixed_dictionaries({"input": st.just(1.0), "output": NEAR_MISSES}),
            st.fixed_dictionaries({"input": st.just(1.0), "output": st.just(2), "x": st.just(1)}),
            NEAR_MISSES,
        ),
        min_size=1,
        max_size=2,
    ),
}


def _good(kind: str, field: str) -> st.SearchStrategy:
    if (kind, field) in GOOD_BY_TYPE:
        return GOOD_BY_TYPE[kind, field]
    return GOOD_BY_NAME.get(field, JUNK)


def _bad(field: str) -> st.SearchStrategy:
    return st.one_of(JUNK, NEAR_MISSES, SURROGATES, BAD_BY_NAME.get(field, st.nothing()))


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def records(draw: st.DrawFn, kind: str, valid_only: bool = False) -> dict:
    model = RECORD_MODELS[kind]
    record = {"t": kind}
    for field, info in model.model_fields.items():
        if field == "t":
            continue
        # Required fields are mostly present; optional ones are often left out.
        present_weight = 0.95 if info.is_required() else 0.5
        if valid_only and ((kind, field) not in GOOD_BY_TYPE and field not in GOOD_BY_NAME):
            present = info.is_required()  # a field this test does not know: only JUNK values for it
        elif valid_only and info.is_required():
            present = True
        else:
            present = draw(st.integers(0, 99)) < present_weight * 100
        if not present:
            continue
        if valid_only or draw(st.integers(0, 3)) > 0:
            record[field] = draw(_good(kind, field))
        else:
            record[field] = draw(_bad(field))
    unknown_keys = st.text(min_size=1, max_size=6).filter(lambda key: key not in model.model_fields)
    record.update(draw(st.dictionaries(unknown_keys, JSON_VALUES, max_size=2)))
    return record


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


ANY_RECORD = st.sampled_from(sorted(RECORD_MODELS)).flatmap(records)
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


@settings(PROPERTY_SETTINGS, max_examples=200)
@given(ANY_RECORD)
def test_validator_agrees_with_pydantic(record):
    _validator_agrees_with_pydantic(record)


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
@settings(PROPERTY_SETTINGS, max_examples=40)
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
    unknown = set(record) - set(RECORD_MODELS[record["t"]].model_fields) - {"extra"}
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
        {"t": "task", "id": "t-" + "a" * 40, "name": "x", "accept": [], "extra": {"nested": [1]}},
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


def test_unknown_record_types_and_non_objects():
    assert record_problems({"t": "someday", "anything": [1, {"x": None}]}) == []
    assert record_problems([1, 2]) == ["each line must be a JSON object, not list"]
    assert record_problems({"id": "t-abc"}) != []
    assert record_problems({"t": ""}) != []
    assert record_problems({"t": 3}) != []
