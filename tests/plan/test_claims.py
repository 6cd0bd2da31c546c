"""Claims of runners sharing one git remote: Plan.claim and Plan.release, a takeover once a claim
is older than the claim TTL, the transitions that free a task, and how the merge driver merges
claims made on two branches."""

from __future__ import annotations

import json

import pytest

from ralph.errors import Refused
from ralph.plan.loader import load, parse
from ralph.plan.merge import merge_bytes
from ralph.plan.plan import Plan
from tests.support.plans import task_in
from tests.support.present import present

T0 = "2026-01-01T10:00:00+00:00"
T10 = "2026-01-01T10:10:00+00:00"  # ten minutes later
T31 = "2026-01-01T10:31:00+00:00"  # past the default TTL (30 min)


def plan_of(*records: dict) -> Plan:
    return Plan(load("".join(json.dumps(r) + "\n" for r in records).encode()))


def task(task_id: str, **fields) -> dict:
    return {"t": "task", "id": f"t-{task_id}", "name": task_id.upper(), **fields}


def test_a_claim_names_the_runner_and_the_time_and_rewrites_only_its_line():
    plan = plan_of(task("a"), task("b"))
    before = plan.doc.lines[1].raw
    plan.claim("t-a", "host-1", T0)
    assert task_in(plan, "t-a")["claimed_by"] == "host-1"
    assert task_in(plan, "t-a")["claimed_at"] == T0
    assert plan.doc.lines[1].raw == before
    assert [t["id"] for t in plan.claims()] == ["t-a"]


def test_a_live_claim_of_another_runner_is_refused_and_ones_own_is_renewed():
    plan = plan_of(task("a", claimed_by="host-1", claimed_at=T0))
    with pytest.raises(Refused, match="t-a is claimed by host-1 since"):
        plan.claim("t-a", "host-2", T10)
    plan.claim("t-a", "host-1", T10)
    assert task_in(plan, "t-a")["claimed_at"] == T10
    assert not [r for r in plan.doc.records() if r.record["t"] == "takeover"]


def test_a_stale_claim_is_taken_over_and_the_old_claim_kept_in_a_takeover_record():
    plan = plan_of(task("a", claimed_by="host-1", claimed_at=T0))
    plan.claim("t-a", "host-2", T31)
    assert task_in(plan, "t-a")["claimed_by"] == "host-2"
    takeovers = [r.record for r in plan.doc.records() if r.record["t"] == "takeover"]
    assert takeovers == [
        {
            "t": "takeover",
            "id": "t-a",
            "by": "host-2",
            "at": T31,
            "was_claimed_by": "host-1",
            "was_claimed_at": T0,
        }
    ]
    assert parse(plan.doc.to_bytes())[1] == []  # the record passes `ralph check`


def test_a_namesake_on_another_host_is_another_runner_refused_live_and_taking_over_stale():
    plan = plan_of(task("a", claimed_by="ci", claimed_at=T0, claimed_on="build-1"))
    with pytest.raises(Refused, match="t-a is claimed by ci on build-1 since"):
        plan.claim("t-a", "ci", T10, host="build-2")
    with pytest.raises(Refused, match="claimed by ci on build-1, not by ci on build-2"):
        plan.release("t-a", "ci", "build-2")
    plan.claim("t-a", "ci", T31, host="build-2")
    assert task_in(plan, "t-a")["claimed_on"] == "build-2"
    takeovers = [r.record for r in plan.doc.records() if r.record["t"] == "takeover"]
    assert [(r["by"], r["was_claimed_by"]) for r in takeovers] == [("ci", "ci")]
    assert parse(plan.doc.to_bytes())[1] == []  # claimed_on passes `ralph check`
    assert present(plan.release("t-a", "ci", "build-2"))
    assert "claimed_on" not in task_in(plan, "t-a")


def test_the_claim_ttl_comes_from_the_config_or_the_caller():
    plan = plan_of({"t": "config", "claim_ttl_ms": 60_000}, task("a", claimed_by="h1", claimed_at=T0))
    assert plan.claim_ttl_s() == 60
    plan.claim("t-a", "h2", "2026-01-01T10:01:30+00:00")  # 90 s: past the configured minute
    assert task_in(plan, "t-a")["claimed_by"] == "h2"
    plan = plan_of(task("a", claimed_by="h1", claimed_at=T0))
    assert plan.claim_ttl_s() == 1800
    with pytest.raises(Refused):
        plan.claim("t-a", "h2", T10)
    plan.claim("t-a", "h2", T10, ttl_s=5)


