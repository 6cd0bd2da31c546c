"""Plan changes written without a commit (the construct loop's agents and bookkeeping) keep their
operations until the commit that takes plan.jsonl, which records them when they account for the
whole change, and not otherwise."""

from __future__ import annotations

from ralph.ops import tasks
from ralph.plan.ops import ops_in
from ralph.store import pending_ops
from ralph.store.git import Repo
from tests.support.gitrepo import git

A, B = {"id": "t-aaaaaa", "name": "A"}, {"id": "t-bbbbbb", "name": "B"}


def message(root) -> str:
    return git(root, "log", "-1", "--format=%B")


def test_the_loops_commit_of_plan_and_code_records_the_operations_written_before_it(repo):
    tasks.add(repo, [dict(A), dict(B)])
    tasks.done(repo, A["id"], commit=False)
    tasks.reject(repo, A["id"], "not yet", commit=False)
    (repo / "app.txt").write_text("code\n")
    Repo(repo).commit_paths({"plan.jsonl", "app.txt"}, "ralph(build): t-aaaaaa A")
    assert [op["op"] for op in ops_in(message(repo))] == ["done", "reject"]
    assert not (Repo(repo).git_dir() / pending_ops.NAME).exists()


def test_a_hand_edit_between_the_writes_leaves_the_commit_without_operations(repo):
    tasks.add(repo, [dict(A), dict(B)])
    tasks.done(repo, A["id"], commit=False)
    plan = repo / "plan.jsonl"
    plan.write_bytes(plan.read_bytes().replace(b'"name": "B"', b'"name": "B by hand"'))
    tasks.done(repo, B["id"], commit=False)
    Repo(repo).commit_paths({"plan.jsonl"}, "ralph: the loop's commit")
    assert ops_in(message(repo)) is None  # a runner merges this change by record
    assert message(repo).strip() == "ralph: the loop's commit"


def test_earlier_uncommitted_changes_are_committed_with_their_operations(repo):
    tasks.add(repo, [dict(A), dict(B)])
    tasks.done(repo, A["id"], commit=False)
    tasks.done(repo, B["id"])
    assert [op["op"] for op in ops_in(message(repo))] == ["done"]
    assert git(repo, "log", "-1", "--format=%s", "HEAD^").strip() == (
        "ralph: commit earlier uncommitted changes to plan.jsonl"
    )
    assert ops_in(git(repo, "log", "-1", "--format=%B", "HEAD^")) == [{"op": "done", "args": [A["id"], None]}]
