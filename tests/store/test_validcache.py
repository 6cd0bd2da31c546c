"""The cache of plan contents already proven valid: it skips work, never a check."""

from __future__ import annotations

import pytest

from ralph.errors import PlanInvalid
from ralph.store import reader, validcache
from ralph.store import transaction as store
from ralph.usecases import tasks
from tests.support.cli import ralph_process


def test_a_proven_plan_is_read_without_validating_it_again(repo, monkeypatch):
    tasks.add(repo, [{"name": "Cached"}])
    data = (repo / "plan.jsonl").read_bytes()
    assert validcache.known_valid(repo, data)  # the command that wrote it proved it

    import ralph.plan.loader

    def no_validation(record):
        raise AssertionError("validated a plan already proven valid")

    monkeypatch.setattr(ralph.plan.loader, "record_problems", no_validation)
    assert [t["name"] for t in reader.read_plan(repo).tasks()] == ["Cached"]


def test_any_edit_brings_back_the_full_validation(repo):
    tasks.add(repo, [{"name": "Cached"}])
    assert ralph_process(repo, "query", "next").returncode == 0
    path = repo / "plan.jsonl"
    path.write_bytes(path.read_bytes().replace(b'"s": "p"', b'"s": "x"'))
    refused = ralph_process(repo, "query", "next")
    assert refused.returncode == 2
    assert refused.stderr.startswith("ralph: plan.jsonl:") and "'s' must be one of" in refused.stderr


def test_a_change_that_would_leave_the_plan_invalid_is_never_written(repo):
    before = (repo / "plan.jsonl").read_bytes()
    refused = pytest.raises(PlanInvalid, match="task field 'name' must be a non-empty string")
    with refused, store.transaction(repo) as change:
        change.plan.doc.append({"t": "task", "id": "t-bad000", "name": ""})
    assert (repo / "plan.jsonl").read_bytes() == before


def test_the_cache_lives_in_the_git_directory(repo):
    tasks.add(repo, [{"name": "Cached"}])
    assert (repo / ".git" / validcache.CACHE_NAME).is_file()
    assert not [p for p in repo.iterdir() if "valid" in p.name]


def test_a_plan_this_process_proved_is_vouched_for_in_another_work_tree(repo, tmp_path, monkeypatch):
    # The loop copies its plan into a verifier's checkout: the verifier's `ralph` commands then
    # read it without validating it again. Bytes this process never proved are not vouched for.
    tasks.add(repo, [{"name": "Vouched"}])
    data = (repo / "plan.jsonl").read_bytes()
    reader.read_plan(repo)
    other = tmp_path / "checkout"
    (other / ".git").mkdir(parents=True)
    reader.vouch(other, data)
    assert validcache.known_valid(other, data)
    unproven = data + b'{"t": "task", "id": "t-unseen", "name": "Never loaded here"}\n'
    reader.vouch(other, unproven)
    assert not validcache.known_valid(other, unproven)
    assert validcache.known_valid(other, data)


def test_a_plan_read_here_is_vouched_for_after_the_proven_contents_let_it_go(repo, tmp_path, monkeypatch):
    # The proven contents keep a few plans only: with a verifier's checkouts, the head's plan and the
    # agents' versions, the work tree's plan read a moment ago may be gone from them.
    tasks.add(repo, [{"name": "Read"}])
    data = (repo / "plan.jsonl").read_bytes()
    reader.read_plan(repo)
    from ralph.plan import loader, proven

    proven.PROVEN.forget()
    assert not proven.is_proven(data)
    other = tmp_path / "checkout"
    (other / ".git").mkdir(parents=True)
    reader.vouch(other, data)
    assert validcache.known_valid(other, data)

    def no_validation(record):
        raise AssertionError("validated a plan read here already")

    monkeypatch.setattr(loader, "record_problems", no_validation)
    (repo / ".git" / validcache.CACHE_NAME).unlink()  # only this process's word for it is left
    assert [task["name"] for task in reader.scratch_plan(repo).tasks()] == ["Read"]


def test_a_long_plan_written_without_a_commit_is_hashed_once_per_content(repo, monkeypatch):
    # An agent's `ralph task done` in the loop (RALPH_COMMIT=0) beside a long history: the validity
    # cache's key and the record of its operations (ralph.store.pending_ops) take the same id of
    # the plan before and of the plan after, each computed once.
    import _blake2

    from ralph.plan import proven
    from ralph.store import blobs

    added = tasks.add(repo, [{"name": "Built"}])
    history = b"".join(
        b'{"t": "accept", "id": "t-old%05d", "name": "Finished %d"}\n' % (n, n) for n in range(3000)
    )
    with (repo / "plan.jsonl").open("ab") as plan:
        plan.write(history)
    before = (repo / "plan.jsonl").read_bytes()
    assert len(before) > blobs._KEPT_FROM  # a long plan, as a fresh command reads it
    validcache.remember(repo, before)  # as the loop left it
    proven.PROVEN.forget()
    reader._READ.plans.clear()
    blobs._KNOWN.clear()
    hashed: list[int] = []
    sha, blake2b = blobs._sha, _blake2.blake2b

    def counted_sha(data: bytes) -> str:
        hashed.append(len(data))
        return sha(data)

    class Counted:
        def __init__(self, data: bytes = b"", digest_size: int = 64):
            self.real = blake2b(digest_size=digest_size)
            self.update(data)

        def update(self, data: bytes) -> None:
            hashed.append(len(data))
            self.real.update(data)

        def hexdigest(self) -> str:
            return str(self.real.hexdigest())

    monkeypatch.setattr(blobs, "_sha", counted_sha)
    monkeypatch.setattr(_blake2, "blake2b", Counted)
    monkeypatch.setenv("RALPH_COMMIT", "0")
    tasks.done(repo, added[0]["id"])
    after = (repo / "plan.jsonl").read_bytes()
    assert sorted(size for size in hashed if size > 1000) == sorted([len(before), len(after)])
    assert validcache.known_valid(repo, after)
