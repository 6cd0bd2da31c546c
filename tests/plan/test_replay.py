"""A plan's transitions recorded as operations (ralph.plan.ops) and made again on another plan
(ralph.plan.replay), each one's precondition checked there: the rules a runner's unpublished
changes meet when its push lost the race."""

from __future__ import annotations

from ralph.plan.plan import Plan
from ralph.plan.records import Replayed
from ralph.plan.replay import decomposed_into, replay
from tests.support.plans import (
    BASE,
    T0,
    data_of,
    decomposed,
    ops_made,
    ops_of,
    plan_of,
    records_of,
    task,
    task_in,
)


def test_an_operation_whose_precondition_holds_is_made_again_as_it_was():
    ops = ops_of(BASE, lambda plan: plan.done("t-a"))
    theirs = data_of({"t": "config"}, task("a"), task("b"), task("c", deps=["t-b"]), task("e"))
    data, [outcome] = replay(theirs, ops)
    assert outcome.kind == Replayed.APPLIED
    assert task_in(plan_of(data), "t-a")["s"] == "d"
    assert plan_of(data).find_task("t-e") is not None  # theirs stays


def test_a_priority_for_a_task_now_decomposed_is_dropped_and_the_subtasks_are_ranked():
    ours = plan_of(BASE)
    ours.prioritize()
    assert task_in(ours, "t-b").get("priority")
    theirs = decomposed(BASE, "t-b", ["t-b1", "t-b2"])
    data, [outcome] = replay(theirs, ops_made(ours))
    plan = plan_of(data)
    assert outcome.kind == Replayed.APPLIED  # prioritize is computed again on the plan as it is
    assert plan.find_task("t-b") is None
    assert task_in(plan, "t-b1").get("priority") and task_in(plan, "t-b1").get("auto_priority")


def test_an_operation_on_a_task_another_runner_decomposed_is_dropped_saying_so():
    ops = ops_of(BASE, lambda plan: plan.done("t-b"))
    theirs = decomposed(BASE, "t-b", ["t-b1", "t-b2"])
    data, [outcome] = replay(theirs, ops)
    assert data == theirs
    assert outcome.kind == Replayed.DROPPED
    assert outcome.line() == "dropped done: t-b was decomposed into t-b1, t-b2"


def test_a_dependency_on_a_decomposed_task_moves_to_its_subtasks():
    ops = ops_of(BASE, lambda plan: plan.add_tasks([{"id": "t-d", "name": "D", "deps": ["t-b", "t-a"]}]))
    theirs = decomposed(BASE, "t-b", ["t-b1", "t-b2"])
    data, [outcome] = replay(theirs, ops)
    assert task_in(plan_of(data), "t-d")["deps"] == ["t-b1", "t-b2", "t-a"]
    assert outcome.kind == Replayed.MOVED
    assert "t-b -> t-b1, t-b2" in outcome.why


def test_a_subtask_depending_on_a_task_another_runner_decomposed_depends_on_its_subtasks():
    """A decomposition (its subtasks added, then recorded) whose subtask names a task another
    runner decomposed first: the dependency moves to that task's subtasks, as a new task's does."""

    def decompose_c(plan: Plan) -> None:
        plan.add_tasks([{"id": "t-c1", "name": "C1", "parent": "t-c", "deps": ["t-b"]}])
        plan.record_decomposition("t-c", ["t-c1"])

    ops = ops_of(BASE, decompose_c)
    theirs = decomposed(BASE, "t-b", ["t-b1", "t-b2"])
    data, outcomes = replay(theirs, ops)
    plan = plan_of(data)
    assert task_in(plan, "t-c1")["deps"] == ["t-b1", "t-b2"]
    assert plan.find_task("t-c") is None and plan.find_task("t-b") is None
    assert [outcome.kind for outcome in outcomes] == [Replayed.MOVED, Replayed.APPLIED]


def test_a_decomposition_replayed_on_a_plan_another_runner_prioritized_goes_through():
    """The other order of the priority test above (the bench's wedge: a runner's automatic
    `task prioritize` published first): the decomposition is made on the ranked plan."""

    def decompose_b(plan: Plan) -> None:
        plan.add_tasks([{"id": part, "name": part, "parent": "t-b"} for part in ("t-b1", "t-b2")])
        plan.record_decomposition("t-b", ["t-b1", "t-b2"])

    ops = ops_of(BASE, decompose_b)
    prioritized = plan_of(BASE)
    prioritized.prioritize()
    data, outcomes = replay(prioritized.doc.to_bytes(), ops)
    plan = plan_of(data)
    assert [outcome.kind for outcome in outcomes] == [Replayed.APPLIED, Replayed.APPLIED]
    assert plan.find_task("t-b") is None
    assert [t["id"] for t in plan.tasks()] == ["t-a", "t-c", "t-b1", "t-b2"]
    assert task_in(plan, "t-a")["auto_priority"] is True  # theirs stays


