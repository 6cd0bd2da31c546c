"""The transitions of the plan, on documents in memory: what each changes, and what it refuses."""

from __future__ import annotations

import json
import re

import pytest

from ralph.errors import InvalidInput, PlanInvalid, RalphError, Refused
from ralph.plan.families import fingerprint
from ralph.plan.loader import load
from ralph.plan.plan import Plan
from ralph.plan.records import KillReason, Verdict
from tests.support.plans import task_in
from tests.support.present import present

GENERATED_TASK_ID = re.compile(r"^t-[0-9a-z]{6}$")
GENERATED_ISSUE_ID = re.compile(r"^i-[0-9a-z]{6}$")


def plan_of(*lines: dict | bytes) -> Plan:
    data = b"".join(line if isinstance(line, bytes) else json.dumps(line).encode() + b"\n" for line in lines)
    return Plan(load(data))


def task(task_id: str, name: str | None = None, **fields) -> dict:
    return {"t": "task", "id": task_id, "name": name or task_id, **fields}


def raw_lines(plan: Plan) -> list[bytes]:
    return [line.raw for line in plan.doc.lines]


def reloaded(plan: Plan) -> Plan:
    """The plan as the next command would read it: the written bytes must load."""
    return Plan(load(plan.doc.to_bytes()))


# --- add -------------------------------------------------------------------------------------


def test_add_generates_ids_and_appends_pending_tasks():
    plan = plan_of(task("t-aaaaaa"))
    before = plan.doc.to_bytes()
    added = plan.add_tasks([{"name": "  Login form  ", "accept": "renders"}, "Plain string task"])
    assert [r["name"] for r in added] == ["Login form", "Plain string task"]
    for record in added:
        assert GENERATED_TASK_ID.match(record["id"]), record["id"]
        assert record["s"] == "p" and record["t"] == "task"
    assert added[0]["accept"] == "renders"
    assert len({r["id"] for r in added} | {"t-aaaaaa"}) == 3
    data = plan.doc.to_bytes()
    assert data.startswith(before)
    assert [json.loads(line) for line in data[len(before) :].splitlines()] == added
    assert [t["id"] for t in reloaded(plan).tasks()] == ["t-aaaaaa", added[0]["id"], added[1]["id"]]


def test_add_drops_empty_optional_fields_and_wraps_a_single_dep():
    plan = plan_of(task("t-aaaaaa"))
    (record,) = plan.add_tasks([{"name": "x", "notes": "", "accept": None, "deps": "t-aaaaaa", "spec": ""}])
    assert record == {"t": "task", "id": record["id"], "name": "x", "s": "p", "deps": ["t-aaaaaa"]}


def test_add_with_given_ids_and_deps_within_one_batch():
    plan = plan_of(task("t-base"), {"t": "accept", "id": "t-gone", "name": "old"})
    added = plan.add_tasks(
        [
            {"id": "t-second", "name": "second", "deps": ["t-first", "t-gone"]},
            {"id": "t-first", "name": "first", "deps": ["t-base"], "priority": "high"},
        ]
    )
    assert [r["id"] for r in added] == ["t-second", "t-first"]
    assert added[0]["deps"] == ["t-first", "t-gone"]
    assert added[1]["priority"] == "high"
    assert {t["id"] for t in reloaded(plan).tasks()} == {"t-base", "t-second", "t-first"}


def test_add_takes_the_spec_of_the_loop_state_unless_given():
    plan = plan_of({"t": "state", "iteration": 3, "spec": "specs/a.md"})
    first, second = plan.add_tasks([{"name": "a"}, {"name": "b", "spec": "specs/b.md"}])
    assert first["spec"] == "specs/a.md"
    assert second["spec"] == "specs/b.md"


