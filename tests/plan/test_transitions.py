"""The `Plan` transitions the construct loop makes, and the scoped reads it uses: what each
returns, and the exact bytes it leaves (every line it did not touch stays as it was)."""

from __future__ import annotations

import json

import pytest

from ralph.errors import Refused
from ralph.plan import schedule
from ralph.plan.document import serialize
from ralph.plan.families import fingerprint
from ralph.plan.loader import load
from ralph.plan.plan import Plan
from ralph.plan.records import KillReason, TaskView, Verdict
from ralph.plan.run_records import CheckRecord, DecomposeRecord, VerifyRecord
from tests.support.plans import ops_made, task_in
from tests.support.present import present

# Hand-written lines: odd spacing, key order, CRLF, a blank line, an unknown record type.
SPEC_A = b'{"t": "spec", "path": "specs/a.md"}\n'
STATE = b'{"t":"state",  "spec":"specs/a.md", "iteration": 4}\r\n'
TASK_A = (
    b'{ "t":"task","id":"t-aaaaaa","name":"Build A","s":"p","attempts":1,"tokens":100,'
    b'"attempt_tokens":[100],"cost_usd":0.5,"gate_failure":"tests fail","kill_reason":"timeout",'
    b'"kill_log":"build/ralph-logs/1.log","x-mine":{"keep":true}}\n'
)
BLANK = b"\n"
TASK_B = b'{"t":"task","id":"t-bbbbbb","name":"Build B","s":"d","deps":["t-aaaaaa"],"spec":"specs/b.md"}\n'
UNKNOWN = b'{"t": "milestone", "id": "m-1"}\r\n'
TASK_C = b'{"name": "Build C", "t": "task", "id": "t-cccccc", "spec": "specs/a.md"}\n'
ISSUES = (
    b'{"t":"issue","id":"i-aaaaaa","text":"for a","spec":"specs/a.md"}\n'
    b'{"t":"issue","id":"i-bbbbbb","text":"for b","spec":"specs/b.md"}\n'
    b'{"t":"issue","id":"i-nnnnnn","text":"for any"}\n'
)
ACCEPTED = b'{"t":"accept","id":"t-old000","name":"Old"}\n'
LINES = [SPEC_A, STATE, TASK_A, BLANK, TASK_B, UNKNOWN, TASK_C, ISSUES, ACCEPTED]


def plan_of(*lines: bytes) -> Plan:
    return Plan(load(b"".join(lines or LINES)))


def replaced(old: bytes, record: dict, *appended: dict) -> bytes:
    """LINES with one line replaced by the record's serialization (keeping that line's ending: a
    CRLF line stays CRLF), and records appended."""
    new = serialize(record)[:-1] + (b"\r\n" if old.endswith(b"\r\n") else b"\n")
    lines = [new if line == old else line for line in LINES]
    return b"".join(lines) + b"".join(serialize(extra) for extra in appended)


def test_the_base_plan_loads_and_writes_back_unchanged():
    plan = plan_of()
    assert plan.doc.to_bytes() == b"".join(LINES)
    assert not plan.doc.changed


# --- record_build ----------------------------------------------------------------------------


def test_record_build_counts_the_attempt_and_clears_earlier_failures():
    plan = plan_of()
    task = plan.record_build("t-aaaaaa", ["z.py", "a/b.py", "m.py"], 250, 0.25)
    assert task == {
        "t": "task",
        "id": "t-aaaaaa",
        "name": "Build A",
        "s": "p",
        "attempts": 2,
        "tokens": 350,
        "attempt_tokens": [100, 250],
        "cost_usd": 0.75,
        "x-mine": {"keep": True},
        "files": ["a/b.py", "m.py", "z.py"],
        "verdict": "built",
    }
    assert task is plan.find_task("t-aaaaaa")
    assert plan.doc.to_bytes() == replaced(TASK_A, task)
    assert not TaskView(task).killed and TaskView(task).why_not_done == ""
    assert load(plan.doc.to_bytes())  # the next command can read it


def test_record_build_of_a_first_attempt_without_usage():
    plan = plan_of(TASK_C)
    task = plan.record_build("t-cccccc", [], 0, None)
    assert task == {
        "name": "Build C",
        "t": "task",
        "id": "t-cccccc",
        "spec": "specs/a.md",
        "attempts": 1,
        "files": [],
        "verdict": "built",
        "unknown_cost_runs": 1,  # no cost reported and none known: unknown, not $0
    }
    assert plan.doc.to_bytes() == serialize(task)


def test_record_build_sums_costs_without_float_noise():
    plan = plan_of(TASK_C)
    for cost in (0.1, 0.2, 0.000_000_1):
        task = plan.record_build("t-cccccc", ["x"], 7, cost)
    assert task["cost_usd"] == 0.3
    assert task["tokens"] == 21 and task["attempt_tokens"] == [7, 7, 7] and task["attempts"] == 3


def test_record_build_commit_notes_the_commit_on_that_line_only():
    plan = plan_of()
    plan.record_build_commit("t-bbbbbb", "0123456789abcdef0123456789abcdef01234567")
    task = task_in(plan, "t-bbbbbb")
    assert task["commit"] == "0123456789abcdef0123456789abcdef01234567"
    assert plan.doc.to_bytes() == replaced(TASK_B, task)


@pytest.mark.parametrize(
    "method, args",
    [
        ("record_build", (["x"], 1, None)),
        ("record_build_commit", ("abc",)),
        ("record_build_failure", (Verdict.GATE_FAILED, "why", 1, None)),
        ("set_aside", (KillReason.TIMEOUT, "why")),
    ],
)
@pytest.mark.parametrize(
    "task_id, message", [("t-nope00", "no task t-nope00"), ("t-old000", "already accepted")]
)
def test_the_loops_transitions_refuse_an_unknown_or_accepted_task(method, args, task_id, message):
    plan = plan_of()
    with pytest.raises(Refused, match=message):
        getattr(plan, method)(task_id, *args)
    assert not plan.doc.changed
    assert plan.doc.to_bytes() == b"".join(LINES)


