"""Intake (ralph/plan/intake.py): what a person or agent typed, turned into a new task record and
checked before anything is written. Through the commands: test_plan.py's add tests and
tests/usecases/test_properties.py's generated input."""

from __future__ import annotations

import re

import pytest

from ralph.errors import InvalidInput, Refused
from ralph.plan.intake import MAX_TEXT, new_id, new_task_record, refuse_cycle, require_text


def test_new_ids_are_the_prefix_and_six_base36_characters_and_never_one_taken():
    ids = {new_id("t", set()) for _ in range(200)}
    assert all(re.fullmatch(r"t-[0-9a-z]{6}", one) for one in ids) and len(ids) == 200
    assert new_id("i", set()).startswith("i-")


def test_a_bare_name_becomes_a_pending_task_of_the_given_spec():
    record = new_task_record("  Parse input  ", "task", set(), "specs/app.md")
    assert record == {
        "t": "task",
        "id": record["id"],
        "name": "Parse input",
        "s": "p",
        "spec": "specs/app.md",
    }


def test_optional_fields_are_kept_only_when_given_and_deps_are_a_list_without_repeats():
    item = {"id": "t-aaaaaa", "name": "x", "deps": "t-bbbbbb", "notes": "", "scope": [], "priority": "high"}
    assert new_task_record(item, "task", set(), None) == {
        "t": "task", "id": "t-aaaaaa", "name": "x", "s": "p", "deps": ["t-bbbbbb"], "priority": "high",
    }  # fmt: skip
    twice = {"name": "x", "deps": ["t-bbbbbb", "t-cccccc", "t-bbbbbb"]}
    assert new_task_record(twice, "task", set(), None)["deps"] == ["t-bbbbbb", "t-cccccc"]
    assert (
        new_task_record({"name": "x", "spec": "specs/b.md"}, "task", set(), "specs/a.md")["spec"]
        == "specs/b.md"
    )


@pytest.mark.parametrize(
    ("item", "error", "message"),
    [
        (["x"], InvalidInput, 'item 1 must be a JSON object with at least a "name", not list'),
        ({"name": "x", "colour": "red"}, InvalidInput, "item 1: unknown field colour (allowed: id, name"),
        ({"accept": "works"}, InvalidInput, 'item 1 needs a "name"'),
        ({"name": "x", "priority": 2}, InvalidInput, "item 1: field 'priority'"),
        ({"id": "t-aaaaaa", "name": "x"}, Refused, "item 1: id t-aaaaaa is already in the plan"),
    ],
)
def test_what_cannot_be_a_task_is_refused_naming_the_item(item, error, message):
    with pytest.raises(error) as caught:
        new_task_record(item, "item 1", {"t-aaaaaa"}, None)
    assert str(caught.value).startswith(message) and type(caught.value) is error


def test_text_must_be_unicode_and_within_the_limit():
    require_text(["ok", "é" * MAX_TEXT, 3], "name")  # at the limit, non-text values pass
    with pytest.raises(
        InvalidInput, match=f"name is {MAX_TEXT + 1:,} characters long; the limit is {MAX_TEXT:,}"
    ):
        require_text("x" * (MAX_TEXT + 1), "name")
    with pytest.raises(InvalidInput, match="notes is not valid UTF-8 text"):
        require_text(["fine", "bad \udcff byte"], "notes")


def test_a_cycle_among_the_new_tasks_is_refused_and_deps_outside_the_batch_are_ignored():
    new = [{"id": "t-a", "deps": ["t-b", "t-old"]}, {"id": "t-b", "deps": ["t-a"]}]
    with pytest.raises(InvalidInput, match="dependency cycle: "):
        refuse_cycle(new, {"t-a", "t-b"})
    refuse_cycle([{"id": "t-a", "deps": ["t-old"]}, {"id": "t-old", "deps": ["t-a"]}], {"t-a"})
