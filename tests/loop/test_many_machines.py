"""`ralph construct --remote`: runners that share one git remote, each in its own clone, with the
scripted fake agent (tests/support/scripts/fake_agent.py). One runner pushes all it does; three at once build
every task exactly once."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ralph.loop.share import remote as share_remote
from ralph.plan.records import KillReason
from ralph.store.git import Repo
from ralph.store.remote import Remote
from ralph.store.transaction import transaction
from ralph.usecases import config, issues, tasks
from tests.support.cli import ralph_in_process
from tests.support.construct import construct, events, with_app_spec
from tests.support.gitrepo import Shared, git

if TYPE_CHECKING:
    from ralph.loop.observe.journal import Journal
    from ralph.loop.share.remote import RemoteCoordinator


def seeded(repo: Path, tmp_path: Path, items: list[dict]) -> Shared:
    with_app_spec(repo, "# App\n")
    tasks.add(repo, [{**item, "spec": "specs/app.md"} for item in items])
    return Shared(repo, tmp_path)


def origin_plan(shared: Shared) -> list[dict]:
    return [json.loads(line) for line in shared.plan_on_origin().decode().splitlines() if line.strip()]


# TWO_RUNNERS_IN_MAKE_TEST: each test of two or three runners at once costs some 2-4 s of CPU (two
# whole construct runs, their pushes and fetches) and waits seconds for the other. `make test` keeps
# one runner pushing all it does, and two runners taking one item once (decompose); the other
# meetings of runners (plan or investigate once, a conflict pushed meanwhile, a clock behind, a
# build given back for what another runner publishes) run with the slow suites, which CI runs too.


def build_counts(*states: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for state in states:
        for counter in state.glob("build-t-*"):
            task_id = counter.name.removeprefix("build-")
            counts[task_id] = counts.get(task_id, 0) + int(counter.read_text())
    return counts


def test_one_runner_with_a_remote_claims_by_ref_and_publishes_each_build_as_it_is_committed(repo, tmp_path):
    items = [{"id": f"t-task{n:02d}", "name": f"Task {n}"} for n in range(2)]
    shared = seeded(repo, tmp_path, items)
    clone = shared.clone("one")
    # No review: its claim and its round are two pushes more, which this test does not count.
    env = {"FAKE_AGENT_STATE": str(tmp_path / "s1")}
    git(shared.origin, "config", "core.logAllRefUpdates", "always")  # the branch's every tip
    done = construct(clone, "--remote", "origin", "--runner", "runner-1", "--no-review", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    plan = origin_plan(shared)
    assert sorted(r["id"] for r in plan if r["t"] == "accept") == [item["id"] for item in items]
    assert not [r for r in plan if r["t"] == "task"]
    subjects = git(shared.origin, "log", "--format=%s", "main").splitlines()
    assert sum(s.startswith("ralph(build): t-task") for s in subjects) == 2
    assert [s for s in subjects if s.startswith("ralph(verify): accepted")] == [
        "ralph(verify): accepted t-task00, t-task01"
    ]
    assert git(clone, "rev-parse", "HEAD") == git(shared.origin, "rev-parse", "main")
    # Each task was claimed by a ref of its own beside the branch, gone with its verdict. Alone
    # on the branch (no push lost a race), each build went out as it was committed: each was the
    # remote branch's tip once.
    assert git(shared.origin, "for-each-ref", "refs/ralph/claims/") == ""
    [pushes] = [e for e in events(clone) if e["event"] == "remote_pushes"]
    assert (pushes["claims_won"], pushes["claims_lost"], pushes["lost"]) == (2, 0, 0)
    # One fetch per task, the look before its claim. Alone on the branch, the claim is pushed with
    # the branch held where that look saw it (no task can have been published meanwhile), a build
    # on the head as last fetched (its lease on the claim turns it away if the claim was taken
    # over), and a round builds on a fetch made just before instead of fetching again. Six more for
    # the run's other steps (the spec check's claim and its publish, the verdicts, the last looks).
    # Before: 23, with three tasks.
    assert pushes["fetches"] <= len(items) + 6, pushes
    tips = git(shared.origin, "reflog", "show", "--format=%H", "main").splitlines()
    built = {
        int(git(shared.origin, "rev-list", "--count", "--grep=^ralph(build): t-task", tip)) for tip in tips
    }
    assert {1, 2} <= built  # the builds reached the remote one at a time


def test_a_runner_started_after_another_finished_the_spec_reviews_none_of_it_again(repo, tmp_path):
    """A clone made before the spec's work records its start (the review's base) on the remote's
    work, not on its own stale head: started once another runner ended COMPLETE, it pays no
    reviewer to read that change a second time, and claims no review of the empty change since."""
    config.set_value(repo, "review", "goal")
    shared = seeded(repo, tmp_path, [{"id": "t-task00", "name": "Task 0"}])
    early, late = shared.clone("early"), shared.clone("late")  # both before any work
    first = construct(
        early, "--remote", "origin", "--runner", "early", env={"FAKE_AGENT_STATE": str(tmp_path / "s1")}
    )
    assert first.returncode == 0, first.stdout + first.stderr
    assert [e["stage"] for e in events(early) if e["event"] == "agent_begin"].count("REVIEW") == 1
    second = construct(
        late, "--remote", "origin", "--runner", "late", env={"FAKE_AGENT_STATE": str(tmp_path / "s2")}
    )
    assert second.returncode == 0 and "COMPLETE" in second.stdout, second.stdout + second.stderr
    assert [e["stage"] for e in events(late) if e["event"] == "agent_begin"] == []
    # Nor does it claim the spec for a review of nothing, and give the claim back: two pushes.
    subjects = git(late, "log", "--format=%s", "origin/main").splitlines()
    assert not [subject for subject in subjects if subject.endswith("(late)")], subjects
    # Its claims of the check and of the review build on its first look, with no fetch of their
    # own (four round trips before, each about a second on a hosted remote): that look and the
    # last one, when it gives back what it holds.
    [pushes] = [e for e in events(late) if e["event"] == "remote_pushes"]
    assert pushes["fetches"] == 2, pushes


class OutPushedOnce(Remote):
    """A remote another runner pushes to just before our next push, once (`armed`)."""

    def __init__(self, repo: Repo, rival: Path):
        super().__init__(repo, retries=0, sleep=lambda seconds: None)
        self.rival, self.armed = rival, False

    def push(
        self,
        commit: str,
        drop: dict[str, str] | None = None,
        keep: dict[str, str] | None = None,
        mark: dict[str, tuple[str, str]] | None = None,
    ) -> bool:
        if self.armed:
            self.armed = False
            git(self.rival, "pull", "-q", "--no-rebase", "origin", "main")
            git(self.rival, "commit", "-q", "--allow-empty", "-m", "the rival's work")
            git(self.rival, "push", "-q", "origin", "HEAD:main")
        return super().push(commit, drop, keep, mark)


def build_here(clone: Path, task_id: str) -> None:
    (clone / "work").mkdir(exist_ok=True)
    (clone / "work" / f"{task_id}.txt").write_text(f"ok {task_id}\n")
    ralph_in_process(clone, "task", "done", task_id, "--no-commit")
    git(clone, "add", "work", "plan.jsonl")
    git(clone, "commit", "-qm", f"ralph(build): {task_id}")


def test_builds_go_out_at_once_until_a_push_loses_a_race_then_they_wait_for_their_verdicts(repo, tmp_path):
    """Alone on the branch, a runner publishes each build as it is committed; once a push of its
    run lost a race (others push too), a build waits for its verdict to go out with it: one push
    of the contended branch for both. The build whose push lost is not pushed again at once: it
    waits as well (sixteen runners racing to publish their first builds lost 127 races)."""
    from ralph.loop.share.remote import RemoteCoordinator

    items = [{"id": f"t-task{n:02d}", "name": f"Task {n}"} for n in range(3)]
    shared = seeded(repo, tmp_path, items)
    one, rival = shared.clone("one"), shared.clone("rival")
    coordinator = RemoteCoordinator(one, "specs/app.md", "origin", runner="one")
    remote = OutPushedOnce(Repo(one), rival)
    remote.with_claims = True
    coordinator.remote = remote

    def published(task_id: str) -> bool:
        return any(r["t"] == "task" and r["id"] == task_id and r["s"] == "d" for r in origin_plan(shared))

    assert coordinator.before_build() == "t-task00"
    build_here(one, "t-task00")
    assert coordinator.after_build("t-task00") == [] and published("t-task00")  # at once

    assert coordinator.before_build() == "t-task01"
    build_here(one, "t-task01")
    remote.armed = True
    assert coordinator.after_build("t-task01") == [] and not published("t-task01")  # lost, waits
    assert remote.lost == 1 and remote.won == 1

    assert coordinator.before_build() == "t-task02"
    build_here(one, "t-task02")
    assert coordinator.after_build("t-task02") == []
    assert not published("t-task02")  # it waits here for its verdict
    assert remote.won == 1  # nothing pushed since the lost race

    coordinator.release_all()  # the run ends: what waited goes out, in one push
    assert published("t-task01") and published("t-task02")
    assert remote.won == 2


def test_a_takeover_is_recorded_by_the_push_that_wins_after_a_lost_race(repo, tmp_path):
    """The takeover record goes in the publishing push's plan; when the first round loses a race,
    the round that wins records it again (it was recorded in the lost round only)."""
    from ralph.loop.share.remote import RemoteCoordinator

    items: list[dict] = [
        {"id": "t-task00", "name": "Task 0"},
        {"id": "t-task01", "name": "Task 1", "deps": ["t-task00"]},
    ]
    shared = seeded(repo, tmp_path, items)
    one, rival = shared.clone("one"), shared.clone("rival")
    assert take_over(rival, "t-task00", "doomed") == "t-task00"  # a claim that then went stale
    coordinator = RemoteCoordinator(one, "specs/app.md", "origin", runner="heir", ttl_s=0.0)
    remote = OutPushedOnce(Repo(one), rival)
    remote.with_claims = True
    coordinator.remote = remote
    assert coordinator.before_build() == "t-task00"
    build_here(one, "t-task00")
    remote.armed = True  # t-task01 needs it: it goes out now, after losing one race
    assert coordinator.after_build("t-task00") == []
    assert remote.lost == 1
    plan = origin_plan(shared)
    assert [(r["by"], r["was_claimed_by"]) for r in plan if r["t"] == "takeover"] == [("heir", "doomed")]


class TakenOverJustBefore(Remote):
    """A remote on which another runner takes `item`'s claim over just before our next push."""

    def __init__(self, repo: Repo, rival: Path, item: str):
        super().__init__(repo, retries=0, sleep=lambda seconds: None)
        self.rival, self.item, self.armed = Remote(Repo(rival)), item, True

    def push(
        self,
        commit: str,
        drop: dict[str, str] | None = None,
        keep: dict[str, str] | None = None,
        mark: dict[str, tuple[str, str]] | None = None,
    ) -> bool:
        if self.armed:
            self.armed = False
            self.rival.fetch(claims=True)
            old = self.rival.claim_refs()[self.item]
            taking = self.rival.make_claim(self.item, "rival", "2026-01-01T00:00:00+00:00", replaces=old)
            assert self.rival.push_claim(self.item, taking, replaces=old.commit)
        return super().push(commit, drop, keep, mark)


