"""The task commands as functions (ralph/usecases/tasks.py): each changes plan.jsonl in one commit whose
subject names what changed, and returns it. What the CLI prints is in the task goldens."""

from __future__ import annotations

import json
from pathlib import Path

from ralph.usecases import tasks
from tests.support.gitrepo import git, said


def last_commit(root: Path) -> tuple[str, list[str]]:
    message = said(root)
    files = git(root, "show", "--name-only", "--format=", "HEAD").split()
    return message, files


def live(root: Path) -> dict[str, dict]:
    records = [json.loads(line) for line in (root / "plan.jsonl").read_text().splitlines() if line.strip()]
    return {r["id"]: r for r in records if r["t"] == "task"}


def test_each_command_is_one_commit_of_plan_jsonl_named_after_what_it_changed(repo):
    first, second = tasks.add(repo, [{"name": "Parse input"}, {"name": "Print report"}])
    assert last_commit(repo) == (f"ralph: task add 2 ({first['id']}, {second['id']})", ["plan.jsonl"])
    assert tasks.done(repo, first["id"])["s"] == "d"
    assert last_commit(repo)[0] == f"ralph: task done {first['id']} Parse input"
    assert [task["id"] for task in tasks.accept(repo, first["id"])] == [first["id"]]
    assert last_commit(repo)[0] == f"ralph: task accept {first['id']} Parse input"
    assert first["id"] not in live(repo)


def test_a_rejection_carries_its_reason_in_the_commit_body(repo):
    (task,) = tasks.add(repo, [{"name": "Parse input"}])
    tasks.done(repo, task["id"])
    rejected = tasks.reject(repo, task["id"], "the parser drops the last line")
    assert rejected["s"] == "p" and live(repo)[task["id"]]["s"] == "p"
    assert (
        last_commit(repo)[0]
        == f"ralph: task reject {task['id']} Parse input\n\nthe parser drops the last line"
    )


def test_delete_rewires_dependents_to_the_parts_and_prioritize_counts_in_its_subject(repo):
    tasks.add(
        repo,
        [
            {"id": "t-bigbig", "name": "Big"},
            {"id": "t-part01", "name": "Part", "parent": "t-bigbig"},
            {"id": "t-user01", "name": "User", "deps": ["t-bigbig"]},
        ],
    )
    deleted, rewired = tasks.delete(repo, "t-bigbig")
    assert deleted["id"] == "t-bigbig" and rewired == ["t-user01"]
    assert live(repo)["t-user01"]["deps"] == ["t-part01"]
    assert last_commit(repo)[0] == "ralph: task delete t-bigbig Big"
    counts = tasks.prioritize(repo)
    assert sum(counts[level] for level in ("high", "medium", "low")) == 2
    assert last_commit(repo)[0] == (
        f"ralph: task prioritize ({counts['high']} high, {counts['medium']} medium, {counts['low']} low)"
    )


def test_commit_false_changes_the_file_without_a_commit(repo):
    head = git(repo, "rev-parse", "HEAD")
    (task,) = tasks.add(repo, [{"name": "Uncommitted"}], commit=False)
    assert git(repo, "rev-parse", "HEAD") == head and task["id"] in live(repo)
    assert git(repo, "status", "--porcelain") == " M plan.jsonl\n"


def test_done_unchanged_resubmits_rejected_work_with_its_argument(repo, ralph):
    (task,) = tasks.add(repo, [{"name": "Parse input"}])
    task_id = task["id"]
    refused = ralph("task", "done", task_id, "--unchanged", "it is right", code=1)
    assert refused.stderr == (
        f"ralph: task {task_id} was not rejected by VERIFY: --unchanged resubmits rejected work as it is\n"
    )
    assert live(repo)[task_id]["s"] == "p"  # untouched
    tasks.done(repo, task_id)
    tasks.reject(repo, task_id, "the parser drops the last line")
    empty = ralph("task", "done", task_id, "--unchanged", "  ", code=2)
    assert empty.stderr == "ralph: --unchanged needs the argument why the work is already correct\n"
    argument = "the last line is a blank one, which the spec drops"
    ralph("task", "done", task_id, "--unchanged", argument)
    record = live(repo)[task_id]
    assert record["s"] == "d" and record["resubmitted"] == argument
    assert last_commit(repo)[0] == (
        f"ralph: task done {task_id} Parse input\n\n"
        "resubmitted unchanged: the last line is a blank one, which the spec drops"
    )
    tasks.reject(repo, task_id, "it still drops it")  # its resubmission rejected: a rebuild spent
    record = live(repo)[task_id]
    assert record["rebuilds"] == 1 and "resubmitted" not in record


def test_a_subtask_keeps_its_parents_priority_as_automatic_when_no_person_chose_it(repo):
    chosen, computed = tasks.add(repo, [{"name": "Chosen", "priority": "low"}, {"name": "Computed"}])
    tasks.prioritize(repo, None)
    assert live(repo)[computed["id"]]["auto_priority"] is True
    parts = tasks.add(repo, [{"name": "Chosen (part 1)", "parent": chosen["id"]}])
    parts += tasks.add(repo, [{"name": "Computed (part 1)", "parent": computed["id"]}])
    records = live(repo)
    mine, auto = (records[part["id"]] for part in parts)
    assert mine["priority"] == "low" and "auto_priority" not in mine  # a person's choice, kept as one
    assert auto["priority"] == records[computed["id"]]["priority"] and auto["auto_priority"] is True


def test_a_subtask_is_offered_its_parents_draft(repo):
    from ralph.store.transaction import transaction

    (parent,) = tasks.add(repo, [{"name": "Killed"}])
    with transaction(repo) as change:  # as the loop records a killed build's draft
        change.plan.record_draft(parent["id"], "ralph/draft/t-killed")
    (part,) = tasks.add(repo, [{"name": "Killed (part 1)", "parent": parent["id"]}])
    (other,) = tasks.add(repo, [{"name": "Unrelated"}])
    records = live(repo)
    assert records[part["id"]]["draft"] == "ralph/draft/t-killed"
    assert "draft" not in records[other["id"]]


def test_a_task_added_with_a_type_keeps_it_and_an_unknown_type_is_refused(repo, ralph):
    ralph("task", "add", "--name", "Fix the crash on empty input", "--type", "bugfix")
    added = [json.loads(line) for line in (repo / "plan.jsonl").read_text().splitlines() if '"task"' in line]
    assert added[-1]["type"] == "bugfix"
    assert ralph("task", "list").stdout.splitlines()[-1].endswith("Fix the crash on empty input  [bugfix]")
    refused = ralph("task", "add", '{"name": "Tidy", "type": "cleanup"}', code=2)
    assert "type" in refused.stderr and "cleanup" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
