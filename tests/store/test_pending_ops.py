"""Plan changes written without a commit (the construct loop's agents and bookkeeping) keep their
operations until the commit that takes plan.jsonl, which records them when they account for the
whole change, and not otherwise."""

from __future__ import annotations

from ralph.plan.ops import ops_in
from ralph.store import pending_ops
from ralph.store.git import Repo
from ralph.usecases import tasks
from tests.support.gitrepo import git
from tests.support.present import present

A, B = {"id": "t-aaaaaa", "name": "A"}, {"id": "t-bbbbbb", "name": "B"}


def message(root) -> str:
    return git(root, "log", "-1", "--format=%B")


def test_the_loops_commit_of_plan_and_code_records_the_operations_written_before_it(repo):
    tasks.add(repo, [dict(A), dict(B)])
    tasks.done(repo, A["id"], commit=False)
    tasks.reject(repo, A["id"], "not yet", commit=False)
    (repo / "app.txt").write_text("code\n")
    Repo(repo).index.commit_paths({"plan.jsonl", "app.txt"}, "ralph(build): t-aaaaaa A")
    assert [op["op"] for op in present(ops_in(message(repo)))] == ["done", "reject"]
    assert not (Repo(repo).git_dir() / pending_ops.NAME).exists()


def test_a_hand_edit_between_the_writes_leaves_the_commit_without_operations(repo):
    tasks.add(repo, [dict(A), dict(B)])
    tasks.done(repo, A["id"], commit=False)
    plan = repo / "plan.jsonl"
    plan.write_bytes(plan.read_bytes().replace(b'"name": "B"', b'"name": "B by hand"'))
    tasks.done(repo, B["id"], commit=False)
    Repo(repo).index.commit_paths({"plan.jsonl"}, "ralph: the loop's commit")
    assert ops_in(message(repo)) is None  # a runner merges this change by record
    assert message(repo).strip() == "ralph: the loop's commit"


def test_earlier_uncommitted_changes_are_committed_with_their_operations(repo):
    tasks.add(repo, [dict(A), dict(B)])
    tasks.done(repo, A["id"], commit=False)
    tasks.done(repo, B["id"])
    assert [op["op"] for op in present(ops_in(message(repo)))] == ["done"]
    assert git(repo, "log", "-1", "--format=%s", "HEAD^").strip() == (
        "ralph: commit earlier uncommitted changes to plan.jsonl"
    )
    assert ops_in(git(repo, "log", "-1", "--format=%B", "HEAD^")) == [{"op": "done", "args": [A["id"], None]}]


def fenced_line(root, before: bytes, after: bytes, ops, name: str = pending_ops.FENCED_NAME) -> None:
    """A line as a fenced run (an agent) may write it into its own record (`name`: or into
    ralph's, as one could before the fence bound a file of its own in its place)."""
    import json

    from ralph.store.blobs import blob_sha

    pending_ops.fenced_record(Repo(root).git_dir())
    with open(Repo(root).git_dir() / name, "a") as handle:
        handle.write(json.dumps({"before": blob_sha(before), "after": blob_sha(after), "ops": ops}) + "\n")


def test_operations_a_fenced_run_made_are_recorded_as_json(repo):
    """A fenced agent's `ralph task done` writes to its own record; replayed, it makes the plan
    committed: named in the commit, as ralph encodes it."""
    tasks.add(repo, [dict(A), dict(B)])
    plan = repo / "plan.jsonl"
    before = plan.read_bytes()
    git_dir = Repo(repo).git_dir()
    tasks.done(repo, A["id"], commit=False)
    (git_dir / pending_ops.NAME).rename(git_dir / pending_ops.FENCED_NAME)  # as the fence binds it
    Repo(repo).index.commit_paths({"plan.jsonl"}, "ralph(build): t-aaaaaa A")
    assert ops_in(message(repo)) == [{"op": "done", "args": [A["id"], None]}]
    assert f'Ralph-Op: {{"op":"done","args":["{A["id"]}",null]}}' in message(repo)
    assert (git_dir / pending_ops.FENCED_NAME).read_bytes() == b""  # taken
    assert before != plan.read_bytes()


def test_operations_that_never_happened_are_not_written_into_a_commit(repo):
    """An agent that writes its own lines: operations that do not make the committed plan (a
    verdict it never got), or that are no JSON text (a Python repr), give no trailer at all."""
    tasks.add(repo, [dict(A), dict(B)])
    plan = repo / "plan.jsonl"
    before = plan.read_bytes()
    tasks.done(repo, A["id"], commit=False)
    (Repo(repo).git_dir() / pending_ops.NAME).unlink()  # only the agent's lines are left
    after = plan.read_bytes()
    fake = '{"op":"accept","args":["t-bbbbbb"]}'
    fenced_line(repo, before, after, [fake])
    Repo(repo).index.commit_paths({"plan.jsonl"}, "ralph(build): t-aaaaaa A")
    assert ops_in(message(repo)) is None and "Ralph-Op" not in message(repo)
    # A repr, not JSON: the op as a dict where a text belongs is no line of ralph's.
    tasks.done(repo, B["id"], commit=False)
    (Repo(repo).git_dir() / pending_ops.NAME).unlink()
    for name in pending_ops.NAMES:  # not even in ralph's own (as an unfenced agent could write it)
        fenced_line(repo, after, plan.read_bytes(), [{"op": "done", "args": [B["id"], None]}], name)
    Repo(repo).index.commit_paths({"plan.jsonl"}, "ralph(build): t-bbbbbb B")
    assert "Ralph-Op" not in message(repo), message(repo)


def test_a_fenced_line_cannot_hide_ralphs_own(repo):
    tasks.add(repo, [dict(A), dict(B)])
    plan = repo / "plan.jsonl"
    before = plan.read_bytes()
    tasks.done(repo, A["id"], commit=False)
    fenced_line(repo, before, plan.read_bytes(), ['{"op":"done","args":["t-bbbbbb",null]}'])
    Repo(repo).index.commit_paths({"plan.jsonl"}, "ralph(build): t-aaaaaa A")
    assert ops_in(message(repo)) == [{"op": "done", "args": [A["id"], None]}]