def test_a_claim_whose_time_does_not_parse_counts_as_expired():
    plan = plan_of(task("a", claimed_by="h1", claimed_at="yesterday"))
    plan.claim("t-a", "h2", T0)
    assert task_in(plan, "t-a")["claimed_by"] == "h2"


def test_a_pending_or_done_task_is_claimed_a_blocked_one_is_not():
    plan = plan_of(task("a", s="d"), task("b", s="b"))
    plan.claim("t-a", "h1", T0)  # to verify it
    assert task_in(plan, "t-a")["claimed_by"] == "h1"
    with pytest.raises(Refused, match="t-b is blocked"):
        plan.claim("t-b", "h1", T0)


def test_an_accepted_or_unknown_task_is_not_claimed():
    plan = plan_of({"t": "accept", "id": "t-a"})
    with pytest.raises(Refused, match="already accepted"):
        plan.claim("t-a", "h1", T0)
    with pytest.raises(Refused, match="no task t-x"):
        plan.claim("t-x", "h1", T0)


def test_release_drops_ones_own_claim_refuses_anothers_and_ignores_what_is_gone():
    plan = plan_of(task("a", claimed_by="h1", claimed_at=T0), task("b"))
    with pytest.raises(Refused, match="claimed by h1, not by h2"):
        plan.release("t-a", "h2")
    assert present(plan.release("t-a", "h1"))["id"] == "t-a"
    assert "claimed_by" not in task_in(plan, "t-a") and "claimed_at" not in task_in(plan, "t-a")
    assert plan.release("t-b", "h1") is None  # not claimed
    assert plan.release("t-gone", "h1") is None  # accepted or deleted meanwhile


def test_done_reject_and_block_free_the_task():
    plan = plan_of(task("a", claimed_by="h1", claimed_at=T0), task("b", claimed_by="h1", claimed_at=T0))
    plan.done("t-a")
    assert "claimed_by" not in task_in(plan, "t-a")
    plan.claim("t-b", "h1", T0)
    plan.block("t-b", "too deep")
    assert "claimed_by" not in task_in(plan, "t-b")
    plan = plan_of(task("a", s="d", claimed_by="verifier", claimed_at=T0))
    plan.reject("t-a", "wrong")
    assert "claimed_by" not in task_in(plan, "t-a")


# --- the merge driver ------------------------------------------------------------------------