@pytest.mark.parametrize(
    "items, error, message",
    [
        ([], InvalidInput, "no task given"),
        ([{"accept": "x"}], InvalidInput, 'task needs a "name"'),
        ([{"name": ""}], InvalidInput, "field 'name' must be a non-empty string"),
        ([{"name": "   "}], InvalidInput, "field 'name' must be a non-empty string"),
        ([{"name": "x", "s": "d"}], InvalidInput, "unknown field s"),
        ([{"name": "x", "bogus": 1, "t": "issue"}], InvalidInput, "unknown fields bogus, t"),
        ([{"name": "x", "priority": "urgent"}], InvalidInput, "field 'priority'"),
        ([{"name": "x", "id": "T-UPPER"}], InvalidInput, "field 'id' must be a string matching"),
        ([{"name": "x", "deps": [3]}], InvalidInput, "field 'deps'"),
        ([{"name": 5}], InvalidInput, "field 'name'"),
        ([7], InvalidInput, 'task must be a JSON object with at least a "name", not int'),
        ([{"name": "ok"}, None], InvalidInput, "task 2 must be a JSON object"),
        ([{"name": "x", "deps": ["t-nowhere"]}], Refused, "task 'x' depends on unknown task t-nowhere"),
        ([{"name": "x", "id": "t-aaaaaa"}], Refused, "id t-aaaaaa is already in the plan"),
        ([{"name": "x", "id": "t-gone"}], Refused, "id t-gone is already in the plan"),
        ([{"name": "x", "id": "t-new"}, {"name": "y", "id": "t-new"}], Refused, "task 2: id t-new"),
    ],
)
def test_add_refuses_bad_input_and_changes_nothing(items, error, message):
    plan = plan_of(task("t-aaaaaa"), {"t": "accept", "id": "t-gone"})
    before = plan.doc.to_bytes()
    with pytest.raises(error) as caught:
        plan.add_tasks(items)
    assert message in str(caught.value)
    assert plan.doc.to_bytes() == before
    assert not plan.doc.changed


def test_add_refuses_a_task_that_depends_on_itself_as_bad_input():
    plan = plan_of(task("t-aaaaaa"))
    before = plan.doc.to_bytes()
    with pytest.raises(InvalidInput) as caught:
        plan.add_tasks([{"id": "t-self", "name": "x", "deps": ["t-self"]}])
    assert "depends on itself" in str(caught.value)
    assert "plan.jsonl:0" not in str(caught.value)
    assert plan.doc.to_bytes() == before


def test_add_refuses_a_cycle_within_the_batch_as_bad_input():
    plan = plan_of(task("t-aaaaaa"))
    before = plan.doc.to_bytes()
    with pytest.raises(InvalidInput) as caught:
        plan.add_tasks(
            [
                {"id": "t-one", "name": "one", "deps": ["t-three"]},
                {"id": "t-two", "name": "two", "deps": ["t-one"]},
                {"id": "t-three", "name": "three", "deps": ["t-two"]},
            ]
        )
    assert "dependency cycle" in str(caught.value)
    assert "plan.jsonl:0" not in str(caught.value)
    assert plan.doc.to_bytes() == before


# --- done ------------------------------------------------------------------------------------


def test_done_marks_the_next_task_by_default_and_rewrites_only_its_line():
    plan = plan_of(
        b'{"t":"spec",  "path":"specs/a.md"}\n',
        task("t-later", deps=["t-first"]),
        b'{"t": "task", "name": "First", "id": "t-first", "x-extra": 1}\n',
    )
    before = raw_lines(plan)
    record = plan.done(None)
    assert record["id"] == "t-first" and record["s"] == "d"
    after = raw_lines(plan)
    assert after[:2] == before[:2]
    assert json.loads(after[2]) == {"t": "task", "name": "First", "id": "t-first", "x-extra": 1, "s": "d"}
    assert present(reloaded(plan).next_task())["id"] == "t-later"


