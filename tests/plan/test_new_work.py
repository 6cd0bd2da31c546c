"""New work one agent run added, bounded by ralph (ralph/plan/new_work.py): at most the limit kept,
duplicates of open tasks by name refused, the rest in one issue kept open for a person."""

from __future__ import annotations

import json

from ralph.plan.loader import load
from ralph.plan.new_work import CutReason, bound_new_work
from ralph.plan.plan import Plan


def _plan(*records: dict) -> Plan:
    return Plan(load("".join(json.dumps(record) + "\n" for record in records).encode()))


BEFORE = (
    {"t": "state", "spec": "specs/app.md"},
    {"t": "spec", "path": "specs/app.md"},
    {"t": "task", "id": "t-parse0", "name": "Parse  input", "s": "p"},
)


def _task(task_id: str, name: str, **more) -> dict:
    return {"t": "task", "id": task_id, "name": name, "s": "p", **more}


def test_duplicates_of_open_tasks_by_name_are_refused_and_dependencies_on_them_repointed():
    before = _plan(*BEFORE)
    after = _plan(
        *BEFORE,
        _task("t-dup001", "  parse INPUT "),
        _task("t-new001", "New thing", deps=["t-dup001"]),
        _task("t-dup002", "new   THING"),
    )

    bounded = bound_new_work(after, before, 5, "VERIFY of t-x")

    assert bounded.kept == ["t-new001"]
    assert [(cut.record["id"], cut.reason, cut.same_as) for cut in bounded.cut] == [
        ("t-dup001", CutReason.DUPLICATE, "t-parse0"),
        ("t-dup002", CutReason.DUPLICATE, "t-new001"),
    ]
    tasks = {task["id"]: task for task in after.tasks()}
    assert set(tasks) == {"t-parse0", "t-new001"}
    assert tasks["t-new001"]["deps"] == ["t-parse0"]  # the task its duplicate repeats
    (issue,) = after.issues()
    assert issue["id"] == bounded.issue and issue["keep_open"] and issue["spec"] == "specs/app.md"
    assert "VERIFY of t-x" in issue["text"]
    assert "- task t-dup001 (duplicate of t-parse0): parse INPUT" in issue["text"]
    assert bounded.summary() == f"added t-new001; cut 2 into {issue['id']}"
    after.check_integrity()


def test_items_past_the_limit_go_into_one_issue_naming_each():
    before = _plan(*BEFORE)
    added = [_task(f"t-gap{n:03}", f"Gap {n}") for n in range(1, 31)]
    added.append({"t": "issue", "id": "i-late01", "text": "One more thing"})
    added.append(_task("t-last01", "Last", deps=["t-gap030", "t-gap001"]))
    after = _plan(*BEFORE, *added)

    bounded = bound_new_work(after, before, 5, "the spec check of specs/app.md")

    assert bounded.kept == [f"t-gap{n:03}" for n in range(1, 6)]
    assert len(bounded.cut) == 27 and {cut.reason for cut in bounded.cut} == {CutReason.OVER_LIMIT}
    names = [task["name"] for task in after.tasks()]
    assert names == ["Parse  input", "Gap 1", "Gap 2", "Gap 3", "Gap 4", "Gap 5"]
    (issue,) = after.issues()  # i-late01 is cut too: one issue, ralph's
    text = issue["text"]
    assert all(f"(over the limit): Gap {n}\n" in text + "\n" for n in range(6, 31))
    assert "issue i-late01 (over the limit): One more thing" in text and "t-last01" in text
    after.check_integrity()


def test_a_run_within_the_limit_keeps_everything_and_makes_no_issue():
    before = _plan(*BEFORE)
    after = _plan(*BEFORE, _task("t-one001", "One"), {"t": "issue", "id": "i-one001", "text": "Look at X"})

    bounded = bound_new_work(after, before, 2, "INVESTIGATE of i-x")

    assert bounded.kept == ["t-one001", "i-one001"] and not bounded.cut and bounded.issue is None
    assert len(after.issues()) == 1 and bounded.summary() == "added t-one001, i-one001"
    assert bound_new_work(_plan(*BEFORE), before, 2, "x").summary() == ""
