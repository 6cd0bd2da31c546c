"""Reading plan.jsonl without the lock (ralph/store/reader.py): a missing plan is one line that says
what to do, a broken one is refused every time, and a valid one is loaded. Proven-valid bytes
skipping validation is in test_validcache.py."""

from __future__ import annotations

import os

import pytest

from ralph.errors import PlanInvalid, RalphError
from ralph.store import reader


def test_no_plan_says_to_run_init(tmp_path):
    with pytest.raises(RalphError) as caught:
        reader.read_bytes(tmp_path)
    assert str(caught.value) == f"no plan.jsonl in {tmp_path} (run 'ralph init' first)"
    assert caught.value.exit_code == 1


def test_a_valid_plan_is_read_as_it_is_on_disk(repo):
    data = b'{"t":"task","id":"t-aaaaaa","name":"Parse input"}\n'
    reader.plan_path(repo).write_bytes(data)
    assert reader.read_bytes(repo) == data
    doc = reader.load_checked(repo, data)
    assert [line.record["id"] for line in doc.records()] == ["t-aaaaaa"] and doc.to_bytes() == data


def test_a_broken_plan_is_refused_on_every_read_not_only_the_first(repo):
    data = b'{"t":"task","id":"t-aaaaaa"}\n'
    for _ in range(2):  # a refusal is never remembered as proven
        with pytest.raises(PlanInvalid, match="plan.jsonl:1: task is missing field 'name'"):
            reader.load_checked(repo, data)


def test_a_plan_read_again_is_shared_and_only_read(repo):
    reader.plan_path(repo).write_bytes(b'{"t":"task","id":"t-share1","name":"Parse input"}\n')
    plan = reader.read_plan(repo)
    assert reader.read_plan(repo) is plan  # the same bytes are not loaded again
    with pytest.raises(TypeError, match="change the plan in a transaction"):
        plan.add_issue("a change to a plan read to share")


def test_a_changed_plan_is_seen_though_its_size_and_mtime_are_not(repo):
    # The read cache is keyed by the file's bytes: a rewrite within one clock tick, or one that
    # keeps the size and puts the old mtime back, is still read.
    path = reader.plan_path(repo)
    path.write_bytes(b'{"t":"task","id":"t-aaaaaa","name":"Parse input"}\n')
    stat = path.stat()
    assert reader.read_plan(repo).find_task("t-aaaaaa") is not None
    path.write_bytes(b'{"t":"task","id":"t-bbbbbb","name":"Parse input"}\n')
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size
    plan = reader.read_plan(repo)
    assert plan.find_task("t-aaaaaa") is None and plan.find_task("t-bbbbbb") is not None