# --- record_build_failure --------------------------------------------------------------------


def test_record_build_failure_sends_the_task_back_with_the_gate_failure():
    plan = plan_of()
    attempts = plan.record_build_failure("t-bbbbbb", Verdict.GATE_FAILED, "ruff: 3 errors", 40, 0.01)
    task = task_in(plan, "t-bbbbbb")
    assert attempts == 1
    assert task == {
        "t": "task",
        "id": "t-bbbbbb",
        "name": "Build B",
        "s": "p",
        "deps": ["t-aaaaaa"],
        "spec": "specs/b.md",
        "attempts": 1,
        "verdict": "gate_failed",
        "gate_failure": "ruff: 3 errors",
        "fingerprint": fingerprint(Verdict.GATE_FAILED, "ruff: 3 errors"),
        "tokens": 40,
        "attempt_tokens": [40],
        "cost_usd": 0.01,
    }
    assert plan.doc.to_bytes() == replaced(TASK_B, task)
    assert TaskView(task).why_not_done == "ruff: 3 errors"

    assert plan.record_build_failure("t-bbbbbb", Verdict.GATE_FAILED, "pytest: 1 failed", 0, None) == 2
    assert (
        task["gate_failure"] == "pytest: 1 failed" and task["tokens"] == 40 and task["attempt_tokens"] == [40]
    )


def test_record_build_failure_adds_to_the_usage_already_recorded():
    plan = plan_of()
    assert plan.record_build_failure("t-aaaaaa", Verdict.GATE_FAILED, "lint", 5, 0.125) == 2
    task = task_in(plan, "t-aaaaaa")
    assert (task["tokens"], task["attempt_tokens"], task["cost_usd"]) == (105, [100, 5], 0.625)
    assert task["gate_failure"] == "lint" and task["x-mine"] == {"keep": True}
    assert plan.doc.to_bytes() == replaced(TASK_A, task)


def test_record_merge_conflict_sends_the_task_back_with_the_files_and_counts_an_attempt():
    plan = plan_of()
    plan.record_build("t-aaaaaa", ["a.py"], 10, None)
    plan.record_build_commit("t-aaaaaa", "c0ffee")
    attempts = plan.record_merge_conflict("t-aaaaaa", ["z.py", "a.py"], 7, 0.5)
    task = task_in(plan, "t-aaaaaa")
    assert attempts == 3 and task["s"] == "p"
    assert task["merge_conflict"] == ["a.py", "z.py"] and task["verdict"] == "merge_conflict"
    assert task["gate_failure"].startswith("merge_conflict: ") and "a.py, z.py" in task["gate_failure"]
    assert "commit" not in task and "files" not in task  # that build is not in the code
    assert (task["tokens"], task["cost_usd"], task["x-mine"]) == (117, 1.0, {"keep": True})
    assert plan.doc.to_bytes() == replaced(TASK_A, task)
    plan.record_build("t-aaaaaa", ["a.py"], 1, None)  # built again: the conflict is history
    assert "merge_conflict" not in task_in(plan, "t-aaaaaa")


def test_an_unmerged_build_adds_what_its_own_runs_spent_and_is_set_aside_at_the_limit():
    plan = plan_of()
    before = dict(task_in(plan, "t-aaaaaa"))
    built = {**before, "tokens": before["tokens"] + 40, "cost_usd": before["cost_usd"] + 0.25}
    assert plan.record_unmerged_build("t-aaaaaa", ["a.py"], built, max_attempts=3) == 2
    task = task_in(plan, "t-aaaaaa")
    assert task["s"] == "p" and (task["tokens"], task["cost_usd"]) == (before["tokens"] + 40, 0.75)
    assert task["kill_reason"] != "doom_loop"  # not set aside below the limit
    assert plan.record_unmerged_build("t-aaaaaa", ["a.py"], task, 3, where="pushed", kill_log="l.log") == 3
    task = task_in(plan, "t-aaaaaa")
    assert task["kill_reason"] == "doom_loop" and task["kill_log"] == "l.log"
    assert "work pushed meanwhile" in task["reject_reason"]


# --- set_aside -------------------------------------------------------------------------------


def test_set_aside_records_the_kill_on_the_task_and_on_a_reject_tombstone():
    plan = plan_of()
    assert plan.rejections("t-cccccc") == 0
    task = plan.set_aside(
        "t-cccccc", KillReason.CONTEXT_LIMIT, "ran out of context", "build/ralph-logs/9.log"
    )
    assert task == {
        "name": "Build C",
        "t": "task",
        "id": "t-cccccc",
        "spec": "specs/a.md",
        "s": "p",
        "reject_reason": "ran out of context",
        "verdict": "killed",
        "kill_reason": "context_limit",
        "kill_log": "build/ralph-logs/9.log",
    }
    tombstone = {
        "t": "reject",
        "id": "t-cccccc",
        "reason": "ran out of context",
        "kill_reason": "context_limit",
    }
    assert plan.doc.to_bytes() == replaced(TASK_C, task, tombstone)
    assert json.loads(plan.doc.lines[-1].raw) == tombstone
    assert plan.rejections("t-cccccc") == 1
    view = TaskView(task)
    assert (
        view.killed and view.kill_reason is KillReason.CONTEXT_LIMIT and view.why_not_done == "context_limit"
    )
    reloaded = Plan(load(plan.doc.to_bytes()))
    assert reloaded.stage() == "DECOMPOSE"


