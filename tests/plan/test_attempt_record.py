"""What BUILD reads of a task once (attempts.BuildHistory) and the one change it writes for an
attempt (attempts.AttemptRecord, record_attempt): the budget questions answered from the history,
a failure worked out on a copy, each kind of change written as one rewrite of the task's line,
and the change replayed by a runner as an operation. VERIFY likewise: what a verifier gave, read
once (verify_changes.Given), and a stopped run written in one rewrite (record_verify_stop)."""

from __future__ import annotations

import pytest

from ralph.plan.attempts import build_history, record_attempt
from ralph.plan.ops import decode, encode
from ralph.plan.plan import Plan
from ralph.plan.records import KillReason, Recorded, Status, Verdict
from ralph.plan.replay import replay
from ralph.plan.run_records import AttemptRecord
from ralph.plan.verify_changes import Given, given_by
from tests.support.plans import BASE, T0, data_of, ops_made, plan_of, task, task_in

REJECTED = data_of(
    {"t": "config"},
    task("a", attempts=3, rebuilds=1, verdict="rejected"),
    {"t": "reject", "id": "t-a", "reason": "the sum is off by one"},
    {"t": "reject", "id": "t-b", "reason": "another task's"},
    {"t": "reject", "id": "t-a", "reason": "the agent run hit its time limit", "kill_reason": "timeout"},
    task("b"),
)
FAILED = AttemptRecord(
    Recorded.FAILED, 10, 0.5, "m", ("src/a.py",), Verdict.GATE_FAILED, "tests fail in a.py"
)


def touched(plan: Plan) -> list[tuple[str, str]]:
    """The records the plan's lines rewritten or added since loading hold: kind and id."""
    return [(line.record["t"], line.record["id"]) for line in plan.doc.touched if line.record is not None]


def test_the_history_holds_the_tasks_reasons_and_answers_its_budget_from_them():
    past = build_history(plan_of(REJECTED), "t-a")
    assert past.task["attempts"] == 3
    assert past.rejections == 2  # its own reject records, the loop's set-aside too
    assert past.verify_reasons == ("the sum is off by one",)  # not the loop's
    assert past.rebuilding
    assert past.out_of_builds(max_attempts=9, max_rebuilds=1)  # a rebuild: its own budget
    assert not past.out_of_builds(max_attempts=3, max_rebuilds=2)
    assert past.rejected_too_often(max_attempts=2, max_rebuilds=9)  # rejected twice
    assert not past.rejected_too_often(max_attempts=3, max_rebuilds=2)


def test_a_task_never_rejected_is_no_rebuild_and_its_attempts_are_its_budget():
    past = build_history(plan_of(data_of(task("a", attempts=2))), "t-a")
    assert (past.rejections, past.rebuilding) == (0, False)
    assert past.out_of_builds(max_attempts=2, max_rebuilds=9)
    assert not past.rejected_too_often(max_attempts=2, max_rebuilds=0)


def test_a_failure_is_worked_out_on_a_copy_of_the_task_and_the_plan_stays_as_it_was():
    plan = plan_of(BASE)
    once = record_attempt(plan, "t-a", FAILED)
    before = plan.doc.to_bytes()
    after = build_history(plan, "t-a").after(FAILED)
    assert after.task["attempts"] == 2
    assert after.task["repeated_failure"] == ["tests fail in a.py", "tests fail in a.py"]
    assert "repeated_failure" not in once  # the plan's own record is untouched
    assert plan.doc.to_bytes() == before


def test_a_failure_after_a_rejection_counts_as_a_rebuild_in_the_preview_and_the_plan():
    plan = plan_of(REJECTED)
    assert build_history(plan, "t-a").after(FAILED).task["rebuilds"] == 2
    assert record_attempt(plan, "t-a", FAILED)["rebuilds"] == 2


@pytest.mark.parametrize(
    "attempt, status, verdict",
    [
        (FAILED, Status.PENDING, Verdict.GATE_FAILED),
        (AttemptRecord(Recorded.BUILT, 10, 0.5, "m", ("b.py", "a.py")), Status.PENDING, Verdict.BUILT),
        (AttemptRecord(Recorded.RESUBMITTED, 10, None), Status.PENDING, Verdict.BUILT),
    ],
)
def test_a_counted_or_resubmitted_attempt_rewrites_the_tasks_line_once(attempt, status, verdict):
    plan = plan_of(BASE)
    written = record_attempt(plan, "t-a", attempt)
    assert touched(plan) == [("task", "t-a")]  # one rewrite, nothing added
    assert (written["s"], written["verdict"], written["tokens"]) == (status, verdict, 10)
    assert written is task_in(plan, "t-a")


def test_a_build_is_counted_with_its_files_sorted_and_its_model():
    plan = plan_of(BASE)
    written = record_attempt(plan, "t-a", AttemptRecord(Recorded.BUILT, 1, 0.5, "m", ("b.py", "a.py")))
    assert (written["attempts"], written["files"], written["model"]) == (1, ["a.py", "b.py"], "m")


def test_a_set_aside_rewrites_the_line_once_and_adds_its_reject_record():
    plan = plan_of(BASE)
    aside = AttemptRecord(
        Recorded.SET_ASIDE, text="too slow", kill_reason=KillReason.TIMEOUT, kill_log="b.log"
    )
    written = record_attempt(plan, "t-a", aside)
    assert touched(plan) == [("task", "t-a"), ("reject", "t-a")]
    assert (written["verdict"], written["kill_reason"], written["kill_log"]) == (
        Verdict.KILLED,
        "timeout",
        "b.log",
    )
    assert plan.reject_reasons("t-a") == ["too slow"]


