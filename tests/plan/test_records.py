"""The typed reading of plan records: enums whose values are what plan.jsonl stores, and views."""

from __future__ import annotations

import pytest

from ralph.plan.records import (
    IssueView,
    KillReason,
    Stage,
    Status,
    TaskView,
    is_done,
    is_killed,
    is_pending,
    status_of,
)


def test_enum_values_are_the_stored_strings():
    assert [str(s) for s in Status] == ["p", "d", "b"]
    assert [str(k) for k in KillReason] == ["timeout", "context_limit", "doom_loop", "repeated_failure"]
    stages = [
        "PLAN",
        "INVESTIGATE",
        "BUILD",
        "VERIFY",
        "DECOMPOSE",
        "CHECK",
        "REVIEW",
        "WAITING",
        "BLOCKED",
        "COMPLETE",
    ]
    assert [str(s) for s in Stage] == stages
    assert Status.DONE == "d" and KillReason("doom_loop") is KillReason.DOOM_LOOP
    with pytest.raises(ValueError):
        KillReason("bored")


def test_status_defaults_to_pending():
    assert status_of({"id": "t-a"}) is Status.PENDING
    assert status_of({"s": "p"}) is Status.PENDING
    assert status_of({"s": "d"}) is Status.DONE
    assert is_pending({}) and not is_done({})
    assert is_done({"s": "d"}) and not is_pending({"s": "d"})


@pytest.mark.parametrize(
    "record, killed",
    [
        ({"kill_reason": "timeout"}, True),
        ({"kill_reason": "timeout", "s": "p"}, True),
        ({"kill_reason": "timeout", "s": "d"}, False),  # built since: no longer set aside
        ({"kill_reason": ""}, False),
        ({"reject_reason": "wrong"}, False),
        ({}, False),
    ],
)
def test_killed_means_a_kill_reason_on_a_pending_task(record, killed):
    assert is_killed(record) is killed
    assert TaskView({"t": "task", "id": "t-a", "name": "A", **record}).killed is killed


def test_task_view_reads_the_record_with_defaults():
    view = TaskView({"t": "task", "id": "t-a", "name": "A"})
    assert (view.id, view.name, view.status, view.pending, view.done) == (
        "t-a",
        "A",
        Status.PENDING,
        True,
        False,
    )
    assert view.deps == [] and view.attempts == 0
    assert (
        view.spec is view.parent is view.priority is view.commit is view.kill_log is view.kill_reason is None
    )
    assert view.why_not_done == ""


def test_task_view_reads_the_stored_dict_itself():
    record = {
        "t": "task",
        "id": "t-b",
        "name": "B",
        "s": "d",
        "deps": ["t-a"],
        "spec": "specs/x.md",
        "parent": "t-big",
        "priority": "high",
        "attempts": 2,
        "commit": "abc123",
        "kill_reason": "context_limit",
        "kill_log": "build/ralph-logs/3.log",
    }
    view = TaskView(record)
    assert view.record is record
    assert (view.status, view.done, view.pending, view.killed) == (Status.DONE, True, False, False)
    assert view.deps == ["t-a"] and view.spec == "specs/x.md" and view.parent == "t-big"
    assert (view.priority, view.attempts, view.commit) == ("high", 2, "abc123")
    assert view.kill_reason is KillReason.CONTEXT_LIMIT and view.kill_log == "build/ralph-logs/3.log"
    record["s"] = "p"  # a view, not a copy
    assert view.pending and view.killed
    assert "t-b" in repr(view)


@pytest.mark.parametrize(
    "fields, why",
    [
        ({"kill_reason": "timeout", "reject_reason": "wrong", "gate_failure": "tests fail"}, "timeout"),
        ({"reject_reason": "wrong", "gate_failure": "tests fail"}, "wrong"),
        ({"gate_failure": "tests fail"}, "tests fail"),
        ({"kill_reason": "", "reject_reason": "", "gate_failure": "lint"}, "lint"),
        ({}, ""),
    ],
)
def test_why_not_done_prefers_a_kill_then_a_rejection_then_the_gate(fields, why):
    assert TaskView({"t": "task", "id": "t-a", "name": "A", **fields}).why_not_done == why


def test_issue_view():
    view = IssueView({"t": "issue", "id": "i-a", "text": "why?", "spec": "specs/x.md", "priority": "low"})
    assert (view.id, view.text, view.spec, view.priority) == ("i-a", "why?", "specs/x.md", "low")
    bare = IssueView({"t": "issue", "id": "i-b", "text": "?"})
    assert bare.spec is None and bare.priority is None