def text(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def merged(base, ours, theirs):
    return merge_bytes(text(*base), text(*ours), text(*theirs))


def only_task(result) -> dict:
    assert result.conflicts == [], result.data.decode()
    return next(line.record for line in load(result.data).records() if line.record["t"] == "task")


def test_a_claim_made_on_one_side_is_kept_whatever_else_the_other_side_changed():
    base = [task("a")]
    result = merged(base, [task("a", claimed_by="h1", claimed_at=T0)], [task("a", priority="high")])
    assert only_task(result) == task("a", claimed_by="h1", claimed_at=T0, priority="high")


def test_two_runners_claiming_one_task_conflict_with_both_claims_shown():
    base = [task("a")]
    result = merged(
        base, [task("a", claimed_by="h1", claimed_at=T0)], [task("a", claimed_by="h2", claimed_at=T10)]
    )
    assert len(result.conflicts) == 1
    assert "'claimed_by', 'claimed_at' changed on both sides" in str(result.conflicts[0])
    assert b'"claimed_by": "h1"' in result.data and b'"claimed_by": "h2"' in result.data


def test_a_new_claim_wins_over_the_release_of_an_old_one_on_either_side():
    base = [task("a", claimed_by="h1", claimed_at=T0)]
    released = [task("a", attempts=1)]
    taken_over = [task("a", claimed_by="h2", claimed_at=T31)]
    assert only_task(merged(base, released, taken_over))["claimed_by"] == "h2"
    assert only_task(merged(base, taken_over, released))["claimed_by"] == "h2"
    assert only_task(merged(base, taken_over, released))["attempts"] == 1


def test_one_runners_two_claims_merge_to_the_later():
    base = [task("a")]
    early, late = task("a", claimed_by="h1", claimed_at=T0), task("a", claimed_by="h1", claimed_at=T10)
    assert only_task(merged(base, [early], [late]))["claimed_at"] == T10
    assert only_task(merged(base, [late], [early]))["claimed_at"] == T10


def test_namesakes_claims_from_two_hosts_conflict_as_two_runners_do():
    base = [task("a")]
    result = merged(
        base,
        [task("a", claimed_by="ci", claimed_at=T0, claimed_on="build-1")],
        [task("a", claimed_by="ci", claimed_at=T10, claimed_on="build-2")],
    )
    assert len(result.conflicts) == 1
    renewed = task("a", claimed_by="ci", claimed_at=T10, claimed_on="build-1")
    assert only_task(merged(base, [task("a", claimed_by="ci", claimed_at=T0)], [renewed])) == renewed


def test_a_task_built_on_one_side_and_renewed_on_the_other_is_done_and_free():
    base = [task("a", claimed_by="h1", claimed_at=T0)]
    built = [task("a", s="d")]
    renewed = [task("a", claimed_by="h1", claimed_at=T10)]
    # h1 renewed its claim and built the task on two branches: the build wins, the renewal is newer
    result = only_task(merged(base, built, renewed))
    assert result["s"] == "d" and result["claimed_by"] == "h1"


def test_takeover_records_are_the_union_each_once():
    takeover = {"t": "takeover", "id": "t-a", "by": "h2", "at": T31, "was_claimed_by": "h1"}
    result = merged([task("a")], [task("a"), takeover], [task("a"), takeover])
    assert result.conflicts == []
    assert result.data.count(b'"takeover"') == 1


def test_the_state_stage_two_runners_wrote_keeps_ours():
    base = [{"t": "state", "stage": "BUILD", "iteration": 1}]
    ours = [{"t": "state", "stage": "VERIFY", "iteration": 2}]
    theirs = [{"t": "state", "stage": "DECOMPOSE", "iteration": 3}]
    result = merged(base, ours, theirs)
    assert result.conflicts == []
    assert load(result.data).lines[0].record == {"t": "state", "stage": "VERIFY", "iteration": 3}


def test_an_issue_and_a_spec_record_are_claimed_released_and_taken_over_like_a_task():
    issue = {"t": "issue", "id": "i-1", "text": "slow"}
    plan = plan_of({"t": "spec", "path": "specs/a.md"}, issue, task("a"))
    plan.claim("i-1", "h1", T0)  # to investigate it
    plan.claim("specs/a.md", "h1", T0)  # to plan it
    assert [(c["t"], c["id"], c["claimed_by"]) for c in plan.claims()] == [
        ("spec", "specs/a.md", "h1"),
        ("issue", "i-1", "h1"),
    ]
    with pytest.raises(Refused, match="i-1 is claimed by h1"):
        plan.claim("i-1", "h2", T10)
    plan.claim("specs/a.md", "h2", T31)
    takeovers = [line.record for line in plan.doc.records() if line.record["t"] == "takeover"]
    assert [(r["id"], r["by"], r["was_claimed_by"]) for r in takeovers] == [("specs/a.md", "h2", "h1")]
    assert present(plan.release("i-1", "h1"))["id"] == "i-1"
    assert [c["id"] for c in plan.claims()] == ["specs/a.md"]
    assert parse(plan.doc.to_bytes())[1] == []  # the claims pass `ralph check`
    with pytest.raises(Refused, match="no task, issue or spec i-9"):
        plan.claim("i-9", "h1", T0)


def test_an_issue_claim_released_on_one_branch_and_renewed_on_the_other_merges_to_the_live_claim():
    issue = {"t": "issue", "id": "i-1", "text": "slow"}
    claimed = {**issue, "claimed_by": "h1", "claimed_at": T10}
    sides = [({**claimed, "claimed_at": T0},), (issue,), (claimed, task("b"))]  # base, ours, theirs
    base, ours, theirs = ("".join(json.dumps(r) + "\n" for r in side).encode() for side in sides)
    merged = merge_bytes(base, ours, theirs)
    assert merged.conflicts == []
    assert [json.loads(line) for line in merged.data.decode().splitlines()] == [claimed, task("b")]