def test_done_refuses_a_blocked_task():
    plan = plan_of(task("t-a"), task("t-b", deps=["t-a"]))
    before = plan.doc.to_bytes()
    with pytest.raises(Refused, match=r"task t-b is blocked by t-a \(not done yet\)"):
        plan.done("t-b")
    assert plan.doc.to_bytes() == before


def test_done_refuses_a_task_already_done_accepted_or_unknown():
    plan = plan_of(task("t-a", s="d"), {"t": "accept", "id": "t-old"})
    with pytest.raises(Refused, match="task t-a is already done"):
        plan.done("t-a")
    with pytest.raises(Refused, match="task t-old is already accepted"):
        plan.done("t-old")
    with pytest.raises(Refused, match="no task t-zzz"):
        plan.done("t-zzz")
    with pytest.raises(Refused, match="no pending task is ready"):
        plan.done(None)
    assert not plan.doc.changed


def test_done_allows_a_task_whose_deps_are_done_or_accepted():
    plan = plan_of(task("t-a", s="d"), {"t": "accept", "id": "t-b"}, task("t-c", deps=["t-a", "t-b"]))
    assert plan.done("t-c")["s"] == "d"


# --- accept ----------------------------------------------------------------------------------


def test_accept_removes_the_task_and_appends_a_tombstone():
    plan = plan_of(task("t-a", "Alpha", s="d", notes="n"), task("t-b"), b"\n")
    before = raw_lines(plan)
    (accepted,) = plan.accept("t-a")
    assert accepted["id"] == "t-a" and accepted["notes"] == "n"
    after = raw_lines(plan)
    assert after[0] == before[1]
    assert json.loads(after[1]) == {"t": "accept", "id": "t-a", "name": "Alpha"}
    assert after[2] == b"\n"
    again = reloaded(plan)
    assert again.accepted() == {"t-a"}
    assert [t["id"] for t in again.tasks()] == ["t-b"]


def test_accept_with_no_id_accepts_every_done_task():
    plan = plan_of(task("t-a", s="d"), task("t-b"), task("t-c", s="d", deps=["t-a"]))
    accepted = plan.accept(None)
    assert [r["id"] for r in accepted] == ["t-a", "t-c"]
    again = reloaded(plan)
    assert again.accepted() == {"t-a", "t-c"}
    assert [t["id"] for t in again.tasks()] == ["t-b"]


def test_accept_refuses_pending_and_nothing_done():
    plan = plan_of(task("t-a"))
    with pytest.raises(Refused, match="task t-a is pending; only a done task can be accepted"):
        plan.accept("t-a")
    with pytest.raises(Refused, match="nothing to accept: no task is done"):
        plan.accept(None)
    assert not plan.doc.changed


def test_an_accepted_task_still_satisfies_its_dependents():
    plan = plan_of(task("t-a", s="d"), task("t-b", deps=["t-a"]))
    plan.accept("t-a")
    again = reloaded(plan)
    assert present(again.next_task())["id"] == "t-b"
    again.done("t-b")


# --- reject ----------------------------------------------------------------------------------


def test_reject_sends_the_task_back_with_the_reason_and_a_tombstone():
    plan = plan_of(task("t-a", s="d"), task("t-b"))
    before = raw_lines(plan)
    record = plan.reject("t-a", "the form does not render")
    assert record["s"] == "p" and record["reject_reason"] == "the form does not render"
    after = raw_lines(plan)
    assert json.loads(after[0]) == {
        "t": "task",
        "id": "t-a",
        "name": "t-a",
        "s": "p",
        "reject_reason": "the form does not render",
        "verdict": "rejected",
        # the next rejection is compared with it: the same one twice asks a person
        "rejection_fingerprint": fingerprint(Verdict.REJECTED, "the form does not render", ["t-a"]),
    }
    assert after[1] == before[1]
    assert json.loads(after[2]) == {"t": "reject", "id": "t-a", "reason": "the form does not render"}
    again = reloaded(plan)
    assert [t["id"] for t in again.tasks() if t.get("s", "p") == "p"] == ["t-a", "t-b"]
    assert again.stage() == "BUILD"


