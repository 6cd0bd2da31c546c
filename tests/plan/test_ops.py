"""Each of a plan's transitions recorded as an operation with its arguments (ralph.plan.ops): what
a commit's `Ralph-Op:` trailers hold, for a runner to replay (tests/plan/test_replay.py)."""

from __future__ import annotations

import pytest

from ralph.plan.ops import decode, encode, made_by_ops, ops_in, trailers, with_trailers
from ralph.plan.records import KillReason, Recorded, Verdict
from ralph.plan.run_records import AttemptRecord
from tests.support.plans import BASE, T0, decomposed, ops_made, ops_of, plan_of


def test_each_transition_that_changes_the_plan_is_recorded_with_its_arguments():
    ops = ops_of(BASE, lambda plan: (plan.done("t-a"), plan.claim("t-b", "one", T0)))
    assert ops == [
        {"op": "done", "args": ["t-a"]},
        {"op": "claim", "args": ["t-b", "one", T0]},
    ]


def test_added_tasks_are_recorded_with_the_ids_they_were_given():
    plan = plan_of(BASE)
    [added] = plan.add_tasks(["D"])
    assert made_by_ops(plan) == [{"op": "add_tasks", "args": [[{"name": "D", "id": added["id"]}]]}]
    again = plan_of(BASE)
    again.add_tasks(*ops_made(plan)[0]["args"])
    assert again.doc.to_bytes() == plan.doc.to_bytes()  # the same task, under the same id


def test_a_transition_another_calls_is_part_of_the_outer_operation():
    ops = ops_of(decomposed(BASE, "t-b", ["t-b1"]), lambda plan: plan.record_decomposition("t-c", []))
    assert [op["op"] for op in ops] == ["record_decomposition"]  # not its inner delete


def test_a_record_changed_by_hand_makes_the_change_no_sequence_of_operations():
    plan = plan_of(BASE)
    plan.done("t-a")
    line = plan.task_line("t-b")
    line.record["notes"] = "by hand"
    plan.doc.rewrite(line)
    assert made_by_ops(plan) is None


def test_an_enum_argument_goes_through_a_commit_message_and_back():
    op = {"op": "set_aside", "args": ["t-a", KillReason.TIMEOUT, "too slow"]}
    assert decode(encode(op))["args"][1] is KillReason.TIMEOUT


def test_operations_are_read_back_from_the_trailers_of_a_commit_message():
    ops = [{"op": "done", "args": ["t-a"]}, {"op": "reject", "args": ["t-a", "line one\nline two"]}]
    message = with_trailers("ralph: task done A\n\nwhy it is done", trailers(ops))
    assert message.splitlines()[0] == "ralph: task done A"
    assert ops_in(message) == ops
    assert ops_in("ralph: task done A") is None
    assert ops_in("subject\n\nRalph-Op: {not json") is None  # a hand-written trailer: merged by record


def test_a_typed_argument_reads_back_only_as_its_own_class_with_its_own_fields():
    attempt = AttemptRecord(Recorded.FAILED, files=("a.py",), verdict=Verdict.GATE_FAILED, text="why")
    op = {"op": "record_attempt", "args": ["t-a", attempt]}
    assert decode(encode(op))["args"][1] == attempt
    forged = [
        '{"op":"record_attempt","args":["t-a",{"$record":"AttemptRecord","fields":{"run":"rm -rf /"}}]}',
        '{"op":"record_attempt","args":["t-a",{"$record":"TaskView","fields":{"record":{}}}]}',
    ]
    for text in forged:  # text an agent's fenced run may have written: refused as not reading
        with pytest.raises(ValueError):
            decode(text)