def test_a_decomposed_task_is_known_by_its_subtasks_and_one_in_the_plan_by_none():
    theirs = plan_of(decomposed(BASE, "t-b", ["t-b1", "t-b2"]))
    assert decomposed_into(theirs, "t-b") == ["t-b1", "t-b2"]
    assert decomposed_into(theirs, "t-a") == []  # still in the plan
    assert decomposed_into(theirs, "t-zzz") == []  # never was: the transition refuses it itself


def test_a_second_decomposition_of_a_task_another_runner_decomposed_is_dropped():
    def decompose_b(plan: Plan) -> None:
        plan.add_tasks([{"id": "t-x1", "name": "X1", "parent": "t-b"}])
        plan.record_decomposition("t-b", ["t-x1"])

    ops = ops_of(BASE, decompose_b)
    theirs = decomposed(BASE, "t-b", ["t-b1", "t-b2"])
    data, outcomes = replay(theirs, ops)
    assert data == theirs  # one decomposition: the one published first
    assert [outcome.kind for outcome in outcomes] == [Replayed.DROPPED, Replayed.DROPPED]


def test_a_claim_another_runner_published_first_stands():
    ops = ops_of(BASE, lambda plan: plan.claim("t-a", "one", T0))
    theirs = plan_of(BASE)
    theirs.claim("t-a", "two", T0)
    data, [outcome] = replay(theirs.doc.to_bytes(), ops)
    assert task_in(plan_of(data), "t-a")["claimed_by"] == "two"
    assert outcome.kind == Replayed.DROPPED and "claimed by two" in outcome.why


def test_a_second_build_of_a_task_yields_to_the_one_published_first():
    ops = ops_of(BASE, lambda plan: plan.done("t-a"))
    theirs = plan_of(BASE)
    theirs.done("t-a")
    theirs.accept("t-a")
    data, [outcome] = replay(theirs.doc.to_bytes(), ops)
    assert data == theirs.doc.to_bytes()
    assert outcome.kind == Replayed.DROPPED and outcome.why  # the transition's own refusal, kept


def test_an_answer_to_a_question_answered_meanwhile_is_dropped():
    plan = plan_of(BASE)
    question = plan.ask("t-a", "which way?", T0, "one")
    asked = plan.doc.to_bytes()
    ops = ops_of(asked, lambda ours: ours.answer(question["id"], "left", T0))
    theirs = plan_of(asked)
    theirs.answer(question["id"], "right", T0)
    data, [outcome] = replay(theirs.doc.to_bytes(), ops)
    assert outcome.kind == Replayed.DROPPED
    [record] = records_of(data, "id", question["id"])
    assert record["answer"] == "right"


def test_spending_replays_as_an_addition_to_the_published_totals():
    spent = {"build": {"runs": 1, "tokens": 10}}
    ops = ops_of(BASE, lambda plan: plan.add_spending(spent))
    theirs = plan_of(BASE)
    theirs.add_spending({"build": {"runs": 2, "tokens": 5}})
    data, [outcome] = replay(theirs.doc.to_bytes(), ops)
    assert outcome.kind == Replayed.APPLIED
    assert plan_of(data).state()["spent"]["build"]["runs"] == 3


def test_a_name_that_is_no_transition_is_never_called():
    data, outcomes = replay(BASE, [{"op": "doc", "args": []}, {"op": "__class__", "args": []}])
    assert data == BASE
    assert [outcome.kind for outcome in outcomes] == [Replayed.DROPPED, Replayed.DROPPED]


def test_an_id_an_operation_made_is_made_again_so_later_operations_still_name_it():
    def ask_and_answer(plan: Plan) -> None:
        question = plan.ask("t-a", "which way?", T0, "one")
        plan.answer(question["id"], "left", T0)

    ours = plan_of(BASE)
    ask_and_answer(ours)
    ops = ops_made(ours)
    assert ops[0]["ids"] == [ops[1]["args"][0]]
    theirs = data_of({"t": "config"}, task("a"), task("b"), task("c", deps=["t-b"]), task("e"))
    data, outcomes = replay(theirs, ops)
    assert [outcome.kind for outcome in outcomes] == [Replayed.APPLIED, Replayed.APPLIED]
    [question] = records_of(data, "kind", "question")
    assert question["id"] == ops[1]["args"][0] and question["answer"] == "left"