def test_reject_without_an_id_needs_exactly_one_done_task():
    plan = plan_of(task("t-a", s="d"), task("t-b"))
    assert plan.reject(None, "why")["id"] == "t-a"
    with pytest.raises(RalphError, match="no task is done"):
        plan.reject(None, "why")
    two = plan_of(task("t-a", s="d"), task("t-b", s="d"))
    with pytest.raises(InvalidInput, match=r"2 tasks are done \(t-a, t-b\)"):
        two.reject(None, "why")


def test_reject_refuses_a_pending_task_and_an_empty_reason():
    plan = plan_of(task("t-a"), task("t-b", s="d"))
    with pytest.raises(Refused, match="task t-a is pending"):
        plan.reject("t-a", "why")
    with pytest.raises(InvalidInput, match="needs a reason"):
        plan.reject("t-b", "  ")
    assert not plan.doc.changed


def test_reject_with_a_kill_reason_takes_a_pending_task_to_decompose():
    plan = plan_of(task("t-a"))
    record = plan.reject(
        "t-a", "ran out of time", kill_reason=KillReason.TIMEOUT, kill_log="build/ralph-logs/1.log"
    )
    assert record["kill_reason"] == "timeout" and record["kill_log"] == "build/ralph-logs/1.log"
    again = reloaded(plan)
    assert again.doc.records()[-1].record == {
        "t": "reject",
        "id": "t-a",
        "reason": "ran out of time",
        "kill_reason": "timeout",
    }
    assert again.stage() == "DECOMPOSE"
    assert again.next_task() is None


# --- delete ----------------------------------------------------------------------------------


def test_delete_rewires_dependents_to_the_children():
    plan = plan_of(
        task("t-big"),
        task("t-part1", parent="t-big"),
        task("t-part2", parent="t-big", deps=["t-part1"]),
        task("t-user", deps=["t-other", "t-big"]),
        task("t-other"),
        b'{"t":"spec" , "path":"untouched"}\n',
    )
    before = raw_lines(plan)
    removed, rewired = plan.delete("t-big")
    assert removed["id"] == "t-big" and rewired == ["t-user"]
    after = raw_lines(plan)
    assert after[:2] == before[1:3]
    assert json.loads(after[2])["deps"] == ["t-other", "t-part1", "t-part2"]
    assert after[3:] == before[4:]
    assert [t["id"] for t in reloaded(plan).tasks()] == ["t-part1", "t-part2", "t-user", "t-other"]


def test_delete_refuses_when_dependents_would_lose_a_dependency_unless_forced():
    plan = plan_of(task("t-a"), task("t-b", deps=["t-a", "t-c"]), task("t-c"))
    before = plan.doc.to_bytes()
    with pytest.raises(Refused, match="t-b depends on t-a; decompose it first or use --force"):
        plan.delete("t-a")
    assert plan.doc.to_bytes() == before
    _, rewired = plan.delete("t-a", force=True)
    assert rewired == ["t-b"]
    assert [t.get("deps") for t in reloaded(plan).tasks()] == [["t-c"], None]


def test_delete_of_a_task_with_no_dependents_removes_only_its_line():
    plan = plan_of(task("t-a"), task("t-b"), task("t-c"))
    before = raw_lines(plan)
    plan.delete("t-b")
    assert raw_lines(plan) == [before[0], before[2]]


def test_delete_does_not_make_a_child_depend_on_itself():
    plan = plan_of(
        task("t-big"), task("t-part", parent="t-big", deps=["t-big"]), task("t-user", deps=["t-big"])
    )
    plan.delete("t-big")
    again = reloaded(plan)
    assert [t.get("deps") for t in again.tasks()] == [[], ["t-part"]]