def test_set_aside_of_a_done_task_and_without_a_log():
    plan = plan_of(TASK_B.replace(b',"deps":["t-aaaaaa"]', b""))
    task = plan.set_aside("t-bbbbbb", KillReason.DOOM_LOOP, "the same failure three times")
    assert task["s"] == "p" and task["kill_reason"] == "doom_loop" and "kill_log" not in task
    assert plan.rejections("t-bbbbbb") == 1


def test_rejections_counts_only_that_tasks_reject_records():
    plan = plan_of(
        TASK_C,
        b'{"t":"reject","id":"t-cccccc","reason":"one"}\n',
        b'{"t":"reject","id":"t-other0","reason":"not this task"}\n',
        b'{"t":"reject","id":"t-cccccc","reason":"two","kill_reason":"timeout"}\n',
        b'{"t":"accept","id":"t-cccc00","name":"x"}\n',
    )
    assert plan.rejections("t-cccccc") == 2
    plan.reject("t-cccccc", "three", kill_reason=KillReason.TIMEOUT)
    assert plan.rejections("t-cccccc") == 3
    assert plan.rejections("t-nothing") == 0


# --- add_spec --------------------------------------------------------------------------------


def test_add_spec_to_an_empty_plan_adds_the_spec_and_the_state():
    plan = Plan(load(b""))
    plan.add_spec("specs/a.md")
    assert plan.specs() == ["specs/a.md"]
    assert plan.state() == {"t": "state", "spec": "specs/a.md"}
    assert plan.doc.to_bytes() == serialize({"t": "spec", "path": "specs/a.md"}) + serialize(
        {"t": "state", "spec": "specs/a.md"}
    )


def test_add_spec_again_changes_nothing():
    plan = plan_of()
    plan.add_spec("specs/a.md")
    assert not plan.doc.changed
    assert plan.doc.to_bytes() == b"".join(LINES)


def test_add_spec_of_a_new_spec_appends_it_once_and_makes_it_current():
    plan = plan_of()
    plan.add_spec("specs/b.md")
    plan.add_spec("specs/b.md")
    assert plan.specs() == ["specs/a.md", "specs/b.md"]
    state = plan.state()
    assert state == {"t": "state", "spec": "specs/b.md", "iteration": 4}
    assert plan.doc.to_bytes() == replaced(STATE, state, {"t": "spec", "path": "specs/b.md"})
    plan.add_spec("specs/a.md")  # back to an earlier spec: no second record of it
    assert plan.specs() == ["specs/a.md", "specs/b.md"] and plan.state()["spec"] == "specs/a.md"


# --- scoped reads ----------------------------------------------------------------------------


def test_task_views_with_a_spec_take_that_spec_and_tasks_of_none():
    plan = plan_of()
    assert [v.id for v in plan.task_views()] == ["t-aaaaaa", "t-bbbbbb", "t-cccccc"]
    assert [v.id for v in plan.task_views("specs/a.md")] == ["t-aaaaaa", "t-cccccc"]
    assert [v.id for v in plan.task_views("specs/b.md")] == ["t-aaaaaa", "t-bbbbbb"]
    assert [v.id for v in plan.task_views("specs/other.md")] == ["t-aaaaaa"]
    view = plan.task_views("specs/b.md")[1]
    assert isinstance(view, TaskView) and view.record is plan.find_task("t-bbbbbb")


def test_issues_with_a_spec_take_that_spec_and_issues_of_none():
    plan = plan_of()
    assert [i["id"] for i in plan.issues()] == ["i-aaaaaa", "i-bbbbbb", "i-nnnnnn"]
    assert [i["id"] for i in plan.issues("specs/a.md")] == ["i-aaaaaa", "i-nnnnnn"]
    assert [i["id"] for i in plan.issues("specs/b.md")] == ["i-bbbbbb", "i-nnnnnn"]
    assert [i["id"] for i in plan.issues("specs/other.md")] == ["i-nnnnnn"]


def test_find_task():
    plan = plan_of()
    assert task_in(plan, "t-cccccc") == {
        "name": "Build C",
        "t": "task",
        "id": "t-cccccc",
        "spec": "specs/a.md",
    }
    assert plan.find_task("t-cccccc") is plan.task_lines()[2].record
    assert plan.find_task("t-old000") is None  # accepted: a tombstone, no longer a task
    assert plan.find_task("i-aaaaaa") is None
    assert plan.find_task("t-nope00") is None


def test_reads_see_a_change_made_through_the_plan():
    plan = plan_of()
    assert [v.id for v in plan.task_views("specs/b.md")] == ["t-aaaaaa", "t-bbbbbb"]
    plan.add_tasks([{"id": "t-dddddd", "name": "D", "spec": "specs/b.md"}])
    plan.add_issue("new")  # takes the current spec from the state: specs/a.md
    assert [v.id for v in plan.task_views("specs/b.md")] == ["t-aaaaaa", "t-bbbbbb", "t-dddddd"]
    assert [i["id"] for i in plan.issues("specs/b.md")] == ["i-bbbbbb", "i-nnnnnn"]
    assert len(plan.issues("specs/a.md")) == 3


# --- stopped runs outside BUILD, and a verifier's own copy of the plan -------------------------