def built_beside_a_takeover(shared: Shared) -> tuple[RemoteCoordinator, Path, str]:
    """Runner `one` claimed t-task00 and built it (done), on a remote where `rival` takes the claim
    over just before one's next push: its coordinator, its clone and its HEAD before the build."""
    from ralph.loop.share.remote import RemoteCoordinator

    one, rival = shared.clone("one"), shared.clone("rival")
    coordinator = RemoteCoordinator(one, "specs/app.md", "origin", runner="one")
    remote = TakenOverJustBefore(Repo(one), rival, "t-task00")
    remote.with_claims = True
    coordinator.remote = remote
    assert coordinator.before_build() == "t-task00"
    start = git(one, "rev-parse", "HEAD")
    build_here(one, "t-task00")
    return coordinator, one, start


class PublishedJustBefore(Remote):
    """A remote on which another runner publishes `item` as built just before our first claim's
    push: the branch moves between our look and our claim."""

    def __init__(self, repo: Repo, rival: Path, item: str):
        super().__init__(repo, retries=0, sleep=lambda seconds: None)
        self.rival, self.item, self.armed = rival, item, True

    def push_claim(
        self, item: str, commit: str, replaces: str | None = None, branch_at: str | None = None
    ) -> bool:
        if self.armed:
            self.armed = False
            build_here(self.rival, self.item)
            git(self.rival, "push", "-q", "origin", "HEAD:main")
        return super().push_claim(item, commit, replaces, branch_at)


def test_a_task_published_between_the_look_and_the_claim_is_not_built_again(repo, tmp_path):
    """Alone on the branch, a claim needs no look after it only because it was pushed with the
    branch held where the look before saw it: another runner's publish in between turns it away,
    and the runner looks again and claims the next task."""
    from ralph.loop.share.remote import RemoteCoordinator

    items = [{"id": f"t-task{n:02d}", "name": f"Task {n}"} for n in range(2)]
    shared = seeded(repo, tmp_path, items)
    one, rival = shared.clone("one"), shared.clone("rival")
    coordinator = RemoteCoordinator(one, "specs/app.md", "origin", runner="one")
    coordinator.remote = PublishedJustBefore(Repo(one), rival, "t-task00")
    coordinator.remote.with_claims = True

    assert coordinator.before_build() == "t-task01"
    assert claim_holders(shared) == {"t-task01": "one"}


class StopWaiting(Exception):
    pass


def polls_while_another_holds_the_work(clone: Path, journal: Journal) -> list[float]:
    """The waits between a runner's polls while another runner's claim holds the only task and
    nothing moves on the remote (its run stopped after six: the longest wait comes twice)."""
    from ralph.loop.share.remote import RemoteCoordinator

    waits: list[float] = []

    def stop_after_six() -> None:
        if len(waits) >= 6:
            raise StopWaiting

    coordinator = RemoteCoordinator(
        clone, "specs/app.md", "origin", "waiter", check=stop_after_six, sleep=waits.append, journal=journal
    )
    with pytest.raises(StopWaiting):
        coordinator.before_build()
    return waits


def test_a_waiting_runner_polls_at_the_pace_of_its_agent_runs_within_the_bounds(repo, tmp_path):
    """How long a runner waits between polls is also how late it sees the end others made: where
    agent runs are short, its longest wait shrinks to their pace, never under FASTEST_POLL_S;
    before any agent run, POLL_S's longest (8 runners of 1 s builds took 0.41x one runner's wall
    with 4 s, 0.31-0.35x with 1 s)."""
    from ralph.loop.observe.journal import Journal

    shared = seeded(repo, tmp_path, [{"id": "t-only", "name": "Only"}])
    assert take_over(shared.clone("holder"), "t-only", "holder") == "t-only"
    waiter = shared.clone("waiter")
    journal = Journal(tmp_path / "events.jsonl")

    before_any_run = polls_while_another_holds_the_work(waiter, journal)
    assert before_any_run == [0.25, 0.5, 1.0, 2.0, 4.0, 4.0]
    journal.span("agent", stage="BUILD").end()  # an agent run of a moment
    after_a_short_run = polls_while_another_holds_the_work(waiter, journal)
    assert after_a_short_run[:4] == [0.25, 0.5, share_remote.FASTEST_POLL_S, share_remote.FASTEST_POLL_S]
    assert max(after_a_short_run) == share_remote.FASTEST_POLL_S


