"""Properties of the state commands over generated input: no input makes ralph crash, and no
sequence of commands rewrites a line whose record it did not change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ralph.errors import RalphError
from ralph.plan.loader import load
from ralph.usecases import issues, tasks

FUNCTION_FIXTURES = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# --- (a) task add never crashes --------------------------------------------------------------

TASK_KEYS = ["name", "id", "accept", "deps", "priority", "notes", "spec", "parent", "s", "t", "x"]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**30, max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["t-aaaaaa", "t-new", "T-BAD", "high", "", "  ", "t-a\n", "\u00e9\u2603\U0001f600"]),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.sampled_from(TASK_KEYS), st.text(max_size=4)), inner, max_size=4),
    ),
    max_leaves=8,
)
TASKISH = st.fixed_dictionaries(
    {"name": st.one_of(st.text(max_size=10), SCALARS)},
    optional={key: JSON_VALUES for key in TASK_KEYS if key != "name"},
)
TASK_ADD_ARGUMENTS = st.one_of(
    TASKISH.map(json.dumps),
    st.lists(TASKISH, max_size=3).map(json.dumps),
    JSON_VALUES.map(json.dumps),
    st.text(max_size=20),  # mostly not JSON at all
    st.sampled_from(['{"name": "x"', "[", "", "NaN", '{"name": "a"} {"name": "b"}', "1" * 5000]),
    st.sampled_from(["\ud800", "\udfff", "a\udcff"]).map(  # lone surrogates, as argv decoding makes
        lambda bad: json.dumps({"name": "x" + bad, "accept": [bad]}, ensure_ascii=False)
    ),
)


@settings(FUNCTION_FIXTURES, max_examples=40)
@given(argument=TASK_ADD_ARGUMENTS)
def test_task_add_never_crashes(ralph, repo, argument):
    _task_add_never_crashes(ralph, repo, argument)


@pytest.mark.slow
@settings(FUNCTION_FIXTURES, max_examples=500)
@given(argument=TASK_ADD_ARGUMENTS)
def test_task_add_never_crashes_long(ralph, repo, argument):
    _task_add_never_crashes(ralph, repo, argument)


def _task_add_never_crashes(ralph, repo, argument):
    plan = repo / "plan.jsonl"
    before = plan.read_bytes()
    # "--": an argument such as "-0" would otherwise be read as an option (a click usage error)
    result = ralph("task", "add", "--no-commit", "--", argument, code=None)
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.stderr)
    if result.exit_code:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("ralph: "), result.stderr
        assert plan.read_bytes() == before
    else:
        after = plan.read_bytes()
        assert after.startswith(before) and len(after) > len(before)
    load(plan.read_bytes())  # whatever happened, the plan still loads


@pytest.mark.parametrize(
    "argument",
    [
        '{"name": "x", "notes": ' + "1" * 5000 + "}",
        "[" * 50000 + "]" * 50000,
        '{"name": "x\\ud800"}',
        '{"id": "t-self", "name": "x", "deps": ["t-self"]}',
    ],
    ids=["huge-int", "deep-nesting", "surrogate-name", "self-dependency"],
)
def test_task_add_refuses_json_beyond_limits_as_bad_input(ralph, repo, argument):
    before = (repo / "plan.jsonl").read_bytes()
    result = ralph("task", "add", "--no-commit", argument, code=2)
    assert result.stderr.startswith("ralph: task") and result.stderr.count("\n") == 1
    assert (repo / "plan.jsonl").read_bytes() == before


def test_a_lone_surrogate_is_refused_as_input_and_kept_escaped_in_a_hand_edit(ralph, repo):
    result = ralph("task", "add", "--no-commit", '{"name": "x", "accept": ["\\udfff"]}', code=2)
    assert "is not valid UTF-8 text" in result.stderr
    (repo / "plan.jsonl").write_bytes(
        b'{"t": "task", "id": "t-aaaaaa", "name": "x", "accept": ["\\udfff"]}\n'
    )
    ralph("task", "done", "t-aaaaaa", "--no-commit")
    data = (repo / "plan.jsonl").read_bytes()
    assert b'"accept": ["\\udfff"]' in data and b'"s": "d"' in data  # rewritten, still escaped
    assert load(data).records()[-1].record["accept"] == ["\udfff"]


def test_a_huge_int_or_deep_nesting_in_the_plan_is_a_problem_not_a_crash(ralph, repo):
    (repo / "plan.jsonl").write_bytes(b'{"t": "spec", "path": "a"}\n{"t": "x", "n": ' + b"1" * 5000 + b"}\n")
    assert ralph("query", "next", code=2).stderr.startswith("ralph: plan.jsonl:2: invalid JSON")
    (repo / "plan.jsonl").write_bytes(b"[" * 50000 + b"]" * 50000 + b"\n")
    assert ralph("check", code=2).stderr.startswith("plan.jsonl:1: invalid JSON")


# --- (b) commands rewrite only the records they change ---------------------------------------

HAND_WRITTEN = (
    b'{"t":"config",  "commit": false, "x-mine": 1}\n'
    b"\n"
    b'  {"name": "Schema", "t": "task", "id": "t-aaaaaa", "notes": "keep  spacing"}  \n'
    b'{"t": "milestone", "id": "m-1", "title": "unknown record type"}\r\n'
    b'{"t":"task","id":"t-bbbbbb","name":"Model","deps":["t-aaaaaa"],"x-y":{"y":[1,2]}}\r\n'
    b'{"t": "task", "id": "t-cccccc", "name": "Done one", "s": "d", "priority": "high"}\n'
    b'{"t": "task", "id": "t-dddddd", "name": "Child of c", "parent": "t-cccccc"}\n'
    b'{"t": "task", "id": "t-eeeeee", "name": "Uses c", "deps": ["t-cccccc"], "priority": "low"}\n'
    b'{"t": "issue", "id": "i-aaaaaa", "text": "Question?"}\n'
    b'{"t": "accept", "id": "t-old", "name": "Old"}\n'
    b'{"t":"spec","path":"specs/a.md"}\n'
    b"\n"
    b"   "
)
COMMANDS = ["add", "done", "accept", "reject", "delete", "prioritize", "issue add", "issue resolve"]


def _key(line) -> tuple:
    record = line.record
    return (record["t"], record["id"]) if record is not None and "id" in record else ("line", line.raw)


def _records_by_key(data: bytes) -> dict[tuple, dict]:
    return {_key(line): line.record for line in load(data).lines if line.record is not None}


def _is_subsequence(needles: list[bytes], haystack: list[bytes]) -> bool:
    remaining = iter(haystack)
    return all(any(needle == line for line in remaining) for needle in needles)


def _run(root: Path, data: st.DataObject, command: str, ids: list[str], issue_ids: list[str]) -> None:
    some_id = st.one_of(st.sampled_from([*ids, "t-unknown", "t-old"]))
    maybe_id = st.one_of(st.none(), some_id)
    if command == "add":
        items = data.draw(
            st.lists(
                st.fixed_dictionaries(
                    {"name": st.text(min_size=1, max_size=8)},
                    optional={
                        "deps": st.lists(st.sampled_from([*ids, "t-old"]), max_size=2),
                        "priority": st.sampled_from(["high", "medium", "low"]),
                        "parent": some_id,
                        "accept": st.text(max_size=8),
                    },
                ),
                min_size=1,
                max_size=2,
            )
        )
        tasks.add(root, [*items], commit=False)
    elif command == "done":
        tasks.done(root, data.draw(maybe_id), commit=False)
    elif command == "accept":
        tasks.accept(root, data.draw(maybe_id), commit=False)
    elif command == "reject":
        kill = data.draw(st.sampled_from([None, "timeout", "doom_loop"]))
        tasks.reject(root, data.draw(maybe_id), data.draw(st.text(max_size=8)), kill, commit=False)
    elif command == "delete":
        tasks.delete(root, data.draw(some_id), force=data.draw(st.booleans()), commit=False)
    elif command == "prioritize":
        tasks.prioritize(root, data.draw(st.sampled_from([None, "specs/a.md"])), commit=False)
    elif command == "issue add":
        issues.add(root, data.draw(st.text(max_size=8)), commit=False)
    else:
        issues.resolve(root, data.draw(st.sampled_from([*issue_ids, "i-unknown"])), commit=False)


@settings(FUNCTION_FIXTURES, max_examples=50)
@given(data=st.data())
def test_commands_keep_every_line_they_do_not_change(repo, data):
    _commands_keep_every_line_they_do_not_change(repo, data)


@pytest.mark.slow
@settings(FUNCTION_FIXTURES, max_examples=600)
@given(data=st.data())
def test_commands_keep_every_line_they_do_not_change_long(repo, data):
    _commands_keep_every_line_they_do_not_change(repo, data)


def _commands_keep_every_line_they_do_not_change(repo, data):
    plan = repo / "plan.jsonl"
    plan.write_bytes(HAND_WRITTEN)
    original = load(HAND_WRITTEN).lines
    kept = list(original)  # original lines whose records no command has changed yet
    for command in data.draw(st.lists(st.sampled_from(COMMANDS), min_size=1, max_size=8)):
        before = plan.read_bytes()
        doc = load(before)
        ids = [line.record["id"] for line in doc.records() if line.record["t"] == "task"]
        issue_ids = [line.record["id"] for line in doc.records() if line.record["t"] == "issue"]
        try:
            _run(repo, data, command, ids, issue_ids)
        except RalphError:
            assert plan.read_bytes() == before, f"{command} was refused but changed the file"
            continue
        after = plan.read_bytes()
        old_records, new_records = _records_by_key(before), _records_by_key(after)
        changed = {key for key, record in old_records.items() if new_records.get(key) != record}
        kept = [line for line in kept if _key(line) not in changed]
        survivors = [line.raw for line in kept]
        assert _is_subsequence(survivors, after.splitlines(keepends=True)), (command, after)
    # Lines no command could change are all still there, exactly.
    final = plan.read_bytes().splitlines(keepends=True)
    for raw in (HAND_WRITTEN.splitlines(keepends=True)[i] for i in (0, 1, 3, 10)):
        assert raw in final
    assert plan.read_bytes().endswith(b"\n\n   ")