def test_record_verify_kill_counts_on_the_done_task_and_a_new_build_clears_it():
    plan = plan_of()
    assert plan.record_verify_kill("t-bbbbbb", KillReason.TIMEOUT, "build/ralph-logs/v1.log") == 1
    assert plan.record_verify_kill("t-bbbbbb", KillReason.CONTEXT_LIMIT, "build/ralph-logs/v2.log") == 2
    task = task_in(plan, "t-bbbbbb")
    assert (task["s"], task["verify_kills"], task["verify_kill_reason"]) == ("d", 2, "context_limit")
    view = TaskView(task)
    assert not view.killed and view.verify_kill_reason is KillReason.CONTEXT_LIMIT
    assert view.why_not_done == "VERIFY stopped 2 times: context_limit, log build/ralph-logs/v2.log"
    plan.record_build("t-bbbbbb", ["b.py"], 0, None)
    assert not {"verify_kills", "verify_kill_reason", "verify_kill_log"} & set(task_in(plan, "t-bbbbbb"))
    assert plan.doc.to_bytes().count(b"\n") == b"".join(LINES).count(b"\n")  # rewritten in place


def test_record_investigation_kill_counts_on_the_issue_and_parking_keeps_it_open():
    from ralph.plan.records import IssueView

    plan = plan_of()
    assert plan.record_investigation_kill("i-aaaaaa", KillReason.TIMEOUT, "build/ralph-logs/i.log") == 1
    issue = IssueView(next(i for i in plan.issues() if i["id"] == "i-aaaaaa"))
    assert (issue.kills, issue.kill_reason, issue.kill_log) == (
        1,
        KillReason.TIMEOUT,
        "build/ralph-logs/i.log",
    )
    assert issue.why_open == "INVESTIGATE stopped 1 time: timeout, log build/ralph-logs/i.log"
    plan.keep_issue_open("i-aaaaaa", "stopped too often")
    assert issue.why_open == "kept open: stopped too often"
    with pytest.raises(Refused, match="no open issue i-zzzzzz"):
        plan.record_investigation_kill("i-zzzzzz", KillReason.TIMEOUT, "x.log")


def test_take_verification_takes_the_verdict_and_additions_and_nothing_else():
    base = plan_of()
    theirs = plan_of()
    theirs.accept("t-bbbbbb")
    theirs.add_tasks([{"id": "t-gap000", "name": "A gap it found"}])
    theirs.add_issue("A question it raised")
    task_in(theirs, "t-cccccc")["notes"] = "scribbled on another task"  # not a verifier's to give
    ours = plan_of()
    taken = ours.take_verification("t-bbbbbb", base, theirs)
    assert taken["verdict"] == "accepted" and taken["tasks"] == ["t-gap000"] and len(taken["issues"]) == 1
    assert "t-bbbbbb" in ours.accepted() and task_in(ours, "t-gap000")["name"] == "A gap it found"
    assert "notes" not in task_in(ours, "t-cccccc")

    earlier = b"".join(LINES) + b'{"t":"reject","id":"t-bbbbbb","reason":"first"}\n'  # rebuilt since
    theirs = Plan(load(earlier))
    theirs.reject("t-bbbbbb", "still wrong")
    ours = Plan(load(earlier))
    taken = ours.take_verification("t-bbbbbb", Plan(load(earlier)), theirs)
    assert (taken["verdict"], taken["reason"]) == ("rejected", "still wrong")
    assert (
        ours.reject_reasons("t-bbbbbb") == ["first", "still wrong"] and task_in(ours, "t-bbbbbb")["s"] == "p"
    )


def test_take_verification_of_a_run_that_gave_nothing_takes_nothing():
    ours = plan_of()
    assert ours.take_verification("t-bbbbbb", plan_of(), plan_of()) == {
        "verdict": None,
        "tasks": [],
        "issues": [],
    }
    assert not ours.doc.changed


def test_record_plan_kill_marks_the_spec_and_a_finished_plan_clears_it():
    plan = plan_of()
    plan.record_plan_kill("specs/a.md", KillReason.TIMEOUT, "build/ralph-logs/plan.log")
    data = plan.doc.to_bytes()
    assert json.loads(data.splitlines()[0]) == {
        "t": "spec",
        "path": "specs/a.md",
        "kill_reason": "timeout",
        "kill_log": "build/ralph-logs/plan.log",
    }
    assert data.replace(data.splitlines(keepends=True)[0], SPEC_A) == b"".join(LINES)

    plan.record_plan_kill("specs/a.md", None)
    assert plan.doc.to_bytes() == serialize({"t": "spec", "path": "specs/a.md"}) + b"".join(LINES[1:])
    untouched = plan_of()
    untouched.record_plan_kill("specs/a.md", None)  # nothing to clear: the line keeps its bytes
    assert untouched.doc.to_bytes() == b"".join(LINES)


# --- questions ------------------------------------------------------------------------------
TASK_D = b'{"t":"task","id":"t-dddddd","name":"Build D","deps":["t-cccccc"],"spec":"specs/a.md"}\n'
ASKED = "2026-11-23T12:00:00+00:00"


def test_ask_blocks_the_task_and_records_the_question_linked_to_it():
    plan = plan_of(*LINES, TASK_D)
    question = plan.ask("t-cccccc", "  SQLite or Postgres?  ", ASKED, "BUILD agent, iteration 4")
    assert question == {
        "t": "issue",
        "id": question["id"],
        "kind": "question",
        "text": "SQLite or Postgres?",
        "task": "t-cccccc",
        "asked_at": ASKED,
        "asked_by": "BUILD agent, iteration 4",
        "spec": "specs/a.md",
    }
    task = task_in(plan, "t-cccccc")
    assert task["s"] == "b" and task["blocked_reason"].startswith(
        f"waiting for the answer to question {question['id']}"
    )
    assert plan.questions() == [question] and plan.questions_of("t-cccccc") == [question]
    # a question is no issue to investigate, and nothing held by it is buildable
    assert question not in plan.issues() and question not in plan.issues("specs/a.md")
    next_one = plan.next_task()
    assert next_one is None or next_one["id"] not in ("t-cccccc", "t-dddddd")
    from ralph.plan import schedule

    assert schedule.held_by_questions(plan.tasks(), plan.questions()) == {"t-cccccc", "t-dddddd"}
    # the other lines keep their bytes; the question is appended after the last record
    data = plan.doc.to_bytes()
    assert data.startswith(b"".join(LINES[:6])) and data.endswith(serialize(question))