def test_delete_refuses_an_unknown_or_accepted_task():
    plan = plan_of(task("t-a"), {"t": "accept", "id": "t-old"})
    with pytest.raises(Refused, match="no task t-zzz"):
        plan.delete("t-zzz")
    with pytest.raises(Refused, match="already accepted"):
        plan.delete("t-old")


# --- prioritize ------------------------------------------------------------------------------


def test_prioritize_keeps_explicit_priorities_and_marks_auto_ones():
    plan = plan_of(
        task("t-root", "Set up the schema"),
        task("t-mid", "Write the model", deps=["t-root"]),
        task("t-top", "Expose the model over the API", deps=["t-mid"]),
        task("t-mine", "Something I decided", priority="low"),
        task("t-docs", "Update the README"),
        task("t-done", "Already built", s="d"),
    )
    before = raw_lines(plan)
    counts = plan.prioritize()
    assert counts == {"prioritized": 5, "high": 2, "medium": 1, "low": 2, "changed": 4}
    by_id = {t["id"]: t for t in plan.tasks()}
    assert (by_id["t-root"]["priority"], by_id["t-mid"]["priority"]) == ("high", "high")
    assert by_id["t-top"]["priority"] == "medium"
    assert by_id["t-docs"]["priority"] == "low"
    for task_id in ("t-root", "t-mid", "t-top", "t-docs"):
        assert by_id[task_id]["auto_priority"] is True
    assert by_id["t-mine"] == {"t": "task", "id": "t-mine", "name": "Something I decided", "priority": "low"}
    after = raw_lines(plan)
    assert after[3] == before[3]  # explicit: line untouched
    assert after[5] == before[5]  # done: out of scope
    assert "priority" not in by_id["t-done"]


def test_prioritize_again_changes_nothing_and_rewrites_only_changed_lines():
    plan = plan_of(task("t-a", "Set up"), task("t-b", "Use it", deps=["t-a"]))
    plan.prioritize()
    settled = Plan(load(plan.doc.to_bytes()))
    counts = settled.prioritize()
    assert counts["changed"] == 0
    assert not settled.doc.changed
    # A new task that makes t-b a blocker: only the lines whose priority changes are rewritten.
    data = settled.doc.to_bytes() + json.dumps(task("t-c", "Build on it", deps=["t-b"])).encode() + b"\n"
    grown = Plan(load(data))
    before = raw_lines(grown)
    counts = grown.prioritize()
    after = raw_lines(grown)
    changed = [i for i, (old, new) in enumerate(zip(before, after, strict=True)) if old != new]
    assert counts["changed"] == len(changed) >= 1
    for index in changed:
        assert json.loads(after[index])["auto_priority"] is True


def test_prioritize_recomputes_auto_priorities():
    plan = plan_of(task("t-a", "Tidy the docs", priority="high", auto_priority=True))
    counts = plan.prioritize()
    assert counts["changed"] == 1
    assert plan.tasks()[0]["priority"] == "low"


def test_prioritize_with_a_spec_takes_that_spec_and_tasks_without_one():
    plan = plan_of(
        task("t-a", "Update the docs", spec="specs/a.md"),
        task("t-b", "Update the docs", spec="specs/b.md"),
        task("t-c", "Update the docs"),
    )
    counts = plan.prioritize("specs/a.md")
    assert counts["prioritized"] == 2
    assert [t.get("priority") for t in plan.tasks()] == ["low", None, "low"]


# --- issues and state ------------------------------------------------------------------------


def test_issue_add_and_resolve():
    plan = plan_of({"t": "state", "iteration": 1, "spec": "specs/a.md"}, task("t-a"))
    issue = plan.add_issue("  Is the cookie HttpOnly?  ", "high")
    assert GENERATED_ISSUE_ID.match(issue["id"])
    assert issue == {
        "t": "issue",
        "id": issue["id"],
        "text": "Is the cookie HttpOnly?",
        "priority": "high",
        "spec": "specs/a.md",
    }
    assert reloaded(plan).stage() == "INVESTIGATE"
    with pytest.raises(InvalidInput, match="field 'text'"):
        plan.add_issue("   ")
    before = raw_lines(plan)
    assert plan.resolve_issue(issue["id"]) == issue
    assert raw_lines(plan) == before[:-1]
    with pytest.raises(Refused, match=f"no open issue {issue['id']}"):
        plan.resolve_issue(issue["id"])


