"""`construct --json` gives each task, issue and question of its report as an object (id, name,
status, why, ...), beside the text report's lines."""

from __future__ import annotations

import json

import pytest

from tests.support.construct import add_tasks, construct


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


def test_the_json_report_says_null_for_a_cost_no_run_made_known(project):
    """The fake agent reports tokens, no cost, and runs with no model ralph knows a price of:
    the cost is unknown, which --json says as null, never as $0 spent."""
    (task,) = add_tasks(project, "Fine")
    done = construct(project, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["cost_usd"] is None and report["unknown_cost_runs"] == 3  # BUILD, VERIFY, CHECK
    assert report["tokens"] > 0
    assert {stage: row["cost_usd"] for stage, row in report["by_stage"].items()} == {
        "BUILD": None,
        "VERIFY": None,
        "CHECK": None,
    }
    assert report["by_task"][task]["cost_usd"] is None
