"""`construct --json` gives each task, issue and question of its report as an object (id, name,
status, why, ...), beside the text report's lines."""

from __future__ import annotations

import json

import pytest

from tests.support.construct import add_tasks, construct
from tests.support.reports import assert_costs_unknown


@pytest.mark.slow
def test_the_json_report_lists_tasks_issues_and_questions_as_objects(project):
    from ralph.usecases import questions

    fine, undecided, held = add_tasks(project, "Fine", "Undecided [no-verdict]", "Pick a colour")
    asked = questions.ask(project, "Blue or green?", held, "a person")["id"]
    done = construct(project, "--max-iterations", "1", "--json")
    assert done.returncode == 3, done.stdout + done.stderr
    report = json.loads(done.stdout)
    by_id = {task["id"]: task for task in report["tasks"]}
    assert by_id[fine] == {"id": fine, "name": "Fine", "status": "accepted"}
    assert by_id[undecided]["name"] == "Undecided [no-verdict]" and by_id[undecided]["status"] == "done"
    assert by_id[undecided]["attempts"] == 1 and by_id[undecided]["kill_reason"] is None
    assert by_id[held]["status"] == "blocked" and "Blue or green?" in by_id[held]["why"]
    assert set(by_id) == {fine, undecided, held} and report["issues"] == []
    (question,) = report["open_questions"]
    assert question["id"] == asked and question["task"] == held and question["text"] == "Blue or green?"
    assert report["accepted"] == [f"{fine} Fine"]  # the text report's lines stay as they were


# `make test` has it in process, in stages/test_retries.py:
# test_runs_of_no_known_price_make_the_json_reports_cost_null_not_zero
@pytest.mark.slow
def test_the_json_report_says_null_for_a_cost_no_run_made_known(project):
    """The fake agent reports tokens, no cost, and runs with no model ralph knows a price of:
    the cost is unknown, which --json says as null, never as $0 spent."""
    (task,) = add_tasks(project, "Fine")
    done = construct(project, "--json", "--review")
    assert done.returncode == 0, done.stdout + done.stderr
    assert_costs_unknown(json.loads(done.stdout), 8, task)  # BUILD, VERIFY, CHECK, 5 aspects


def test_a_typed_report_gives_the_json_keys_and_shapes_docs_json_output_names():
    """The report is one typed value; --json is its to_json(): every field by its name, in order,
    enums by their names, items and spending rows as objects (a row's model and models only where
    its runs had them)."""
    from ralph.loop.construct import Ending, Outcome, Report
    from ralph.loop.observe import report_data as items
    from ralph.plan.records import Status
    from ralph.plan.scope import Coverage

    report = Report(
        Outcome.STUCK,
        "stuck",
        5,
        by_stage={
            "BUILD": items.Spent(2, 100, None, 2, "m2", ("m1", "m2")),
            "VERIFY": items.Spent(1, 10, 0.5, 0, "m1"),
        },
        by_task={"t-a": items.Spent(2, 100, None, 2)},
        tasks=[
            items.AcceptedTask("t-b", "B"),
            items.LeftTask("t-a", "A", Status.BLOCKED, "why", 2, "timeout", "ralph/draft/t-a"),
        ],
        issues=[items.OpenIssue("i-a", "text", None)],
        open_questions=[items.OpenQuestion("i-q", "t-a", "Blue?", "2026-11-23", "BUILD agent")],
        resolved=[items.ResolvedIssue("i-r", "old", "no work")],
        ending=Ending.BLOCKED,
        drafts=[items.Draft("t-a", "ralph/draft/t-a")],
        coverage=[Coverage("t-b", ("src/**", "docs/"), ("src/b.py",), ("docs/",), ("setup.py",))],
        reviews=[
            items.AspectReview(
                "docs", 1, "finished", ("t-d",), (items.Finding("t-d", "Say it", items.Fate.OPEN),)
            )
        ],
    )
    data = report.to_json()
    assert list(data) == [
        *("outcome", "message", "exit_code", "iterations", "accepted", "remaining", "log_dir", "tokens"),
        *("stopped", "questions", "failed", "cost_usd", "unknown_cost_runs", "by_stage", "by_task"),
        *("resume", "agent_error", "began", "tasks", "issues", "open_questions", "resolved", "ending"),
        *("drafts", "coverage", "reviews"),
    ]
    assert data["reviews"] == [
        {
            "aspect": "docs",
            "round": 1,
            "end": "finished",
            "findings": [{"id": "t-d", "text": "Say it", "fate": "open"}],
        }
    ]
    assert (data["outcome"], data["ending"]) == ("STUCK", "blocked")
    assert data["by_stage"] == {
        "BUILD": {
            "runs": 2,
            "tokens": 100,
            "cost_usd": None,
            "unknown_runs": 2,
            "model": "m2",
            "models": ["m1", "m2"],
        },
        "VERIFY": {"runs": 1, "tokens": 10, "cost_usd": 0.5, "unknown_runs": 0, "model": "m1"},
    }
    assert data["by_task"] == {"t-a": {"runs": 2, "tokens": 100, "cost_usd": None, "unknown_runs": 2}}
    assert data["tasks"] == [
        {"id": "t-b", "name": "B", "status": "accepted"},
        {
            "id": "t-a", "name": "A", "status": "blocked", "why": "why", "attempts": 2,
            "kill_reason": "timeout", "draft": "ralph/draft/t-a",
        },
    ]  # fmt: skip
    assert data["issues"] == [{"id": "i-a", "text": "text", "why": None}]
    assert data["open_questions"] == [
        {"id": "i-q", "task": "t-a", "text": "Blue?", "asked_at": "2026-11-23", "asked_by": "BUILD agent"}
    ]
    assert data["resolved"] == [{"id": "i-r", "text": "old", "note": "no work"}]
    assert data["drafts"] == [{"task": "t-a", "branch": "ralph/draft/t-a"}]
    assert data["coverage"] == {
        "tasks": [
            {
                "task": "t-b", "scope": ["src/**", "docs/"], "touched": ["src/b.py"],
                "untouched": ["docs/"], "unplanned": ["setup.py"],
            }
        ],
        "total": {"tasks": 1, "scope": 2, "touched": 1, "untouched": 1, "unplanned": 1},
    }  # fmt: skip
    assert json.loads(json.dumps(data)) == data  # plain JSON values throughout