def test_a_runner_waiting_for_anothers_spec_check_fetches_once_per_poll(repo, tmp_path):
    """While another runner holds the spec for its check, a waiting runner polls; its next try to
    claim the check builds on the poll's fetch instead of fetching again (on a hosted remote a
    fetch takes about a second, and sixteen runners ending together all wait here)."""
    from ralph.loop.share.remote import RemoteCoordinator
    from ralph.usecases import claims

    with_app_spec(repo, "# App\n")
    with transaction(repo, True) as change:
        change.plan.add_spec("specs/app.md")
        change.message = "the spec"
    tasks.add(repo, [{"id": "t-only", "name": "Only", "spec": "specs/app.md"}])
    tasks.done(repo, "t-only")
    tasks.accept(repo, "t-only")  # every task of the spec is accepted
    shared = Shared(repo, tmp_path)
    checker, waiter = shared.clone("checker"), shared.clone("waiter")
    never = lambda plan: False  # noqa: E731  # no check found the spec met yet
    assert claims.claim_check(checker, "specs/app.md", "checker", Remote(Repo(checker)), never)
    waits: list[float] = []

    def stop_after_three() -> None:
        if len(waits) >= 3:
            raise StopWaiting

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) < 3:  # the checker pushes while the waiter sleeps: its next poll sees a change
            (checker / f"note{len(waits)}.txt").write_text("checking\n")
            git(checker, "add", ".")
            git(checker, "commit", "-qm", "the checker's note")
            git(checker, "push", "-q", "origin", "HEAD:main")

    coordinator = RemoteCoordinator(
        waiter, "specs/app.md", "origin", "waiter", check=stop_after_three, sleep=sleep
    )
    with pytest.raises(StopWaiting):
        coordinator.before_check(never)
    assert len(waits) == 3  # the first two polls saw the remote move: after each, a try, then a wait
    # The first try's own fetch, then one per poll: a try after a poll builds on what it fetched.
    assert coordinator.remote.fetches == 1 + len(waits)
    spec = next(record for record in origin_plan(shared) if record["t"] == "spec")
    assert spec["claimed_by"] == "checker"


def test_a_claim_taken_over_between_the_check_and_the_push_yields_the_build_and_ends_nothing(repo, tmp_path):
    """The push publishing a verdict deletes the task's claim under a lease; another runner took
    the claim over a moment before, so the lease fails while the branch did not move: a lost race,
    not a remote refusing. The build yields (kept as a patch, undone here) and the run goes on; it
    does not end with exit 11 after six pushes turned away."""
    items = [{"id": f"t-task{n:02d}", "name": f"Task {n}"} for n in range(2)]
    shared = seeded(repo, tmp_path, items)
    coordinator, one, start = built_beside_a_takeover(shared)
    ralph_in_process(one, "task", "accept", "t-task00")  # its verdict: the push drops its claim

    assert coordinator.after_build("t-task00") == []

    on_origin = {r["id"]: r for r in origin_plan(shared) if r["t"] == "task"}
    assert on_origin["t-task00"]["s"] == "p"  # not published
    assert git(one, "rev-parse", "HEAD") == git(shared.origin, "rev-parse", "main") == start
    assert not (one / "work" / "t-task00.txt").exists()  # undone here
    assert list((one / "build" / "ralph-logs" / "conflicts").glob("*.patch"))  # kept
    assert coordinator.before_build() == "t-task01"  # the run goes on


def test_a_build_whose_claim_is_taken_over_just_before_its_push_never_reaches_the_remote(repo, tmp_path):
    """A build done and not yet verified keeps its claim (this runner verifies it), so the push
    publishing it deletes no claim; it holds a lease on the claim all the same, and another
    runner taking it over a moment before turns the push away: the build is never published
    beside the taker's, and yields when the run ends."""
    shared = seeded(repo, tmp_path, [{"id": "t-task00", "name": "Task 0"}])
    coordinator, one, start = built_beside_a_takeover(shared)  # done, not verified

    assert coordinator.after_build("t-task00") == []
    assert git(shared.origin, "rev-parse", "main") == start  # turned away, not published
    coordinator.release_all()

    on_origin = {r["id"]: r for r in origin_plan(shared) if r["t"] == "task"}
    assert on_origin["t-task00"].get("s", "p") == "p"
    assert claim_holders(shared) == {"t-task00": "rival"}
    assert not (one / "work" / "t-task00.txt").exists()  # undone here, kept as a patch
    assert list((one / "build" / "ralph-logs" / "conflicts").glob("t-task00-*.patch"))


