"""`ralph status` and `ralph query stage` say what is true of the stage: an empty plan has nothing
planned yet (PLAN comes first), a run planning now is in PLAN, and only a plan whose tasks are all
accepted is COMPLETE, once a spec check found its spec met (CHECK before)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os

from tests.support.cli import Ralph
from tests.support.gitrepo import git


def stage_line(ralph: Ralph) -> str:
    return ralph("status").stdout.splitlines()[1]


def test_an_empty_plan_has_nothing_planned_and_an_accepted_one_is_complete(ralph: Ralph):
    assert stage_line(ralph) == (
        "stage PLAN: no spec planned yet (`ralph construct SPEC` plans one first), iteration 0"
    )
    summary = json.loads(ralph("status", "--json").stdout)
    assert (summary["stage"], summary["planned"]) == ("PLAN", False)
    assert ralph("query", "stage").stdout == "PLAN\n"  # the same answer a script gets
    ralph("task", "add", '{"id": "t-aaaaaa", "name": "x"}')
    assert stage_line(ralph).startswith("stage BUILD")
    assert ralph("query", "stage").stdout == "BUILD\n"
    ralph("task", "done", "t-aaaaaa")
    ralph("task", "accept", "t-aaaaaa")
    assert stage_line(ralph) == "stage COMPLETE, iteration 0"
    assert json.loads(ralph("status", "--json").stdout)["planned"] is True
    assert ralph("query", "stage").stdout == "COMPLETE\n"


def test_a_run_planning_now_is_in_plan(ralph: Ralph):
    """The lock held as a running construct holds it, its journal in PLAN (after an earlier spec
    was accepted: the plan alone would say COMPLETE)."""
    ralph("task", "add", '{"id": "t-aaaaaa", "name": "x"}')
    ralph("task", "done", "t-aaaaaa")
    ralph("task", "accept", "t-aaaaaa")
    journal = ralph.root / "build" / "ralph-logs" / "events.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    events = [
        {"ts": "2026-11-23T13:00:01.000+00:00", "event": "construct_begin", "spec": "specs/next.md"},
        {"ts": "2026-11-23T13:00:02.000+00:00", "event": "stage_begin", "stage": "PLAN"},
        {"ts": "2026-11-23T13:00:02.000+00:00", "event": "agent_begin", "stage": "PLAN", "item": None},
    ]
    journal.write_text("".join(json.dumps(event) + "\n" for event in events))
    with open(ralph.root / ".git" / "ralph-construct.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write(f"pid {os.getpid()}, since 2026-11-23 13:00:00 UTC")
        lock.flush()
        assert stage_line(ralph) == "stage PLAN: planning now, iteration 0"
        assert json.loads(ralph("status", "--json").stdout)["stage"] == "PLAN"
    assert stage_line(ralph) == "stage COMPLETE, iteration 0"


def _all_accepted(ralph: Ralph, checked: bool) -> None:
    """specs/app.md planned and its one task accepted, as a run leaves it; `checked`: a spec check
    found nothing missing with this spec and this code (the commit before plan.jsonl's)."""
    root = ralph.root
    (root / "specs").mkdir(exist_ok=True)
    (root / "specs" / "app.md").write_text("# App\n\n- Parse input\n")
    git(root, "add", "specs/app.md")
    git(root, "commit", "-qm", "the spec")
    spec = {"t": "spec", "path": "specs/app.md", "planned": True}
    if checked:
        digest = hashlib.sha256((root / "specs" / "app.md").read_bytes()).hexdigest()
        spec.update(checked_commit=git(root, "rev-parse", "HEAD").strip(), checked_spec=digest)
    records = [
        spec,
        {"t": "state", "spec": "specs/app.md", "iteration": 1, "stage": "COMPLETE"},
        {"t": "accept", "id": "t-aaaaaa", "name": "Parse input", "spec": "specs/app.md"},
    ]
    plan = root / "plan.jsonl"
    plan.write_text(plan.read_text() + "".join(json.dumps(record) + "\n" for record in records))
    git(root, "commit", "-qam", "the plan, all accepted")


def _next(ralph: Ralph) -> str:
    return ralph("query", "next", code=1).stderr


def test_every_task_accepted_and_no_spec_check_yet_is_check(ralph: Ralph):
    """The stage and the next step say what `ralph construct` would do next: a spec check (CHECK)
    while none found this spec and code met; COMPLETE, with no run, once one did (below)."""
    _all_accepted(ralph, checked=False)
    assert ralph("query", "stage").stdout == "CHECK\n"
    assert stage_line(ralph) == "stage CHECK, iteration 1 (specs/app.md)"
    assert "next: CHECK: every task is accepted: `ralph construct` checks the spec" in _next(ralph)


def test_a_spec_a_check_found_met_is_complete_until_code_changes(ralph: Ralph):
    """plan.jsonl changed since the check (its own commit): still met; code changed: CHECK."""
    _all_accepted(ralph, checked=True)
    assert ralph("query", "stage").stdout == "COMPLETE\n"
    assert json.loads(ralph("status", "--json").stdout)["stage"] == "COMPLETE"
    said = _next(ralph)
    assert "next: COMPLETE: " in said and "CHECK" not in said
    (ralph.root / "app.py").write_text("print('more')\n")
    git(ralph.root, "add", "app.py")
    git(ralph.root, "commit", "-qm", "more code")
    assert ralph("query", "stage").stdout == "CHECK\n"
    assert "next: CHECK: " in _next(ralph)


def test_the_cut_of_a_spec_check_waits_for_the_next_check_not_for_a_person(ralph: Ralph):
    """An issue naming work a spec check added beyond max_new_items awaits the next check: with
    everything else accepted the stage is CHECK; an issue kept open for a person is BLOCKED."""
    _all_accepted(ralph, checked=False)
    cut = {
        "t": "issue", "id": "i-cut000", "text": "the spec check of specs/app.md added more ...",
        "spec": "specs/app.md", "keep_open": "ralph cut new work the spec check added", "recheck": True,
    }  # fmt: skip
    plan = ralph.root / "plan.jsonl"
    plan.write_text(plan.read_text() + json.dumps(cut) + "\n")
    assert ralph("query", "stage").stdout == "CHECK\n"
    assert "next: CHECK: " in _next(ralph)
    assert "waiting for a person" not in ralph("status").stdout
    del cut["recheck"]  # the same issue, kept open for a person
    plan.write_text(_without_last_line(plan) + json.dumps(cut) + "\n")
    assert ralph("query", "stage").stdout == "BLOCKED\n"
    assert "next: a person: decides on i-cut000" in _next(ralph)


def _without_last_line(path) -> str:
    return "".join(path.read_text().splitlines(keepends=True)[:-1])