def test_answer_unblocks_the_task_once_its_last_question_is_answered():
    plan = plan_of()
    first = plan.ask("t-cccccc", "first?", ASKED)
    second = plan.ask("t-cccccc", "second?", ASKED)
    answered, waiting = plan.answer(first["id"], " yes ", "2026-11-23T13:00:00+00:00")
    task = present(waiting)
    assert answered["answer"] == "yes" and answered["answered_at"] == "2026-11-23T13:00:00+00:00"
    assert task["s"] == "b" and second["id"] in task["blocked_reason"]  # still waits for the second
    _, freed = plan.answer(second["id"], "no", ASKED)
    task = present(freed)
    assert task["s"] == "p" and "blocked_reason" not in task
    assert plan.questions() == [] and [q["id"] for q in plan.questions_of("t-cccccc", answered=True)] == [
        first["id"],
        second["id"],
    ]
    assert present(plan.next_task())["id"] == "t-cccccc"


def test_accepting_a_task_removes_its_answered_questions():
    plan = plan_of()
    question = plan.ask("t-cccccc", "which?", ASKED)
    plan.answer(question["id"], "this", ASKED)
    plan.done("t-cccccc")
    plan.accept("t-cccccc")
    assert plan.questions(answered=True) == [] and b"which?" not in plan.doc.to_bytes()


def test_a_task_blocked_by_the_loop_stays_blocked_after_the_answer():
    plan = plan_of()
    plan.block("t-cccccc", "decomposed too deep")
    question = plan.ask("t-cccccc", "split how?", ASKED)
    _, still = plan.answer(question["id"], "in two", ASKED)
    task = present(still)
    assert task["s"] == "b" and task["blocked_reason"] == "decomposed too deep"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda plan: plan.ask("t-nope00", "why?", ASKED), "no task t-nope00"),
        (lambda plan: plan.ask("t-old000", "why?", ASKED), "already accepted"),
        (lambda plan: plan.ask("t-bbbbbb", "why?", ASKED), "is done"),
        (lambda plan: plan.answer("i-aaaaaa", "yes", ASKED), "it is an issue"),
        (lambda plan: plan.answer("i-zzzzzz", "yes", ASKED), "no question i-zzzzzz"),
    ],
)
def test_ask_and_answer_refuse_what_they_cannot_do(call, message):
    plan = plan_of()
    with pytest.raises(Refused, match=message):
        call(plan)
    assert not plan.doc.changed


def test_a_question_cannot_be_answered_twice_resolved_or_marked_done_around():
    plan = plan_of()
    question = plan.ask("t-cccccc", "which?", ASKED)
    with pytest.raises(Refused, match="is a question"):
        plan.resolve_issue(question["id"])
    with pytest.raises(Refused, match="waiting for the answer"):
        plan.done("t-cccccc")
    plan.answer(question["id"], "this", ASKED)
    with pytest.raises(Refused, match="already answered"):
        plan.answer(question["id"], "that", ASKED)


def test_subtasks_take_the_type_of_the_task_they_were_split_from_unless_they_say_another():
    plan = plan_of(b'{"t": "task", "id": "t-big000", "name": "Big", "type": "bugfix"}\n')
    plan.add_tasks(
        [
            {"id": "t-part-a", "name": "Reproduce and fix", "parent": "t-big000"},
            {"id": "t-part-b", "name": "Regression tests", "parent": "t-big000", "type": "test"},
        ]
    )
    plan.record_decomposition("t-big000", ["t-part-a", "t-part-b"])
    assert [task_in(plan, t).get("type") for t in ("t-part-a", "t-part-b")] == ["bugfix", "test"]


def test_answers_go_down_every_level_of_decomposition_and_leave_with_the_last_task_they_serve():
    plan = plan_of(b'{"t": "task", "id": "t-big000", "name": "Big"}\n')
    question = plan.ask("t-big000", "Cookie or token?", "2026-11-23T10:00:00+00:00")
    plan.answer(question["id"], "Cookie.", "2026-11-23T11:00:00+00:00")
    plan.add_tasks(
        [
            {"id": "t-part-a", "name": "A", "parent": "t-big000"},
            {"id": "t-part-b", "name": "B", "parent": "t-big000"},
        ]
    )
    plan.record_decomposition("t-big000", ["t-part-a", "t-part-b"])
    plan.add_tasks(
        [
            {"id": "t-part-c", "name": "C", "parent": "t-part-a"},
            {"id": "t-part-d", "name": "D", "parent": "t-part-a"},
        ]
    )
    plan.record_decomposition("t-part-a", ["t-part-c", "t-part-d"])
    for task_id in ("t-part-b", "t-part-c", "t-part-d"):
        assert task_in(plan, task_id)["questions"] == [question["id"]]
        assert [q["answer"] for q in plan.answers_for(task_id)] == ["Cookie."]
    for task_id in ("t-part-b", "t-part-c"):
        plan.done(task_id)
        plan.accept(task_id)
        assert plan.questions(answered=True)  # t-part-d still needs it
    plan.done("t-part-d")
    plan.accept("t-part-d")
    assert plan.questions(answered=True) == []


# --- the same failure twice ------------------------------------------------------------------

