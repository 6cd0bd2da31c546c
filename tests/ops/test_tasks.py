"""The task commands as functions (ralph/ops/tasks.py): each changes plan.jsonl in one commit whose
subject names what changed, and returns it. What the CLI prints is in the task goldens."""

from __future__ import annotations

import json
from pathlib import Path

from ralph.ops import tasks
from tests.support.gitrepo import git


def last_commit(root: Path) -> tuple[str, list[str]]:
    message = git(root, "log", "-1", "--format=%B").strip()
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
