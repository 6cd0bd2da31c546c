"""A claim's age (ralph.plan.reading.claim_age_s, gathered by ralph.store.claim_clock) with real
git: one bare remote, two or three clones, runners whose clocks are two hours off (as
$RALPH_CLOCK_SKEW_S sets them: it moves ralph's clock and the dates of the commits ralph makes).
A live claim is never taken over whichever clock is off, and a dead runner's claim is taken over
a TTL after it was pushed by a runner that was running then."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ralph import clock
from ralph.plan.loader import load
from ralph.plan.plan import Plan
from ralph.store.claim_clock import ClaimClock
from ralph.store.git import Repo
from ralph.store.remote import Remote
from ralph.usecases import claims, tasks
from tests.support.gitrepo import Shared, git
from tests.support.present import present

TWO_HOURS = 2 * 3600
TASKS = [{"id": f"t-{letter * 6}", "name": letter.upper()} for letter in "abcd"]


def four_tasks_three_clones(repo: Path, base: Path) -> Shared:
    tasks.add(repo, [dict(task) for task in TASKS])
    shared = Shared(repo, base)
    for name in ("one", "two", "three"):
        shared.clone(name)
    return shared


@pytest.fixture
def runners(shared_copy) -> tuple[Shared, Path, Path, Path]:
    """origin with four independent tasks, and three clones of it (made once, copied for each test)."""
    shared = shared_copy("claim-clock-runners", four_tasks_three_clones)
    return shared, shared.base / "one", shared.base / "two", shared.base / "three"


def remote_of(clone: Path) -> Remote:
    return Remote(Repo(clone), retries=1, backoff_s=0.01)


def on_origin(shared: Shared) -> Plan:
    return Plan(load(shared.plan_on_origin()))


def takeovers(shared: Shared) -> list[tuple[str, str, str]]:
    records = [line.record for line in on_origin(shared).doc.records() if line.record["t"] == "takeover"]
    return [(t["id"], t["by"], t["was_claimed_by"]) for t in records]


def dates(where: Path, rev: str = "main") -> tuple[int, int]:
    """The author and committer times of `rev`."""
    author, committer = git(where, "log", "-1", "--format=%at %ct", rev).split()
    return int(author), int(committer)


def skewed(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    if seconds:
        monkeypatch.setenv(clock.CLOCK_SKEW_ENV, str(seconds))
    else:
        monkeypatch.delenv(clock.CLOCK_SKEW_ENV, raising=False)


def test_ralph_dates_its_commits_by_its_clock_and_never_before_their_parents(runners, monkeypatch):
    shared, one, two, _ = runners
    skewed(monkeypatch, TWO_HOURS)
    claims.claim_next(two, None, "ahead", remote_of(two))
    author, ahead = dates(shared.origin)
    assert author == ahead and abs(ahead - (time.time() + TWO_HOURS)) < 60  # as a wrong clock stamps it
    skewed(monkeypatch, -TWO_HOURS)
    claims.claim_next(one, None, "behind", remote_of(one))
    author, committed = dates(shared.origin)
    assert abs(author - (time.time() - TWO_HOURS)) < 60  # the author date is the runner's own clock
    assert committed == ahead  # the committer date never goes back along the history
    assert git(shared.origin, "log", "-1", "--format=%s", "main").strip().endswith("(behind)")


# A claimer on time meets runners 2 h behind and ahead of it, which the other two cases meet too
# (and 4 h): that case runs with the slow suites.
@pytest.mark.parametrize("claimer_skew", [-TWO_HOURS, pytest.param(0, marks=pytest.mark.slow), TWO_HOURS])
def test_no_runner_takes_over_a_live_claim_whichever_clock_is_off(runners, monkeypatch, claimer_skew):
    shared, one, two, three = runners
    skewed(monkeypatch, claimer_skew)
    assert present(claims.claim_next(one, None, "claimer", remote_of(one)))["id"] == "t-aaaaaa"
    picked = []
    for clone, runner, skew in (
        (two, "behind", -TWO_HOURS),
        (three, "ahead", TWO_HOURS),
        (two, "on-time", 0),
    ):
        skewed(monkeypatch, skew)
        picked.append(present(claims.claim_next(clone, None, runner, remote_of(clone), ttl_s=600))["id"])
    assert picked == ["t-bbbbbb", "t-cccccc", "t-dddddd"]
    assert takeovers(shared) == []
    held = {item["id"]: item["claimed_by"] for item in on_origin(shared).claims()}
    assert [held[task["id"]] for task in TASKS] == ["claimer", "behind", "ahead", "on-time"]


def test_a_spec_is_planned_once_whichever_runner_claims_it_first(repo, tmp_path, monkeypatch):
    from ralph.store.transaction import transaction

    with transaction(repo) as change:
        change.plan.add_spec("specs/app.md")
    shared = Shared(repo, tmp_path)
    one, two, three = shared.clone("one"), shared.clone("two"), shared.clone("three")
    skewed(monkeypatch, -TWO_HOURS)
    assert claims.claim_plan(one, "specs/app.md", "behind", remote_of(one))
    for clone, skew in ((two, 0), (three, TWO_HOURS)):
        skewed(monkeypatch, skew)
        assert not claims.claim_plan(clone, "specs/app.md", f"skew{skew}", remote_of(clone), ttl_s=600)
    skewed(monkeypatch, 0)
    claims.release(one, "specs/app.md", "behind", remote_of(one))
    assert claims.claim_plan(two, "specs/app.md", "on-time", remote_of(two))
    skewed(monkeypatch, -TWO_HOURS)  # the behind runner does not take the on-time runner's PLAN
    assert not claims.claim_plan(one, "specs/app.md", "behind", remote_of(one), ttl_s=600)
    assert takeovers(shared) == []


# `make test` has it in test_no_runner_takes_over_a_live_claim_whichever_clock_is_off[-7200]
# (clone two, two hours behind as the claimer is, sees its claim first as "behind" and takes
# t-bbbbbb; its clock set right, as "on-time", it takes a free task again; no takeover recorded)
@pytest.mark.slow
def test_a_runner_whose_clock_is_set_right_keeps_off_a_claim_it_first_saw_on_the_wrong_clock(
    runners, monkeypatch
):
    """Its sighting now looks two hours old, and so does the claimer's claimed_at (its clock was
    behind too): the claim's commit, pulled forward to the history's time, says it is new."""
    shared, one, two, _ = runners
    skewed(monkeypatch, -TWO_HOURS)
    claims.claim_next(one, None, "behind", remote_of(one))
    assert present(claims.claim_next(two, None, "judge", remote_of(two), ttl_s=600))["id"] == "t-bbbbbb"
    skewed(monkeypatch, 0)
    assert (
        present(claims.claim_next(two, None, "judge-set-right", remote_of(two), ttl_s=600))["id"]
        == "t-cccccc"
    )
    assert takeovers(shared) == []


def test_a_dead_runners_claim_is_taken_over_a_ttl_after_it_was_pushed_by_a_runner_running_then(runners):
    shared, one, two, late = runners
    ttl = 4.0  # as --claim-ttl sets it (the config's claim_ttl_ms is a minute at least)
    assert (
        present(claims.claim_next(one, None, "dead", remote_of(one), ttl))["id"] == "t-aaaaaa"
    )  # then it dies
    assert (
        present(claims.claim_next(two, None, "alive", remote_of(two), ttl))["id"] == "t-bbbbbb"
    )  # it sees that claim
    # A TTL after two's first sight of the claim, which is at latest the end of that call (waiting
    # from the push instead fell short when a loaded machine's call took longer than the margin).
    seen = time.monotonic()
    time.sleep(max(0.0, seen + ttl + 0.5 - time.monotonic()))
    # A clone that first looks now waits a TTL from its first look (it takes a free task, not the
    # dead runner's): the claim may be live for all it knows (its claimer's clock could be behind).
    assert present(claims.claim_next(late, None, "late", remote_of(late), ttl))["id"] == "t-cccccc"
    assert present(claims.claim_next(two, None, "alive-2", remote_of(two), ttl))["id"] == "t-aaaaaa"
    assert takeovers(shared) == [("t-aaaaaa", "alive-2", "dead")]


TWO_DAYS = 2 * 24 * 3600


def test_a_judge_whose_clock_is_days_ahead_takes_over_no_live_claim(runners, monkeypatch):
    """Every live claim is two days old on a clock two days ahead, by its commit too; the one-day
    rule believes that only when another runner's clock agrees, and the other runner's claim,
    made a moment after on its own clock, says no day has passed."""
    shared, one, two, three = runners
    assert present(claims.claim_next(one, None, "claimer", remote_of(one)))["id"] == "t-aaaaaa"
    assert present(claims.claim_next(two, None, "other", remote_of(two), ttl_s=600))["id"] == "t-bbbbbb"
    skewed(monkeypatch, TWO_DAYS)
    assert present(claims.claim_next(three, None, "ahead", remote_of(three), ttl_s=600))["id"] == "t-cccccc"
    assert takeovers(shared) == []


def test_a_claim_days_old_by_its_commit_and_another_runners_clock_is_taken_over_at_first_sight(
    runners, monkeypatch
):
    """A runner died holding a claim; two days on (as the clocks say), another runner claims work,
    and a fresh clone that never saw the dead claim takes it over at once: two clocks agree it is
    days old."""
    shared, one, two, three = runners
    assert present(claims.claim_next(one, None, "dead", remote_of(one)))["id"] == "t-aaaaaa"
    skewed(monkeypatch, TWO_DAYS)  # two days pass for every runner from here
    assert present(claims.claim_next(two, None, "later", remote_of(two), ttl_s=600))["id"] == "t-bbbbbb"
    assert present(claims.claim_next(three, None, "fresh", remote_of(three), ttl_s=600))["id"] == "t-aaaaaa"
    assert takeovers(shared) == [("t-aaaaaa", "fresh", "dead")]


def test_a_claim_is_dated_by_the_commit_that_made_it_not_by_a_merge_that_carried_it(runners, monkeypatch):
    shared, one, two, three = runners
    claims.claim_next(two, None, "claimer", remote_of(two))
    _, made = dates(shared.origin)
    (one / "notes.txt").write_text("work not pushed yet\n")
    git(one, "add", "notes.txt")
    git(one, "commit", "-q", "-m", "Local work")
    skewed(monkeypatch, 600)  # its merge is dated ten minutes later, first parent its own line
    claims.release_all(one, "one", remote_of(one))
    skewed(monkeypatch, 0)
    head = git(shared.origin, "rev-parse", "main").strip()
    assert len(git(shared.origin, "log", "-1", "--format=%P", head).split()) == 2
    assert dates(shared.origin)[1] >= made + 590
    remote = remote_of(three)
    remote.fetch()
    item = next(item for item in on_origin(shared).claims() if item["id"] == "t-aaaaaa")
    judged = remote.claim_clock.judge(item, clock.now())
    assert judged.committed_at == datetime.fromtimestamp(made, UTC).isoformat(timespec="seconds")


def test_what_a_clone_learned_of_a_claim_is_kept_and_history_is_searched_once(runners):
    shared, one, two, _ = runners
    claims.claim_next(one, None, "claimer", remote_of(one))
    remote = remote_of(two)
    remote.fetch()
    item = next(item for item in on_origin(shared).claims() if item["id"] == "t-aaaaaa")
    first = remote.claim_clock.judge(item, clock.now())
    kept = json.loads((two / ".git" / "ralph" / "claims-seen.json").read_text())
    assert {entry["committed"] for entry in kept.values()} >= {first.committed_at}
    # A clock on refs that hold no history at all still knows: it reads what was kept.
    again = ClaimClock(Repo(two), ("refs/heads/no-such-branch",), two / ".git" / "ralph" / "claims-seen.json")
    assert again.judge(item, clock.now()).committed_at == first.committed_at
    unknown = ClaimClock(Repo(two), ("refs/heads/no-such-branch",), two / ".git" / "ralph" / "elsewhere.json")
    assert unknown.judge(item, clock.now()).committed_at is None  # no commit known: claimed_at is read


def test_every_claim_a_round_sees_is_noted_not_only_those_it_wants_then(repo, tmp_path):
    """A runner building sees a dead runner's claim on the spec's PLAN in its build's rounds: when
    it looks for PLAN work a TTL after the claim was pushed, it takes it over at once."""
    from ralph.store.transaction import transaction

    with transaction(repo) as change:
        change.plan.add_spec("specs/app.md")
    (repo / "specs" / "other.md").write_text("# Other\n")  # task add takes a spec that exists
    tasks.add(repo, [{"id": "t-aaaaaa", "name": "A", "spec": "specs/other.md"}])
    shared = Shared(repo, tmp_path)
    one, two = shared.clone("one"), shared.clone("two")
    ttl = 3.0
    assert claims.claim_plan(one, "specs/app.md", "dead", remote_of(one), ttl)  # then it dies
    assert present(claims.claim_next(two, None, "alive", remote_of(two), ttl))["id"] == "t-aaaaaa"
    seen = time.monotonic()  # two's round saw the claim by now: a TTL from here, not from the push
    time.sleep(max(0.0, seen + ttl + 0.5 - time.monotonic()))
    assert claims.claim_plan(two, "specs/app.md", "alive", remote_of(two), ttl)
    assert takeovers(shared) == [("specs/app.md", "alive", "dead")]
