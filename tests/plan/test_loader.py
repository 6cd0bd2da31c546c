"""Reading plan.jsonl strictly (ralph/plan/loader.py): each problem located by its line, every one
of them collected, the cross-record checks once every line parses, and load refusing them all."""

from __future__ import annotations

import pytest

from ralph.errors import PlanInvalid
from ralph.plan.loader import load, parse


@pytest.mark.parametrize(
    "data, line, message",
    [
        (b'{"t":"spec","path":"a"}\n{"t":"task"', 2, "invalid JSON"),
        (b'\n\n["t", "task"]\n', 3, "each line must be a JSON object, not list"),
        (b'{"t":"task","id":"t-a"}\n', 1, "task is missing field 'name'"),
        (b"<<<<<<< HEAD\n", 1, "unresolved git merge conflict marker"),
        (b'{"t":"spec","path":"\xff"}\n', 1, "not valid UTF-8 (byte 21)"),
        (b'{"t":"spec","path":"a"} {"t":"spec","path":"b"}\n', 1, "invalid JSON: Extra data"),
        (b'{"t":"spec","path":"a"}\r\n{"t":"spec"}\r\n', 2, "spec is missing field 'path'"),
    ],
)
def test_parse_reports_the_line_of_each_problem(data, line, message):
    doc, problems = parse(data)
    assert [p.line for p in problems] == [line]
    assert message in problems[0].message
    assert str(problems[0]).startswith(f"plan.jsonl:{line}: ")
    assert doc.to_bytes() == data


def test_parse_collects_every_line_problem_and_load_refuses():
    data = b'{"t":"task"}\nnot json\n{"t":"task","id":"t-a","name":"ok"}\n[]\n'
    _, problems = parse(data)
    assert [p.line for p in problems] == [1, 2, 4]
    with pytest.raises(PlanInvalid) as caught:
        load(data)
    assert str(caught.value).startswith("plan.jsonl:1: task is missing field 'id'")
    assert "(and 2 more problems; run 'ralph check')" in str(caught.value)
    assert len(caught.value.problems) == 3


def test_integrity_problems_are_found_once_every_line_parses():
    data = (
        b'{"t":"task","id":"t-a","name":"a"}\n'
        b'{"t":"task","id":"t-a","name":"again"}\n'
        b'{"t":"task","id":"t-b","name":"b","deps":["t-zzz"]}\n'
    )
    _, problems = parse(data)
    assert [(p.line, p.message) for p in problems] == [
        (2, "duplicate id t-a (also on line 1)"),
        (3, "task t-b depends on unknown task t-zzz"),
    ]


def test_each_load_of_the_same_bytes_gets_records_of_its_own():
    # A load is cached by content (ralph.plan.loader._Proven): a caller changing its records in
    # place, as the transitions do, must not change what the next load of those bytes returns.
    data = b'{"t":"task","id":"t-own001","name":"Parse","deps":[]}\n'
    for _ in range(4):  # a line's record is kept once it is seen twice
        record = load(data).records()[0].record
        assert record == {"t": "task", "id": "t-own001", "name": "Parse", "deps": []}
        record["name"] = "changed"
        record["deps"].append("t-other1")


def test_lines_proven_valid_alone_are_still_checked_together():
    # Each line was proven valid in an earlier plan; together they break a rule across records.
    first = b'{"t":"task","id":"t-twice1","name":"One"}\n'
    second = b'{"t":"task","id":"t-twice1","name":"Two"}\n'
    load(first)
    load(second)
    with pytest.raises(PlanInvalid, match="t-twice1"):
        load(first + second)


def test_a_changed_line_beside_proven_ones_is_validated():
    good = b'{"t":"task","id":"t-good01","name":"Good"}\n'
    load(good + good.replace(b"t-good01", b"t-good02"))
    with pytest.raises(PlanInvalid, match="plan.jsonl:2: task is missing field 'name'"):
        load(good + b'{"t":"task","id":"t-good02"}\n')