RUN_ONE = """`pytest -q` exited 1: FAILED tests/test_x.py::test_y - AssertionError: 41 != 42
at /tmp/pytest-of-ann/pytest-17/test_y0/out.txt:12, commit 3fa9c1e0, 2026-11-25T20:31:02Z, in 0.52s
(full output: build/ralph-logs/ralph-20261125-203102-gate-t-bbbbbb.log)"""
RUN_TWO = """`pytest -q` exited 1: FAILED tests/test_x.py::test_y - AssertionError: 40 != 43
at /tmp/pytest-of-ann/pytest-18/test_y1/out.txt:13, commit 9e0d2b47, 2026-11-25T20:33:12Z, in 1.7s
(full output: build/ralph-logs/ralph-20261125-203312-gate-t-bbbbbb-2.log)"""


def test_a_failures_fingerprint_ignores_numbers_ids_temporary_paths_and_times():
    assert fingerprint(Verdict.GATE_FAILED, RUN_ONE) == fingerprint(Verdict.GATE_FAILED, RUN_TWO)
    assert fingerprint(Verdict.GATE_FAILED, RUN_ONE) != fingerprint(Verdict.HOOK_REFUSED, RUN_ONE)
    other_test = RUN_ONE.replace("test_y -", "test_z -")
    assert fingerprint(Verdict.GATE_FAILED, RUN_ONE) != fingerprint(Verdict.GATE_FAILED, other_test)


def test_the_same_failure_twice_in_a_row_is_recorded_with_both_texts():
    plan = plan_of()
    plan.record_build_failure("t-bbbbbb", Verdict.GATE_FAILED, RUN_ONE, 1, None)
    assert "repeated_failure" not in task_in(plan, "t-bbbbbb")
    plan.record_build_failure("t-bbbbbb", Verdict.GATE_FAILED, RUN_TWO, 1, None)
    assert task_in(plan, "t-bbbbbb")["repeated_failure"] == [RUN_ONE, RUN_TWO]
    plan.record_build("t-bbbbbb", ["x"], 1, None)  # a passing build: the count starts over
    assert not {"repeated_failure", "fingerprint"} & set(task_in(plan, "t-bbbbbb"))


def test_different_failures_in_a_row_are_not_the_same_failure():
    plan = plan_of()
    plan.record_build_failure("t-bbbbbb", Verdict.GATE_FAILED, RUN_ONE, 1, None)
    plan.record_build_failure("t-bbbbbb", Verdict.NO_CHANGES, RUN_ONE, 1, None)
    plan.record_build_failure("t-bbbbbb", Verdict.GATE_FAILED, RUN_TWO, 1, None)
    assert "repeated_failure" not in task_in(plan, "t-bbbbbb")


def test_a_repeated_failure_is_forgotten_once_a_different_one_comes_or_a_person_is_asked():
    plan = plan_of()
    for text in (RUN_ONE, RUN_TWO):
        plan.record_build_failure("t-bbbbbb", Verdict.GATE_FAILED, text, 1, None)
    plan.record_build_failure("t-bbbbbb", Verdict.NO_CHANGES, "changed no file", 1, None)
    assert "repeated_failure" not in task_in(plan, "t-bbbbbb")  # the last two differ
    plan.record_build_failure("t-bbbbbb", Verdict.NO_CHANGES, "changed no file", 1, None)
    question = plan.ask_about_repeated_failure("t-bbbbbb", "How?", "2026-11-25T20:00:00+00:00", "ralph")
    task = task_in(plan, "t-bbbbbb")
    assert task["blocked_by"] == question["id"] and not {"fingerprint", "repeated_failure"} & set(task)


def test_take_verification_is_recorded_as_one_operation_of_plain_data_that_replays_to_the_same_plan():
    from ralph.plan.ops import decode, encode
    from ralph.plan.replay import replay

    theirs = plan_of()
    theirs.accept("t-bbbbbb")
    theirs.add_tasks([{"id": "t-gap000", "name": "A gap it found"}])
    ours = plan_of()
    before = ours.doc.to_bytes()
    ours.take_verification("t-bbbbbb", plan_of(), theirs)

    ops = ops_made(ours)
    assert [op["op"] for op in ops] == ["apply_verification"]  # no plan among its arguments
    assert decode(encode(ops[0])) == ops[0]
    again, outcomes = replay(before, ops)
    assert again == ours.doc.to_bytes() and [o.kind for o in outcomes] == ["applied"]


GAP = {"t": "task", "id": "t-gap000", "name": "A gap it found", "s": "p"}


@pytest.mark.parametrize(
    "run",
    [
        VerifyRecord(KillReason.TIMEOUT, "build/ralph-logs/v.log", set_aside="stopped twice"),
        VerifyRecord(verdict="rejected", reason="it prints nothing", added=(GAP,), max_new=5),
        VerifyRecord(verdict="accepted"),
    ],
)
def test_a_verifiers_run_is_one_operation_of_its_typed_value_that_replays_to_the_same_plan(run):
    from ralph.plan.ops import decode, encode
    from ralph.plan.replay import replay

    ours = plan_of()
    before = ours.doc.to_bytes()
    ours.record_verify("t-bbbbbb", run)

    ops = ops_made(ours)
    assert [op["op"] for op in ops] == ["record_verify"]
    assert decode(encode(ops[0]))["args"] == ["t-bbbbbb", run]  # read back as the value it was
    again, outcomes = replay(before, ops)
    assert again == ours.doc.to_bytes() and [o.kind for o in outcomes] == ["applied"]


