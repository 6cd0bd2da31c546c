"""Reading plan.jsonl without the lock (ralph/store/reader.py): a missing plan is one line that says
what to do, a broken one is refused every time, and a valid one is loaded. Proven-valid bytes
skipping validation is in test_validcache.py."""

from __future__ import annotations

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