def test_a_question_blocks_the_task_drops_its_repeat_and_is_what_is_returned():
    plan = plan_of(BASE)
    record_attempt(plan, "t-a", FAILED)
    record_attempt(plan, "t-a", FAILED)  # the same failure twice
    plan.doc.touched = []
    asked = AttemptRecord(Recorded.ASKED, text="How?", asked_at=T0, asked_by="ralph")
    question = record_attempt(plan, "t-a", asked)
    assert touched(plan) == [("task", "t-a"), ("issue", question["id"])]
    assert (question["kind"], question["task"], question["text"]) == ("question", "t-a", "How?")
    task = task_in(plan, "t-a")
    assert (task["s"], task["blocked_by"]) == (Status.BLOCKED, question["id"])
    assert "repeated_failure" not in task and "fingerprint" not in task


def test_a_failure_without_its_verdict_is_refused():
    with pytest.raises(ValueError):
        record_attempt(plan_of(BASE), "t-a", AttemptRecord(Recorded.FAILED, text="why"))


def test_a_set_aside_without_why_is_refused_and_leaves_the_task_as_it_was():
    plan = plan_of(BASE)
    before = dict(task_in(plan, "t-a"))
    with pytest.raises(ValueError):
        record_attempt(plan, "t-a", AttemptRecord(Recorded.SET_ASIDE, text="too slow"))
    assert task_in(plan, "t-a") == before and plan.reject_reasons("t-a") == []


def test_an_attempt_goes_through_a_commit_message_as_its_type_and_a_runner_replays_it():
    ours = plan_of(BASE)
    ours.record_attempt("t-a", FAILED)
    [op] = ops_made(ours)
    assert op["op"] == "record_attempt"
    assert decode(encode(op))["args"][1] == FAILED  # its class, its enums and its files' tuple
    data, [outcome] = replay(BASE, [decode(encode(op))])
    assert outcome.kind == "applied"
    assert data == ours.doc.to_bytes()


# --- VERIFY -------------------------------------------------------------------------------------

DONE = data_of({"t": "config"}, task("a", s="d", files=["a.py"]), task("b"))


def test_what_a_verifier_gave_is_read_once_with_its_verdict_and_what_it_added():
    theirs = plan_of(DONE)
    theirs.reject("t-a", "the sum is off by one")
    [added] = theirs.add_tasks(["Fix the sum"])
    gave = given_by("t-a", plan_of(DONE), theirs)
    assert (gave.verdict, gave.reason) == ("rejected", "the sum is off by one")
    assert [record["id"] for record in gave.added] == [added["id"]]  # not the tasks it started with
    assert given_by("t-a", plan_of(DONE), plan_of(DONE)) == Given()


def test_a_stopped_verify_run_set_aside_is_one_rewrite_and_writes_what_a_kill_then_a_set_aside_did():
    two_steps = plan_of(DONE)
    two_steps.record_verify_kill("t-a", KillReason.TIMEOUT, "v.log")
    two_steps.set_aside("t-a", KillReason.TIMEOUT, "stopped twice", kill_log="v.log")
    once = plan_of(DONE)
    assert once.record_verify_stop("t-a", KillReason.TIMEOUT, "v.log", set_aside="stopped twice") == 1
    assert touched(once) == [("task", "t-a"), ("reject", "t-a")]
    assert once.doc.to_bytes() == two_steps.doc.to_bytes()


def test_a_stopped_verify_run_not_set_aside_stays_done_with_its_stop_counted():
    plan = plan_of(DONE)
    assert plan.record_verify_stop("t-a", KillReason.CONTEXT_LIMIT, "v.log") == 1
    assert touched(plan) == [("task", "t-a")]
    assert task_in(plan, "t-a")["s"] == Status.DONE


# --- DECOMPOSE ----------------------------------------------------------------------------------

KILLED = data_of({"t": "config"}, task("a", kill_reason="timeout", decompose_failures=1), task("b"))


def test_a_refused_decomposition_is_one_write_of_what_four_transitions_did():
    ran = plan_of(KILLED)  # its agent removed the task and made one subtask: too few
    removed = ran.delete("t-a", force=True)[0]
    [part] = ran.add_tasks([{"name": "Part", "parent": "t-a"}])
    ran_bytes = ran.doc.to_bytes()
    four = plan_of(ran_bytes)
    four.delete(part["id"], force=True)
    four.restore_task(removed)
    four.record_decompose_failure("t-a")
    four.block("t-a", "DECOMPOSE failed 2 times")
    once = plan_of(ran_bytes)
    failures = once.record_undecomposed("t-a", removed, [part["id"]], block="DECOMPOSE failed 2 times")
    assert failures == 2
    assert once.doc.to_bytes() == four.doc.to_bytes()
    assert [op["op"] for op in ops_made(once)] == ["record_undecomposed"]


def test_a_task_too_deep_to_decompose_is_blocked_without_a_failure_counted():
    plan = plan_of(KILLED)
    assert plan.record_undecomposed("t-a", task_in(plan, "t-a"), [], counted=False, block="too deep") == 1
    assert touched(plan) == [("task", "t-a")]
    assert (task_in(plan, "t-a")["s"], task_in(plan, "t-a")["blocked_reason"]) == (Status.BLOCKED, "too deep")


def test_a_change_that_adds_a_record_is_not_previewed_on_a_copy():
    aside = AttemptRecord(Recorded.SET_ASIDE, text="too slow", kill_reason=KillReason.TIMEOUT)
    with pytest.raises(ValueError):
        build_history(plan_of(BASE), "t-a").after(aside)