def test_a_verifiers_run_writes_its_tasks_line_once_with_the_record_it_adds():
    plan = plan_of()
    stopped = VerifyRecord(KillReason.TIMEOUT, "build/ralph-logs/v.log", set_aside="stopped twice")

    taken = plan.record_verify("t-bbbbbb", stopped)

    assert taken == {"stops": 1}
    task = task_in(plan, "t-bbbbbb")
    assert task["s"] == "p" and task["verify_kills"] == 1 and task["kill_reason"] == "timeout"
    assert plan.of("reject")[-1].record == {
        "t": "reject",
        "id": "t-bbbbbb",
        "reason": "stopped twice",
        "kill_reason": "timeout",
    }
    late = plan.record_verify("t-bbbbbb", VerifyRecord(verdict="accepted"))  # no longer done
    assert late == {"verdict": None, "overtaken": True, "tasks": [], "issues": []}


@pytest.mark.parametrize("removed", [False, True])
def test_a_decompose_run_not_decomposed_is_one_operation_of_its_typed_value(removed):
    from ralph.plan.ops import decode, encode

    ours = plan_of()
    found = dict(task_in(ours, "t-aaaaaa"))
    ours.add_tasks([{"id": "t-half00", "name": "Half", "parent": "t-aaaaaa"}])
    if removed:  # its agent removed it, with too few parts
        ours.delete("t-aaaaaa", force=True)
    ours = Plan(load(ours.doc.to_bytes()))
    run = DecomposeRecord(found, drop=("t-half00",), counted=True, block="decomposed too deep")

    assert ours.record_decompose("t-aaaaaa", run) == 1

    task = task_in(ours, "t-aaaaaa")  # put back as it was, when its agent removed it
    assert task["s"] == "b" and task["decompose_failures"] == 1 and task["x-mine"] == {"keep": True}
    assert task["blocked_reason"] == "decomposed too deep" and ours.find_task("t-half00") is None
    ops = ops_made(ours)
    assert [op["op"] for op in ops] == ["record_decompose"]
    assert decode(encode(ops[0]))["args"] == ["t-aaaaaa", run]  # read back as the value it was


def test_a_decomposition_is_one_operation_that_replays_to_the_same_plan():
    from ralph.plan.replay import replay

    ours = plan_of()
    found = dict(task_in(ours, "t-aaaaaa"))
    ours.add_tasks([{"id": f"t-part0{n}", "name": f"Part {n}", "parent": "t-aaaaaa"} for n in (1, 2)])
    before, ours = ours.doc.to_bytes(), Plan(load(ours.doc.to_bytes()))

    assert ours.record_decompose("t-aaaaaa", DecomposeRecord(found, ("t-part01", "t-part02"))) == 0

    assert ours.find_task("t-aaaaaa") is None
    assert {task_in(ours, part)["depth"] for part in ("t-part01", "t-part02")} == {1}
    ops = ops_made(ours)
    again, outcomes = replay(before, ops)
    assert again == ours.doc.to_bytes() and [o.kind for o in outcomes] == ["applied"]


def test_a_spec_checks_write_is_one_operation_of_its_typed_value_that_replays_to_the_same_plan():
    from ralph.plan.ops import decode, encode
    from ralph.plan.replay import replay

    ours = plan_of()
    earlier, mine = ours.add_issue("what an earlier check cut"), ours.add_issue("what this check cut")
    for issue in (earlier, mine):  # as new_work.bound marks them: they await the next check
        line = ours.issue_line(issue["id"])
        line.record["recheck"] = True
        ours.doc.rewrite(line)
    ours = Plan(load(ours.doc.to_bytes()))
    before = ours.doc.to_bytes()
    stopped = CheckRecord(KillReason.TIMEOUT, "build/ralph-logs/c.log")

    assert ours.record_check("specs/a.md", stopped) == 1
    assert ours.record_check("specs/a.md", CheckRecord(commit="abc", digest="d1", cut_issue=mine["id"])) == 0

    spec = ours.spec_line("specs/a.md")
    assert spec is not None and spec.record["checked_commit"] == "abc" and "check_kills" not in spec.record
    assert [issue["id"] for issue in ours.issues()] == ["i-aaaaaa", "i-bbbbbb", "i-nnnnnn", mine["id"]]
    ops = ops_made(ours)
    assert [op["op"] for op in ops] == ["record_check", "record_check"]
    assert decode(encode(ops[0]))["args"] == ["specs/a.md", stopped]  # read back as the value it was
    again, outcomes = replay(before, ops)
    assert again == ours.doc.to_bytes() and [o.kind for o in outcomes] == ["applied", "applied"]


# --- a failure family ------------------------------------------------------------------------

ROOT_FAILS = "FAILED: hopeless.txt gives no answer (full output: build/ralph-logs/gate-t-hopeless.log)"
PART_FAILS = "FAILED: hopeless-part-1.txt gives no answer (full output: build/ralph-logs/gate-t-part01.log)"


def split_family(agent_removed_it: bool = False) -> Plan:
    """t-hopeless failed the same way twice, was set aside and split into t-part01 and t-part02."""
    plan = plan_of(b'{"t": "task", "id": "t-hopeless", "name": "Hopeless", "depth": 0}\n')
    for _ in range(2):
        plan.record_build_failure(
            "t-hopeless", Verdict.GATE_FAILED, ROOT_FAILS, 1, None, files=["work/hopeless.txt"]
        )
    plan.set_aside("t-hopeless", KillReason.REPEATED_FAILURE, "the same failure twice")
    found = dict(task_in(plan, "t-hopeless"))
    parts: list[object] = [{"id": f"t-part0{n}", "name": f"Part {n}", "parent": "t-hopeless"} for n in (1, 2)]
    plan.add_tasks(parts)
    if agent_removed_it:
        plan.delete("t-hopeless")
    plan.record_decomposition("t-hopeless", ["t-part01", "t-part02"], 0, found)
    return plan