def test_an_unreachable_remote_ends_the_run_with_one_line_and_exit_11(repo, tmp_path, monkeypatch):
    # The run's remote waits 10 ms before each retry, not ralph's 1, 2 then 4 s: the attempts are
    # what this checks, and those 7 s of sleep were the longest wait of make test.
    monkeypatch.setattr(share_remote, "Remote", functools.partial(Remote, backoff_s=0.01))
    shared = seeded(repo, tmp_path, [{"id": "t-task00", "name": "Task"}])
    clone = shared.clone("one")
    git(clone, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    head = git(clone, "rev-parse", "HEAD")
    trace = tmp_path / "git-trace"
    done = construct(
        clone, "--remote", "origin", env={"FAKE_AGENT_STATE": str(tmp_path / "s1"), "GIT_TRACE": str(trace)}
    )
    assert done.returncode == 11
    # The run's first fetch, before its start is committed: it ends there, as a remote the clone
    # lacks does, in one line, with nothing committed and no claim to give back (no fifth fetch).
    assert done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stderr
    assert "cannot fetch origin (4 attempts): fatal: " in done.stderr
    assert trace.read_text().count("built-in: git fetch") == 4
    assert git(clone, "rev-parse", "HEAD") == head and git(clone, "status", "--porcelain") == ""


def test_a_remote_this_clone_lacks_ends_before_any_commit_with_one_line_and_exit_11(repo, tmp_path):
    shared = seeded(repo, tmp_path, [{"id": "t-task00", "name": "Task"}])
    clone = shared.clone("one")
    head = git(clone, "rev-parse", "HEAD")
    done = construct(clone, "--remote", "nosuch", env={"FAKE_AGENT_STATE": str(tmp_path / "s1")})
    assert done.returncode == 11, done.stdout + done.stderr
    assert done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stderr
    assert "no git remote named 'nosuch'" in done.stderr
    assert git(clone, "rev-parse", "HEAD") == head  # nothing committed
    assert git(clone, "status", "--porcelain") == ""


@pytest.mark.slow  # two runners at once on a bare remote (see TWO_RUNNERS_IN_MAKE_TEST)
def test_a_build_that_conflicts_with_one_pushed_meanwhile_is_undone_and_built_again(repo, tmp_path):
    items = [{"id": f"t-task{n:02d}", "name": f"Task {n} [shared-file]"} for n in range(2)]
    shared = seeded(repo, tmp_path, items)
    state = tmp_path / "agent-state"  # shared: the two first builds wait for each other
    two_runners(shared, state)
    plan = origin_plan(shared)
    assert sorted(r["id"] for r in plan if r["t"] == "accept") == [item["id"] for item in items]
    subjects = git(shared.origin, "log", "--format=%s", "main").splitlines()
    conflicts = [s for s in subjects if " merge conflict in shared.txt " in s]
    assert len(conflicts) == 1, subjects
    loser = conflicts[0].split()[1]
    assert build_counts(state) == {item["id"]: 2 if item["id"] == loser else 1 for item in items}
    for item in items:  # the undone build never reached the remote: one build commit per task
        built = [s for s in subjects if s.startswith(f"ralph(build): {item['id']} ") and "conflict" not in s]
        assert len(built) == 1
    commit = git(shared.origin, "log", "--format=%H", "-1", "--grep", "conflict in shared", "main").strip()
    records = [json.loads(line) for line in git(shared.origin, "show", f"{commit}:plan.jsonl").splitlines()]
    pushed = next(r for r in records if r["t"] == "task" and r["id"] == loser)
    assert pushed["merge_conflict"] == ["shared.txt"]
    assert pushed["s"] == "p" and "claimed_by" not in pushed
    final = git(shared.origin, "show", "main:shared.txt")
    assert final == f"{loser} attempt 2\n"  # built again on top of the other's file
    state = next(r for r in plan if r["t"] == "state")
    assert state["spent"]["BUILD"]["runs"] == 3  # the undone build's run still counts
    logs = [shared.base / f"clone{n}" / "build" / "ralph-logs" / "conflicts" for n in range(2)]
    kept = [patch for folder in logs for patch in folder.glob("*.patch")]
    assert len(kept) == 1 and kept[0].name.startswith(loser)  # the undone build, kept
    assert f"+{loser} attempt 1" in kept[0].read_text()


def two_runners(shared: Shared, state: Path) -> None:
    """Two runners started at once, each in its own clone, sharing the agent's counters."""
    runs = [
        construct(
            shared.clone(f"clone{n}"),
            "--remote",
            "origin",
            "--runner",
            f"runner-{n}",
            wait=False,
            env={"FAKE_AGENT_STATE": str(state)},
        )
        for n in range(2)
    ]
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, out + err


def two_runners_journal(shared: Shared) -> list[dict]:
    """The events of both clones of two_runners, one list."""
    logs = (shared.base / f"clone{n}" / "build" / "ralph-logs" / "events.jsonl" for n in range(2))
    return [json.loads(line) for log in logs for line in log.read_text().splitlines()]


@pytest.mark.slow  # two runners at once on a bare remote (see TWO_RUNNERS_IN_MAKE_TEST)
def test_two_runners_on_one_issue_investigate_it_once(repo, tmp_path):
    with_app_spec(repo, "# App\n")
    issue = issues.add(repo, "The report is wrong [slow]")  # INVESTIGATE takes 2 s: both runners see it
    shared = Shared(repo, tmp_path)
    state = tmp_path / "agent-state"
    two_runners(shared, state)
    assert (state / f"investigate-{issue['id']}").read_text() == "1"
    subjects = git(shared.origin, "log", "--format=%s", "main").splitlines()
    assert sum(s.startswith(f"ralph(investigate): {issue['id']} ") for s in subjects) == 1
    assert sum(s.startswith(f"ralph: claim {issue['id']} to investigate ") for s in subjects) == 1
    plan = origin_plan(shared)
    assert [r["name"] for r in plan if r["t"] == "accept"] == [f"Fix what {issue['id']} found"]
    assert not [r for r in plan if r["t"] in ("task", "issue")]


@pytest.mark.slow  # two runners at once on a bare remote (see TWO_RUNNERS_IN_MAKE_TEST)
def test_two_runners_on_a_spec_with_no_tasks_plan_it_once(repo, tmp_path):
    with_app_spec(repo, "# App [slow]\n\n- Parse input\n- Print report\n")  # PLAN takes 2 s
    shared = Shared(repo, tmp_path)
    state = tmp_path / "agent-state"
    two_runners(shared, state)
    assert (state / "plan").read_text() == "1"
    subjects = git(shared.origin, "log", "--format=%s", "main").splitlines()
    assert sum(s.startswith("ralph(plan): specs/app.md: 2 tasks") for s in subjects) == 1
    assert sum(s.startswith("ralph: claim specs/app.md to plan ") for s in subjects) == 1
    plan = origin_plan(shared)
    assert sorted(r["name"] for r in plan if r["t"] == "accept") == ["Parse input", "Print report"]
    spec = next(r for r in plan if r["t"] == "spec")
    assert "claimed_by" not in spec


@pytest.mark.slow
def test_two_runners_decompose_a_killed_task_once(repo, tmp_path):
    shared = seeded(repo, tmp_path, [{"id": "t-hard", "name": "Hard [slow-decompose]"}])  # DECOMPOSE: 2 s
    with transaction(repo, commit=True) as change:
        change.plan.set_aside("t-hard", KillReason.TIMEOUT, "BUILD timed out")
        change.message = "ralph(build): t-hard set aside"
    git(repo, "push", "-q", "origin", "main")
    state = tmp_path / "agent-state"
    two_runners(shared, state)
    assert (state / "decompose-t-hard").read_text() == "1"
    subjects = git(shared.origin, "log", "--format=%s", "main").splitlines()
    assert sum(s.startswith("ralph(decompose): t-hard -> ") for s in subjects) == 1
    plan = origin_plan(shared)
    assert sorted(r["name"] for r in plan if r["t"] == "accept") == ["Hard (part 1)", "Hard (part 2)"]


@pytest.mark.slow
def test_three_runners_build_twelve_tasks_each_exactly_once(repo, tmp_path):
    items = []
    for n in range(12):  # every third task needs the one before it
        item: dict[str, str | list[str]] = {"id": f"t-task{n:02d}", "name": f"Task {n}"}
        if n % 3 == 2:
            item["deps"] = [f"t-task{n - 1:02d}"]
        items.append(item)
    shared = seeded(repo, tmp_path, items)
    clones = [shared.clone(f"clone{n}") for n in range(3)]
    states = [tmp_path / f"state{n}" for n in range(3)]
    runs = [
        construct(
            clone,
            "--remote",
            "origin",
            "--runner",
            f"runner-{n}",
            "--max-iterations",
            "20",
            wait=False,
            env={"FAKE_AGENT_STATE": str(state)},
        )
        for n, (clone, state) in enumerate(zip(clones, states, strict=True))
    ]
    outputs = [run.communicate(timeout=600) for run in runs]
    for run, (out, err) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, out + err
    assert build_counts(*states) == {item["id"]: 1 for item in items}  # each built exactly once
    plan = origin_plan(shared)
    assert sorted(r["id"] for r in plan if r["t"] == "accept") == [item["id"] for item in items]
    assert not [r for r in plan if r["t"] == "task"]
    subjects = git(shared.origin, "log", "--format=%s", "main").splitlines()
    for item in items:  # one build commit per task on the final head
        assert sum(s.startswith(f"ralph(build): {item['id']} ") for s in subjects) == 1, item["id"]
    verified = [s for s in subjects if s.startswith("ralph(verify): accepted ")]
    accepted = [i for s in verified for i in s.removeprefix("ralph(verify): accepted ").split(", ")]
    assert sorted(accepted) == [item["id"] for item in items]  # each verified once, by one runner
    final = shared.clone("final")
    check = ralph_in_process(final, "check")
    assert check.returncode == 0, check.stderr
    git(shared.origin, "fsck", "--no-progress")


@pytest.mark.slow
def test_sixteen_runners_build_thirty_two_tasks_each_exactly_once_and_none_gives_up(repo, tmp_path):
    items = [{"id": f"t-task{n:02d}", "name": f"Task {n}"} for n in range(32)]
    shared = seeded(repo, tmp_path, items)
    clones = [shared.clone(f"clone{n}") for n in range(16)]
    states = [tmp_path / f"state{n}" for n in range(16)]
    runs = [
        construct(
            clone,
            "--remote",
            "origin",
            "--runner",
            f"runner-{n}",
            "--parallel",
            "1",
            wait=False,
            env={"FAKE_AGENT_STATE": str(state)},
        )
        for n, (clone, state) in enumerate(zip(clones, states, strict=True))
    ]
    outputs = [run.communicate(timeout=900) for run in runs]
    for run, (out, err) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, out + err
    assert build_counts(*states) == {item["id"]: 1 for item in items}  # each built exactly once
    plan = origin_plan(shared)
    assert sorted(r["id"] for r in plan if r["t"] == "accept") == [item["id"] for item in items]
    assert git(shared.origin, "for-each-ref", "refs/ralph/claims/") == ""  # every claim went with its task
    assert git(shared.origin, "for-each-ref", "refs/ralph/turn/") == ""  # each turn ended with its push
    subjects = git(shared.origin, "log", "--format=%s", "main").splitlines()
    for item in items:  # the story of each task on the branch: one build, one verdict
        assert sum(s.startswith(f"ralph(build): {item['id']} ") for s in subjects) == 1, item["id"]
    accepted = [i for s in subjects if s.startswith("ralph(verify): accepted ") for i in s[24:].split(", ")]
    assert sorted(accepted) == [item["id"] for item in items]
    git(shared.origin, "fsck", "--no-progress")


def claimed_on_origin(shared: Shared) -> list[str]:
    return sorted(claim_holders(shared).values())


def claim_holders(shared: Shared) -> dict[str, str]:
    """The claim refs on the origin: task -> runner."""
    out = git(
        shared.origin, "for-each-ref", "--format=%(refname:lstrip=3)%09%(contents:body)", "refs/ralph/claims/"
    )
    holders = {}
    for line in out.splitlines():
        if "\t" in line:
            task, said = line.split("\t", 1)
            holders[task] = json.loads(said.removeprefix("Ralph-Claim: "))["by"]
    return holders


def take_over(clone: Path, task_id: str, runner: str) -> str | None:
    """`runner` in `clone` takes the task's claim ref over, as a runner that judges it stale does."""
    from ralph.store.git import Repo
    from ralph.store.remote import Remote
    from ralph.usecases import claim_refs

    remote = Remote(Repo(clone))
    remote.fetch(claims=True)
    won = claim_refs.claim_task([{"id": task_id}], runner, remote, 0.0, claim_refs.to_build)
    return won.task_id if won else None


@pytest.mark.slow
def test_a_runner_killed_holding_a_claim_loses_the_task_to_another_once_the_claim_is_stale(repo, tmp_path):
    shared = seeded(repo, tmp_path, [{"id": "t-task00", "name": "Task [hang-once]"}])
    one, two = shared.clone("one"), shared.clone("two")
    state = tmp_path / "agent-state"  # shared: the second build of the task is its second attempt
    env = {"FAKE_AGENT_STATE": str(state)}
    first = construct(one, "--remote", "origin", "--runner", "doomed", wait=False, env=env)
    try:
        for _ in range(600):  # until its claim is on the remote and its agent hangs
            if claimed_on_origin(shared) == ["doomed"] and (state / "t-task00.agent.pid").exists():
                break
            time.sleep(0.1)
        assert claimed_on_origin(shared) == ["doomed"]
        first.send_signal(signal.SIGKILL)
        first.communicate()
        done = construct(two, "--remote", "origin", "--runner", "heir", "--claim-ttl", "1s", env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    finally:
        for pid_file in state.glob("*.pid"):
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
    plan = origin_plan(shared)
    assert [r["id"] for r in plan if r["t"] == "accept"] == ["t-task00"]
    assert [(r["by"], r["was_claimed_by"]) for r in plan if r["t"] == "takeover"] == [("heir", "doomed")]


@pytest.mark.slow
def test_a_runner_verifies_one_claimed_batch_after_another_in_one_verify_stage(repo, tmp_path):
    items = [{"id": f"t-task{n:02d}", "name": f"Task {n}"} for n in range(3)]
    shared = seeded(repo, tmp_path, items)
    clone = shared.clone("one")
    done = construct(clone, "--remote", "origin", "--runner", "runner-1", "--parallel", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    subjects = git(shared.origin, "log", "--reverse", "--format=%s", "main").splitlines()
    assert [s for s in subjects if s.startswith("ralph(verify): ")] == [
        f"ralph(verify): accepted t-task{n:02d}" for n in range(3)
    ]
    events = [json.loads(line) for line in (clone / "build/ralph-logs/events.jsonl").read_text().splitlines()]
    # each batch of one followed the last in one VERIFY stage, not one batch per iteration
    assert [e["iteration"] for e in events if e["event"] == "iteration_begin"] == [1]


# `make test` has this run with one uncommitted plan change more, patch and all:
# test_a_build_taken_over_while_the_plan_has_uncommitted_changes_yields_without_gits_words
@pytest.mark.slow
def test_a_build_of_a_task_taken_over_meanwhile_yields_to_the_taker_and_is_kept_as_a_patch(repo, tmp_path):
    from ralph.loop.share.remote import RemoteCoordinator

    shared = seeded(repo, tmp_path, [{"id": "t-task00", "name": "Task 0"}])
    slow, heir = shared.clone("slow"), shared.clone("heir")
    coordinator = RemoteCoordinator(slow, "specs/app.md", "origin", runner="slow")
    assert coordinator.before_build() == "t-task00"
    # The slow runner's build outlives its claim: another runner takes the task over.
    assert take_over(heir, "t-task00", "heir") == "t-task00"
    (slow / "built.txt").write_text("the slow build\n")
    git(slow, "add", "built.txt")
    git(slow, "commit", "-qm", "build t-task00")
    tasks.done(slow, "t-task00")
    assert coordinator.after_build("t-task00") == []  # waits here for its verdict
    coordinator.release_all()  # the run ends: what it built goes out, but for a task taken over
    plan = origin_plan(shared)
    assert [(r["id"], r.get("claimed_by"), r.get("s", "p")) for r in plan if r["t"] == "task"] == [
        ("t-task00", None, "p")
    ]
    assert claim_holders(shared) == {"t-task00": "heir"}
    assert "build t-task00" not in git(shared.origin, "log", "--format=%s", "main")
    assert git(slow, "rev-parse", "HEAD") == git(shared.origin, "rev-parse", "main")
    [patch] = (slow / "build" / "ralph-logs" / "conflicts").glob("t-task00-*.patch")
    assert "+the slow build" in patch.read_text()


def test_a_build_taken_over_while_the_plan_has_uncommitted_changes_yields_without_gits_words(repo, tmp_path):
    """The loop's own uncommitted plan changes (its state record, a run's spending) beside the
    build: `git reset --keep` refused them (`Entry 'plan.jsonl' not uptodate`) and the run ended
    exit 1 in git's words. They are carried onto the remote's head instead, and the build yields."""
    from ralph.loop.share.remote import RemoteCoordinator

    shared = seeded(repo, tmp_path, [{"id": "t-task00", "name": "Task 0"}])
    slow, heir = shared.clone("slow"), shared.clone("heir")
    coordinator = RemoteCoordinator(slow, "specs/app.md", "origin", runner="slow")
    assert coordinator.before_build() == "t-task00"
    assert take_over(heir, "t-task00", "heir") == "t-task00"
    (slow / "built.txt").write_text("the slow build\n")
    git(slow, "add", "built.txt")
    git(slow, "commit", "-qm", "build t-task00")
    tasks.done(slow, "t-task00")
    tasks.add(slow, [{"id": "t-local", "name": "Not committed yet"}], commit=False)
    assert coordinator.after_build("t-task00") == []  # waits here for its verdict
    coordinator.release_all()  # the run ends: what it built goes out, but for a task taken over
    plan = origin_plan(shared)
    assert [(r["id"], r.get("claimed_by"), r.get("s", "p")) for r in plan if r["t"] == "task"] == [
        ("t-task00", None, "p"),
        ("t-local", None, "p"),  # carried, and pushed with the next commit
    ]
    assert claim_holders(shared) == {"t-task00": "heir"}
    assert "build t-task00" not in git(slow, "log", "--format=%s")
    assert not (slow / "built.txt").exists()
    assert '"t-local"' in (slow / "plan.jsonl").read_text()  # the uncommitted change kept
    assert git(slow, "rev-parse", "HEAD") == git(shared.origin, "rev-parse", "main")
    [patch] = (slow / "build" / "ralph-logs" / "conflicts").glob("t-task00-*.patch")
    assert "+the slow build" in patch.read_text()  # the build yielded is kept as a patch


def test_a_build_taken_over_with_a_persons_edit_in_the_way_ends_remote_in_one_line(repo, tmp_path):
    from ralph.errors import RemoteError
    from ralph.loop.share.remote import RemoteCoordinator

    shared = seeded(repo, tmp_path, [{"id": "t-task00", "name": "Task 0"}])
    slow, heir = shared.clone("slow"), shared.clone("heir")
    coordinator = RemoteCoordinator(slow, "specs/app.md", "origin", runner="slow")
    assert coordinator.before_build() == "t-task00"
    assert take_over(heir, "t-task00", "heir") == "t-task00"
    (slow / "built.txt").write_text("the slow build\n")
    git(slow, "add", "built.txt")
    git(slow, "commit", "-qm", "build t-task00")
    tasks.done(slow, "t-task00")
    (slow / "built.txt").write_text("a person's edit\n")
    head = git(slow, "rev-parse", "HEAD")
    with pytest.raises(RemoteError, match="would overwrite changes you have not committed") as raised:
        coordinator.after_build("t-task00")
        coordinator.release_all()
    assert "\n" not in str(raised.value).strip() and "kept as build/ralph-logs/conflicts/" in str(
        raised.value
    )
    assert git(slow, "rev-parse", "HEAD") == head and (slow / "built.txt").read_text() == "a person's edit\n"


def test_a_run_that_ends_in_an_unexpected_error_gives_its_claims_back(project, monkeypatch):
    from ralph.errors import GitError
    from ralph.loop.share.coordinator import Solo
    from tests.support.construct import add_tasks

    released: list[bool] = []

    class Failing(Solo):
        def next_items(self, ready):
            raise GitError("git broke mid-run")

        def release(self, quietly=False):
            released.append(quietly)

    monkeypatch.setattr("ralph.loop.stages.workspace.Solo", Failing)
    add_tasks(project, "Some work")
    done = construct(project, "--max-iterations", "1", "--parallel", "1")
    assert done.returncode != 0 and "git broke mid-run" in done.stderr
    assert released == [True]  # once, quietly: the error that ended the run is the one reported


@pytest.mark.slow  # two runners at once on a bare remote (see TWO_RUNNERS_IN_MAKE_TEST)
def test_a_spec_claimed_by_a_runner_whose_clock_is_two_hours_behind_is_planned_once(repo, tmp_path):
    with_app_spec(repo, "# App [slow]\n\n- Parse input\n- Print report\n")  # PLAN takes 2 s
    shared = Shared(repo, tmp_path)
    state = tmp_path / "agent-state"
    env = {"FAKE_AGENT_STATE": str(state)}
    behind = construct(
        shared.clone("behind"), "--remote", "origin", "--runner", "behind", wait=False,
        env={**env, "RALPH_CLOCK_SKEW_S": str(-2 * 3600)},
    )  # fmt: skip
    try:
        for _ in range(600):  # until its claim on the spec is on the remote: its PLAN runs
            if any(r.get("claimed_by") == "behind" for r in origin_plan(shared) if r["t"] == "spec"):
                break
            time.sleep(0.05)
        # Its claimed_at is two hours old on this runner's clock, beyond the TTL of 30 minutes.
        on_time = construct(shared.clone("on-time"), "--remote", "origin", "--runner", "on-time", env=env)
        assert on_time.returncode == 0, on_time.stdout + on_time.stderr
    finally:
        out, err = behind.communicate(timeout=300)
    assert behind.returncode == 0, out + err
    assert (state / "plan").read_text() == "1"
    plan = origin_plan(shared)
    assert not [r for r in plan if r["t"] == "takeover"]
    assert sorted(r["name"] for r in plan if r["t"] == "accept") == ["Parse input", "Print report"]


@pytest.mark.slow  # two runners at once on a bare remote (see TWO_RUNNERS_IN_MAKE_TEST)
def test_a_build_lacking_what_another_runner_published_is_given_back_and_built_after_catching_up(
    repo, tmp_path
):
    """The agent-failure rule (a run that failed without changing anything is retried, and five in
    a row end the run) meets runners: a runner retrying on its own stale base would fail until
    AGENT_FAILING. Once others published, its failed build is given back uncounted, and built
    again on the remote's head."""
    items = [
        {"id": "t-task00", "name": "Base [after-a-need]"},
        {"id": "t-task01", "name": "Uses the base [needs-t-task00]", "priority": "high"},
    ]
    shared = seeded(repo, tmp_path, items)
    state = tmp_path / "agent-state"
    two_runners(shared, state)
    plan = origin_plan(shared)
    assert sorted(r["id"] for r in plan if r["t"] == "accept") == ["t-task00", "t-task01"]
    journal = two_runners_journal(shared)
    # given back (others were building) or deferred (another task may bring it): uncounted either way
    given_back = [e["item"] for e in journal if e["event"] in ("build_stale_base", "build_deferred")]
    assert given_back and set(given_back) == {"t-task01"}
    assert not [e for e in journal if e["event"] == "build_failed"]
    assert git(shared.origin, "show", "main:work/t-task01.txt").startswith("ok t-task01")


@pytest.mark.slow
def test_a_runner_whose_agent_keeps_failing_ends_agent_failing_and_another_builds_its_tasks(repo, tmp_path):
    from tests.support.hooks import config_set

    config_set(repo, "agent_retry_ms", "10ms")
    config_set(repo, "max_agent_failures", "3")
    items = [{"id": f"t-task{n:02d}", "name": f"Task {n}"} for n in range(2)]
    shared = seeded(repo, tmp_path, items)
    one, two = shared.clone("one"), shared.clone("two")

    failing = construct(one, "--remote", "origin", "--runner", "broken", agent="false")

    assert failing.returncode == 12, failing.stdout + failing.stderr
    assert failing.stdout.startswith("ralph: AGENT_FAILING")
    plan = origin_plan(shared)
    assert not [r for r in plan if r.get("claimed_by")]  # its claims went back with it
    assert all(r.get("attempts", 0) == 0 for r in plan if r["t"] == "task")  # and it spent no attempt

    done = construct(
        two, "--remote", "origin", "--runner", "sound", env={"FAKE_AGENT_STATE": str(tmp_path / "s2")}
    )

    assert done.returncode == 0, done.stdout + done.stderr  # no claim of the broken runner to wait out
    assert sorted(r["id"] for r in origin_plan(shared) if r["t"] == "accept") == ["t-task00", "t-task01"]


@pytest.mark.slow  # two runners at once on a bare remote (see TWO_RUNNERS_IN_MAKE_TEST)
def test_a_build_failing_while_another_runner_builds_what_it_needs_is_given_back_and_held(repo, tmp_path):
    """Issue 23's "waits for a neighbour" between runners: a build whose gate fails while another
    runner is still building the task it needs is given back uncounted, and this runner does not
    take it again until something is published; then it passes on the remote's head."""
    items = [
        {"id": "t-task00", "name": "Base [slow-build]"},
        {"id": "t-task01", "name": "Uses the base [fails-without-t-task00]", "priority": "high"},
    ]
    shared = seeded(repo, tmp_path, items)
    state = tmp_path / "agent-state"
    two_runners(shared, state)
    plan = origin_plan(shared)
    assert sorted(r["id"] for r in plan if r["t"] == "accept") == ["t-task00", "t-task01"]
    journal = two_runners_journal(shared)
    assert {e["item"] for e in journal if e["event"] == "build_stale_base"} == {"t-task01"}
    assert not [e for e in journal if e["event"] == "build_failed"]  # no attempt spent on it
    assert not [e for e in journal if e["event"] == "task_killed"]
    assert git(shared.origin, "show", "main:work/t-task01.txt").startswith("ok t-task01")


def test_a_held_task_is_not_claimed_again_until_the_remote_moves(repo, tmp_path):
    from ralph.loop.share.remote import RemoteCoordinator

    shared = seeded(repo, tmp_path, [{"id": "t-task00", "name": "Task"}, {"id": "t-task01", "name": "Other"}])
    one, two = shared.clone("one"), shared.clone("two")
    coordinator = RemoteCoordinator(one, "specs/app.md", "origin", runner="one")
    coordinator.remote.fetch()
    coordinator.hold("t-task00")

    assert coordinator.before_build() == "t-task01"  # the held one is skipped, the other claimed
    assert coordinator._held_back() == {"t-task00"}  # a claim was pushed since: no code
    assert not coordinator.others_published()
    git(two, "pull", "-q", "origin", "main")
    (two / "work").mkdir()
    (two / "work" / "t-task01.txt").write_text("ok t-task01\n")
    git(two, "add", "work")
    git(two, "commit", "-qm", "another runner's build")
    git(two, "push", "-q", "origin", "HEAD:main")
    assert coordinator.others_published()  # fetches
    assert coordinator._held_back() == set()  # code was published: it may be built again


def test_a_held_task_waits_for_the_builds_under_way_when_it_was_given_back_not_for_any_code(repo, tmp_path):
    """A build of t-task01 given back while another runner was building t-task00 most likely
    failed for want of t-task00's change: a third runner's publish of other code does not free it
    (built again then, it would fail again: a run for nothing); t-task00's publish does."""
    from ralph.loop.share.remote import RemoteCoordinator

    items = [{"id": f"t-task{n:02d}", "name": f"Task {n}"} for n in range(3)]
    shared = seeded(repo, tmp_path, items)
    one, two, three = shared.clone("one"), shared.clone("two"), shared.clone("three")
    builder = RemoteCoordinator(two, "specs/app.md", "origin", runner="two")
    assert builder.before_build() == "t-task00"
    waiting = RemoteCoordinator(one, "specs/app.md", "origin", runner="one")
    waiting.remote.fetch()
    waiting.hold("t-task01")  # its build failed while t-task00's was under way

    git(three, "pull", "-q", "origin", "main")
    (three / "other.txt").write_text("another runner's code\n")
    git(three, "add", "other.txt")
    git(three, "commit", "-qm", "other code")
    git(three, "push", "-q", "origin", "HEAD:main")
    assert waiting.others_published()  # fetches
    assert waiting._held_back() == {"t-task01"}  # t-task00's build is still under way
    assert waiting.before_build() == "t-task02"

    (two / "work").mkdir()
    (two / "work" / "t-task00.txt").write_text("ok t-task00\n")
    ralph_in_process(two, "task", "done", "t-task00", "--no-commit")
    git(two, "add", "work", "plan.jsonl")
    git(two, "commit", "-qm", "ralph(build): t-task00 Task 0")
    assert builder.after_build("t-task00") == []  # it waits here for its verdict
    builder.release_all()  # the builder's run ends: its build goes out

    assert waiting.others_published()
    assert waiting._held_back() == set()  # what it waited for is in: it may be built again


def claim_said(shared: Shared, task: str) -> tuple[dict, str]:
    """The Ralph-Claim fields of the task's claim ref on the origin, and the claim commit's subject."""
    body = git(shared.origin, "log", "-1", "--format=%b", f"refs/ralph/claims/{task}")
    subject = git(shared.origin, "log", "-1", "--format=%s", f"refs/ralph/claims/{task}")
    return json.loads(body.strip().removeprefix("Ralph-Claim: ")), subject.strip()


def publish_build(clone: Path, coordinator: RemoteCoordinator, task: str) -> None:
    """The task built and judged done in `clone`, and the runner's run ending: all of it goes out."""
    (clone / "work").mkdir(exist_ok=True)
    (clone / "work" / f"{task}.txt").write_text(f"ok {task}\n")
    ralph_in_process(clone, "task", "done", task, "--no-commit")
    git(clone, "add", "work", "plan.jsonl")
    git(clone, "commit", "-qm", f"ralph(build): {task}")
    assert coordinator.after_build(task) == []
    coordinator.release_all()


def test_a_task_given_back_to_wait_stays_claimed_held_and_no_other_runner_builds_it_before_then(
    repo, tmp_path
):
    """Runner one's build of t-task01 failed while runner two built t-task00 (most likely what it
    needs): its claim stays on the remote, marked held, so a third runner builds t-task02 instead
    of failing on t-task01 too (three runners replaying a history built such a task up to three
    times, once each). Once t-task00 is published the wait is over: whoever comes next claims
    t-task01 again, and no takeover is recorded (nobody died). `ralph status --remote` says why
    the claim is there."""
    from ralph.loop.share.remote import RemoteCoordinator

    items = [{"id": f"t-task{n:02d}", "name": f"Task {n}"} for n in range(3)]
    shared = seeded(repo, tmp_path, items)
    one, two, three = shared.clone("one"), shared.clone("two"), shared.clone("three")
    builder = RemoteCoordinator(two, "specs/app.md", "origin", runner="two")
    assert builder.before_build() == "t-task00"
    failed = RemoteCoordinator(one, "specs/app.md", "origin", runner="one")
    assert failed.before_build() == "t-task01"
    failed.hold("t-task01")  # its build failed while t-task00's was under way: given back, uncounted
    assert failed.after_build("t-task01") == []

    said, subject = claim_said(shared, "t-task01")
    assert said["by"] == "one" and said["waits_for"] == ["t-task00"]
    assert said["held_at"] == git(shared.origin, "rev-parse", "main").strip()
    assert subject == "ralph: hold t-task01: it waits for t-task00 to be published (one)"
    status = ralph_in_process(three, "status", "--remote")
    assert "t-task01 Task 1: one on " in status.stdout
    assert " (held: waits for t-task00 to be published), " in status.stdout
    listed = json.loads(ralph_in_process(three, "status", "--remote", "--json").stdout)["claims"]
    assert {c["task"]: c["waits_for"] for c in listed} == {"t-task00": None, "t-task01": ["t-task00"]}
    third = RemoteCoordinator(three, "specs/app.md", "origin", runner="three")
    assert third.before_build() == "t-task02"  # not t-task01, which comes first by the plan
    third.release_all()

    publish_build(two, builder, "t-task00")
    late = RemoteCoordinator(three, "specs/app.md", "origin", runner="three")
    assert late.before_build() == "t-task01"  # the wait is over: free for whoever comes
    said, subject = claim_said(shared, "t-task01")
    assert said["by"] == "three" and "held_at" not in said
    assert subject == "ralph: claim t-task01 again (three)"
    held = git(
        shared.origin, "rev-parse", "refs/ralph/claims/t-task01^"
    ).strip()  # its parent: the held claim
    assert "hold t-task01" in git(shared.origin, "log", "-1", "--format=%s", held)
    publish_build(three, late, "t-task01")
    assert not [r for r in origin_plan(shared) if r["t"] == "takeover"]
    assert failed.before_build() == "t-task02"  # the runner that held it goes on with the rest
    assert "t-task01" not in claim_holders(shared)


def test_a_task_held_by_another_runner_with_nothing_under_way_is_built_as_the_code_is(repo, tmp_path):
    """The one task left is held by runner one's claim, waiting for code to be published, and
    nobody builds anything: nothing will end the wait, so runner two builds it on the code as it
    is rather than wait for ever (nor end its run with the task undone)."""
    from ralph.loop.share.remote import RemoteCoordinator

    shared = seeded(repo, tmp_path, [{"id": "t-task00", "name": "Task 0"}])
    one, two = shared.clone("one"), shared.clone("two")
    holder = RemoteCoordinator(one, "specs/app.md", "origin", runner="one")
    assert holder.before_build() == "t-task00"
    holder.hold("t-task00")  # given back: others had published code it lacked
    assert holder.after_build("t-task00") == []
    assert claim_said(shared, "t-task00")[0]["waits_for"] == []

    other = RemoteCoordinator(two, "specs/app.md", "origin", runner="two", sleep=lambda s: None)
    assert other.before_build() == "t-task00"
    said, subject = claim_said(shared, "t-task00")
    assert said["by"] == "two" and subject == "ralph: claim t-task00 again (two)"


def test_held_tasks_built_as_the_code_is_take_turns_before_any_is_built_again(repo, tmp_path):
    """Two tasks held, nothing under way: each is built as the code is once before either is built
    again on the same code (one of them may pass and move the code; building the first again
    spent its attempts and split it, with three runners replaying a history newest first)."""
    from ralph.loop.share.remote import RemoteCoordinator

    shared = seeded(
        repo, tmp_path, [{"id": "t-task00", "name": "Task 0"}, {"id": "t-task01", "name": "Task 1"}]
    )
    one, two = shared.clone("one"), shared.clone("two")
    holder = RemoteCoordinator(one, "specs/app.md", "origin", runner="one")
    for task in ("t-task00", "t-task01"):
        assert holder.before_build() == task
        holder.hold(task)
        assert holder.after_build(task) == []
    other = RemoteCoordinator(two, "specs/app.md", "origin", runner="two", sleep=lambda s: None)
    built: list[str] = []
    for _ in range(3):
        claimed = other.before_build()
        assert claimed is not None
        built.append(claimed)
        other.hold(claimed)  # its build failed beside the other held task: given back again
        assert other.after_build(claimed) == []
    assert built == ["t-task00", "t-task01", "t-task00"]


def test_a_runner_asks_a_person_when_a_failure_survives_a_split_instead_of_building_it_again(repo, tmp_path):
    """The build stage's own judgement holds for a runner sharing a remote too: a part failing
    as its ancestor did goes to a person, one question for its family, published; the other
    part waits with it. (A runner claimed by ref whatever the plan had ready, and built that
    part 195 times in a minute.)"""
    items = [{"id": "t-task00", "name": "Hopeless [hopeless]"}, {"id": "t-task01", "name": "Good"}]
    shared = seeded(repo, tmp_path, items)
    state = tmp_path / "agent-state"
    flags = ("--remote", "origin", "--runner", "one", "--no-review", "--max-minutes", "1")  # a loop ends
    ran = construct(shared.clone("one"), *flags)

    assert ran.returncode == 9, ran.stdout + ran.stderr  # WAITING: for a person's answer
    plan = origin_plan(shared)
    (question,) = [r for r in plan if r["t"] == "issue" and r.get("family") == "t-task00"]
    parts = [r for r in plan if r["t"] == "task" and r.get("family") == "t-task00"]
    assert len(parts) == 2 and all(r["s"] == "b" and r["blocked_by"] == question["id"] for r in parts)
    builds = build_counts(state)
    assert builds["t-task00"] == 2 and sorted(builds.get(part["id"], 0) for part in parts) == [0, 1]
    assert [r["id"] for r in plan if r["t"] == "accept"] == ["t-task01"]
    assert claim_holders(shared) == {}


def test_plan_changes_waiting_beside_a_build_that_conflicts_are_kept_when_it_is_undone(repo, tmp_path):
    """The loop's uncommitted plan changes (a person's task added during the run, its bookkeeping)
    go into a commit of their own at the start of the publishing round; the build conflicts with
    what another runner pushed, and this runner's unpushed commits are undone. The changes that
    waited beside the build are not the build's: they stay in the plan, counted once."""
    from ralph.loop.share.remote import RemoteCoordinator

    shared = seeded(
        repo, tmp_path, [{"id": "t-task00", "name": "Task 0"}, {"id": "t-task01", "name": "Task 1"}]
    )
    slow, rival = shared.clone("slow"), shared.clone("rival")
    coordinator = RemoteCoordinator(slow, "specs/app.md", "origin", runner="slow")
    assert coordinator.before_build() == "t-task00"
    (rival / "shared.txt").write_text("the rival's\n")
    git(rival, "add", "shared.txt")
    git(rival, "commit", "-qm", "the rival's shared.txt")
    git(rival, "push", "-q", "origin", "HEAD:main")
    (slow / "shared.txt").write_text("the slow build's\n")
    git(slow, "add", "shared.txt")
    git(slow, "commit", "-qm", "build t-task00")
    tasks.done(slow, "t-task00")
    tasks.add(slow, [{"id": "t-local", "name": "Added by a person during the run"}], commit=False)
    with transaction(slow, commit=False) as change:  # the loop's bookkeeping: the build's run
        change.plan.add_spending({"BUILD": {"runs": 1, "tokens": 700}})

    # Its first push lost the race: the build waits for the run's last publish, which conflicts.
    assert coordinator.after_build("t-task00") == []
    coordinator.release_all()

    assert "build t-task00" not in git(shared.origin, "log", "--format=%s", "main")
    here = [
        json.loads(line)["id"] for line in (slow / "plan.jsonl").read_text().splitlines() if '"task"' in line
    ]
    on_origin = [r["id"] for r in origin_plan(shared) if r["t"] == "task"]
    assert "t-local" in here or "t-local" in on_origin, (here, on_origin)
    state = next(r for r in origin_plan(shared) if r["t"] == "state")
    spent = state["spent"]["BUILD"]
    assert (spent["runs"], spent["tokens"]) == (1, 700)  # counted once, not carried and added again