def test_update_state_rewrites_its_line_only_when_something_changes():
    plan = plan_of(task("t-a"))
    plan.update_state(iteration=1, stage="BUILD")
    assert plan.iteration() == 1
    data = plan.doc.to_bytes()
    again = Plan(load(data))
    again.update_state(iteration=1)
    assert not again.doc.changed
    again.update_state(iteration=2)
    assert again.iteration() == 2
    assert again.doc.to_bytes().count(b'"state"') == 1


def test_check_integrity_refuses_what_the_loader_would():
    plan = plan_of(task("t-a"))
    plan.doc.append(task("t-a", "again"))
    with pytest.raises(PlanInvalid, match="duplicate id t-a"):
        plan.check_integrity()


# --- questions block through a field, not through words ---------------------------------------


def test_a_question_blocks_its_task_through_blocked_by_and_the_answer_frees_it():
    plan = plan_of(task("t-a"))
    first = plan.ask("t-a", "SQLite or Postgres?", "2026-01-01T00:00:00+00:00")
    second = plan.ask("t-a", "Which port?", "2026-01-01T00:01:00+00:00")
    blocked = task_in(plan, "t-a")
    assert blocked["s"] == "b" and blocked["blocked_by"] == second["id"]  # the latest asked
    plan.answer(second["id"], "8080", "2026-01-01T00:02:00+00:00")
    assert task_in(plan, "t-a")["blocked_by"] == first["id"]  # the one still open
    plan.answer(first["id"], "SQLite", "2026-01-01T00:03:00+00:00")
    freed = task_in(reloaded(plan), "t-a")
    assert freed["s"] == "p" and "blocked_by" not in freed and "blocked_reason" not in freed


def test_rewording_blocked_reason_changes_nothing_a_question_decides():
    plan = plan_of(task("t-a"))
    question = plan.ask("t-a", "SQLite or Postgres?", "2026-01-01T00:00:00+00:00")
    task_in(plan, "t-a")["blocked_reason"] = "Ana decides the database on Monday"  # a person's words
    with pytest.raises(Refused, match="Ana decides"):
        plan.done("t-a")
    plan.answer(question["id"], "SQLite", "2026-01-01T00:02:00+00:00")
    assert task_in(plan, "t-a")["s"] == "p"


def test_a_block_by_the_loop_is_not_lifted_by_an_answer():
    plan = plan_of(task("t-a"))
    question = plan.ask("t-a", "SQLite or Postgres?", "2026-01-01T00:00:00+00:00")
    plan.block("t-a", "decomposed too deep")
    assert "blocked_by" not in task_in(plan, "t-a")
    plan.answer(question["id"], "SQLite", "2026-01-01T00:02:00+00:00")
    assert task_in(plan, "t-a")["s"] == "b"


def test_a_plan_written_before_blocked_by_still_reads_its_question_from_blocked_reason():
    question = {"t": "issue", "id": "i-q00001", "kind": "question", "text": "Port?", "task": "t-a"}
    legacy = task("t-a", s="b", blocked_reason="waiting for the answer to question i-q00001: Port?")
    plan = plan_of(legacy, question)
    with pytest.raises(Refused, match="waiting for the answer to question i-q00001"):
        plan.done("t-a")
    plan.answer("i-q00001", "8080", "2026-01-01T00:02:00+00:00")
    assert task_in(plan, "t-a")["s"] == "p" and "blocked_reason" not in task_in(plan, "t-a")
