"""A failure's identity across runs and across a task's family: fingerprints that take out what
differs from one run or one subtask to the next, and what a family remembers of its failures."""

from __future__ import annotations

from ralph.plan.families import (
    asks_a_person,
    fingerprint,
    inherited_failures,
    members_to_hold,
    note_repeat,
    own_names,
)
from ralph.plan.records import Verdict

GATE = Verdict.GATE_FAILED
PARENT = """`gate` exited 1: FAILED tests/test_work.py::test_answer - work/hopeless.py gives no answer
E   assert None == 42
1 failed, 11 passed in 0.12s
(full output: build/ralph-logs/ralph-20261125-203102-gate-t-hopeless.log)"""
PART = """`gate` exited 1: FAILED tests/test_work.py::test_answer - work/hopeless-1.py gives no answer
E   assert None == 42
1 failed, 12 passed in 0.31s
(full output: build/ralph-logs/ralph-20261125-204410-gate-t-hopeless-1.log)"""


def test_a_parts_failure_naming_its_own_file_is_its_parents_failure():
    """The same lines, each build naming the file it made: with each task's own names taken out,
    one fingerprint; without, two."""
    parent = fingerprint(GATE, PARENT, ["t-hopeless", "work/hopeless.py"])
    assert fingerprint(GATE, PART, ["t-hopeless-1", "work/hopeless-1.py"]) == parent
    assert fingerprint(GATE, PART) != fingerprint(GATE, PARENT)
    other_test = PART.replace("test_answer", "test_question")
    assert fingerprint(GATE, other_test, ["t-hopeless-1", "work/hopeless-1.py"]) != parent


def test_task_and_issue_ids_are_taken_out_of_a_fingerprint():
    assert fingerprint(GATE, "t-abcdef failed: i-xyzabc says no") == fingerprint(
        GATE, "t-qrstuv failed: i-b says no"
    )
    assert fingerprint(GATE, "t-abcdef failed") != fingerprint(Verdict.REJECTED, "t-abcdef failed")


def test_own_names_are_each_path_its_file_name_and_stem_longest_first_never_a_short_one():
    assert own_names(["src/app/parser.py", "lib/io.c"]) == [
        "src/app/parser.py",
        "parser.py",
        "lib/io.c",
        "parser",
        "io.c",  # not "io", which would take out every "io" of the output
    ]


def test_an_own_name_is_taken_out_only_as_a_whole_name():
    """ "parser" is the task's file's stem: "parsers" and "my-parser" are other words."""
    own = ["src/parser.py"]
    assert fingerprint(GATE, "parser: bad input", own) == fingerprint(GATE, "lexer: bad input", ["lexer.py"])
    assert fingerprint(GATE, "parsers: bad input", own) != fingerprint(
        GATE, "lexers: bad input", ["lexer.py"]
    )


def remembered(*failures: tuple[str, str, str]) -> list[dict]:
    return [{"task": task, "fingerprint": print_, "failure": text} for task, print_, text in failures]


def test_a_failure_repeating_an_ancestors_names_it_and_keeps_both_texts_the_ancestors_first():
    task = {
        "id": "t-part",
        "ancestor_failures": remembered(("t-root", "aaaa", "root's"), ("t-mid", "bbbb", "mid's")),
    }
    note_repeat(task, "aaaa", None, None, "part's")
    assert task["repeated_from"] == "t-root" and task["repeated_failure"] == ["root's", "part's"]
    assert asks_a_person(task)


def test_a_failure_repeating_its_own_last_one_names_no_ancestor_and_one_repeating_none_clears_both():
    task = {"id": "t-part", "repeated_from": "t-old", "repeated_failure": ["x", "y"]}
    note_repeat(task, "cccc", "cccc", "the last one", "this one")
    assert task["repeated_failure"] == ["the last one", "this one"] and "repeated_from" not in task
    note_repeat(task, "dddd", "cccc", "this one", "another")
    assert not {"repeated_failure", "repeated_from"} & set(task)


def test_only_a_repeated_rejection_or_an_ancestors_failure_asks_a_person_before_a_build():
    assert asks_a_person({"id": "t-a", "verdict": "rejected", "repeated_failure": ["r", "r"]})
    assert not asks_a_person({"id": "t-a", "verdict": "gate_failed", "repeated_failure": ["g", "g"]})
    assert not asks_a_person({"id": "t-a", "verdict": "rejected"})


def test_what_a_task_passes_to_its_parts_is_its_ancestors_failures_then_its_own_each_once():
    task = {
        "id": "t-mid",
        "files": ["app.py"],
        "fingerprint": "ffff",
        "gate_failure": "mid's gate",
        "ancestor_failures": remembered(("t-root", "aaaa", "root's")),
    }
    rejections = ["t-mid: the sum is off by 1", "t-mid: the sum is off by 2", "the names are unsorted"]
    passed = inherited_failures(task, rejections)
    assert [(f["task"], f["failure"]) for f in passed] == [
        ("t-root", "root's"),
        ("t-mid", "mid's gate"),
        ("t-mid", "t-mid: the sum is off by 1"),  # the second is the same rejection
        ("t-mid", "the names are unsorted"),
    ]
    assert passed[2]["fingerprint"] == fingerprint(Verdict.REJECTED, "t-part: the sum is off by 9")


def test_a_question_holds_the_pending_tasks_of_its_family_but_those_being_built():
    tasks = [
        {"id": "t-root-1", "family": "t-root", "s": "b"},
        {"id": "t-root-2", "family": "t-root"},
        {"id": "t-root-3", "family": "t-root", "s": "p", "kill_reason": "timeout"},
        {"id": "t-root-4", "family": "t-root"},
        {"id": "t-root-5", "family": "t-root", "s": "d"},
        {"id": "t-root-6", "family": "t-root", "claimed_by": "runner-2"},  # another runner builds it
        {"id": "t-other", "family": "t-else"},
        {"id": "t-root"},  # the family's first task, when it is back (its split undone)
    ]
    assert members_to_hold(tasks, "t-root", running=["t-root-4"]) == ["t-root-2", "t-root-3", "t-root"]
