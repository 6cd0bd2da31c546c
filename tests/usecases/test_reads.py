"""The read commands as functions (ralph/usecases/reads.py): status's counts and spending, the next task,
filtered lists, and check's every problem with the record it names. What people read is in the
status, query and check goldens."""

from __future__ import annotations

import pytest

from ralph.errors import Refused
from ralph.plan.records import Status, TaskView
from ralph.usecases import reads, tasks


def test_status_counts_the_plan_and_names_the_next_task(repo):
    first, second, third = tasks.add(repo, [{"name": "One"}, {"name": "Two"}, {"name": "Three"}])
    tasks.done(repo, first["id"])
    tasks.accept(repo, first["id"])
    tasks.done(repo, second["id"])
    status = reads.status(repo)
    assert (status.pending, status.done, status.accepted, status.blocked) == (1, 1, 1, 0)
    assert status.next == reads.NextTask(third["id"], "Three") and status.waiting == ()
    assert status.run.active is False and status.spent.runs == 0
    assert [task["id"] for task in reads.tasks(repo, Status.DONE)] == [second["id"]]
    assert [task["id"] for task in reads.tasks(repo)] == [second["id"], third["id"]]
    assert reads.next_task(repo)["id"] == third["id"] == reads.task(repo, third["id"])["id"]


def test_no_ready_task_is_a_refusal(repo):
    with pytest.raises(Refused, match="no pending task is ready"):
        reads.next_task(repo)


def test_spending_sums_the_stages_and_says_unknown_where_no_runs_cost_is_known():
    by_stage = {
        "BUILD": {"runs": 3, "tokens": 3000, "cost_usd": 0.1 + 0.2, "unknown_runs": 1},
        "VERIFY": {"runs": 2, "tokens": 500, "unknown_runs": 2},
    }
    open_tasks = [
        TaskView({"id": "t-a", "tokens": 1200, "cost_usd": 0.3}),
        TaskView({"id": "t-b", "unknown_cost_runs": 1}),
        TaskView({"id": "t-c"}),  # never built: not listed
    ]
    spent = reads.spending(by_stage, open_tasks)
    assert spent.to_json()["by_stage"]["BUILD"] == {
        "runs": 3, "tokens": 3000, "cost_usd": 0.3, "unknown_cost_runs": 1
    }  # fmt: skip
    assert spent.by_stage["VERIFY"].cost_usd is None  # unknown, never 0
    assert (spent.runs, spent.tokens, spent.cost_usd, spent.unknown_cost_runs) == (
        5,
        3500,
        0.3,
        3,
    )
    assert list(spent.by_task) == ["t-a", "t-b"] and spent.by_task["t-b"].cost_usd is None
    assert reads.spending({}, []).cost_usd == 0
    assert reads.spending({"PLAN": {"runs": 1, "tokens": 9, "unknown_runs": 1}}, []).cost_usd is None


def test_check_lists_every_problem_with_the_record_its_line_names(repo):
    (repo / "plan.jsonl").write_bytes(
        b'{"t":"task","id":"t-aaaaaa","name":"ok"}\n{"t":"task","id":"t-bbbbbb"}\nnot json\n'
    )
    result = reads.check(repo)
    assert result.records == 1 and [p.line for p in result.problems] == [2, 3]
    assert [(o["line"], o["record_id"]) for o in result.problem_objects()] == [(2, "t-bbbbbb"), (3, None)]
    assert reads.check(repo).problem_objects()[0]["file"] == "plan.jsonl"