@pytest.mark.parametrize("agent_removed_it", [False, True])
def test_a_split_tasks_parts_are_its_family_and_remember_its_failure(agent_removed_it: bool):
    plan = split_family(agent_removed_it)
    for part in ("t-part01", "t-part02"):
        task = task_in(plan, part)
        assert (task["family"], task["depth"]) == ("t-hopeless", 1)
        (remembered,) = task["ancestor_failures"]
        assert remembered == {
            "task": "t-hopeless",
            "fingerprint": fingerprint(Verdict.GATE_FAILED, ROOT_FAILS, ["t-hopeless", "work/hopeless.txt"]),
            "failure": ROOT_FAILS,
        }
    plan.add_tasks([{"id": "t-part11", "name": "Part 1.1", "parent": "t-part01"}])
    plan.record_build_failure("t-part01", Verdict.NO_CHANGES, "changed no file", 1, None)
    plan.record_decomposition("t-part01", ["t-part11"])
    grandchild = task_in(plan, "t-part11")
    assert grandchild["family"] == "t-hopeless"  # the family is the first task split, at every depth
    assert [f["task"] for f in grandchild["ancestor_failures"]] == ["t-hopeless", "t-part01"]


def test_a_parts_first_failure_like_its_ancestors_is_that_failure_again():
    plan = split_family()
    plan.record_build_failure(
        "t-part01", Verdict.GATE_FAILED, PART_FAILS, 1, None, files=["work/hopeless-part-1.txt"]
    )
    task = task_in(plan, "t-part01")
    assert task["repeated_from"] == "t-hopeless" and task["repeated_failure"] == [ROOT_FAILS, PART_FAILS]
    plan.record_build_failure("t-part02", Verdict.GATE_FAILED, PART_FAILS, 1, None)  # not its own file
    assert not {"repeated_from", "repeated_failure"} & set(task_in(plan, "t-part02"))


def test_a_family_question_holds_its_pending_tasks_and_its_answer_frees_them_all():
    plan = split_family()
    plan.add_tasks([{"id": "t-part03", "name": "Part 3", "parent": "t-hopeless"}])
    plan.record_decomposition("t-hopeless", ["t-part03"], 0, {"id": "t-hopeless", "depth": 0})
    plan.add_tasks([{"id": "t-after", "name": "After part 2", "deps": ["t-part02"]}])
    plan.record_build_failure(
        "t-part01", Verdict.GATE_FAILED, PART_FAILS, 1, None, files=["work/hopeless-part-1.txt"]
    )
    question = plan.ask_about_repeated_failure("t-part01", "How?", ASKED, "ralph", "t-hopeless", ["t-part03"])
    assert question["family"] == "t-hopeless"
    status = {task["id"]: (task.get("s", "p"), task.get("blocked_by")) for task in plan.tasks()}
    assert status == {
        "t-part01": ("b", question["id"]),
        "t-part02": ("b", question["id"]),
        "t-part03": ("p", None),  # being built: held once its build is over
        "t-after": ("p", None),
    }
    assert schedule.held_by_questions(plan.tasks(), plan.questions()) == {"t-part01", "t-part02", "t-after"}
    plan.hold_for_question("t-part03", question["id"])
    assert plan.stage() == "WAITING"

    plan.answer(question["id"], "Drop the answer check.", ASKED)

    assert all(task.get("s") == "p" and "blocked_by" not in task for task in plan.tasks())
    assert [q["id"] for q in plan.answers_for("t-part02")] == [question["id"]]  # it reaches all
    plan.done("t-part01")
    plan.accept("t-part01")  # the family still has tasks: the answer stays for them
    assert plan.questions(answered=True)


def test_the_same_rejection_twice_in_a_row_is_a_repeated_failure_and_a_question_starts_the_count_again():
    plan = plan_of(b'{"t": "task", "id": "t-picky0", "name": "Picky", "s": "d", "files": ["sort.py"]}\n')
    plan.reject("t-picky0", "sort.py: 3 items come out unsorted")
    assert "repeated_failure" not in task_in(plan, "t-picky0")
    plan.record_build("t-picky0", ["sort.py"], 1, None)  # a passing rebuild: the rejection is remembered
    plan.done("t-picky0")
    plan.reject("t-picky0", "sort.py: 4 items come out unsorted")
    task = task_in(plan, "t-picky0")
    assert task["repeated_failure"] == [
        "sort.py: 3 items come out unsorted",
        "sort.py: 4 items come out unsorted",
    ]
    plan.ask_about_repeated_failure("t-picky0", "Sorted how?", ASKED, "ralph")
    assert not {"rejection_fingerprint", "repeated_failure"} & set(task_in(plan, "t-picky0"))


def test_a_part_rejected_as_its_ancestor_was_repeats_the_ancestors_failure():
    plan = plan_of(b'{"t": "task", "id": "t-picky0", "name": "Picky", "s": "d", "files": ["sort.py"]}\n')
    plan.reject("t-picky0", "t-picky0: sort.py leaves the list unsorted")
    plan.set_aside("t-picky0", KillReason.DOOM_LOOP, "rejected too often")
    plan.add_tasks([{"id": "t-part01", "name": "Part 1", "parent": "t-picky0"}])
    plan.record_decomposition("t-picky0", ["t-part01"])
    plan.record_build("t-part01", ["sort_part.py"], 1, None)
    plan.done("t-part01")
    plan.reject("t-part01", "t-part01: sort_part.py leaves the list unsorted")
    task = task_in(plan, "t-part01")
    assert task["repeated_from"] == "t-picky0"
    assert task["repeated_failure"] == [
        "t-picky0: sort.py leaves the list unsorted",
        "t-part01: sort_part.py leaves the list unsorted",
    ]
