"""Claims through a shared git remote (ralph.usecases.claims) with real git: one bare repository,
clones of it, claims pushed as plan commits. The push is the compare-and-swap: races between
clones, in one process and in two, leave each task claimed by exactly one runner."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from ralph import clock
from ralph.errors import RemoteError, RemoteOffline
from ralph.plan.loader import load
from ralph.plan.plan import Plan
from ralph.store.git import Repo
from ralph.store.reader import read_plan
from ralph.store.remote import Remote
from ralph.store.transaction import transaction
from ralph.usecases import claims, sync, tasks
from tests.support.gitrepo import Shared, git
from tests.support.plans import task_in
from tests.support.present import present


def seed(shared_repo: Path, *items: dict) -> None:
    tasks.add(shared_repo, [dict(item) for item in items])


def on_origin(shared) -> Plan:
    return Plan(load(shared.plan_on_origin()))


def remote_of(clone: Path, **kwargs) -> Remote:
    return Remote(Repo(clone), retries=kwargs.pop("retries", 2), backoff_s=0.01, **kwargs)


def three_tasks_two_clones(repo: Path, base: Path) -> Shared:
    seed(
        repo,
        {"id": "t-aaaaaa", "name": "A"},
        {"id": "t-bbbbbb", "name": "B"},
        {"id": "t-cccccc", "name": "C"},
    )
    shared = Shared(repo, base)
    shared.clone("one"), shared.clone("two")
    return shared


@pytest.fixture
def three(shared_copy):
    """origin with three independent tasks, and two clones of it (made once, copied for each test)."""
    shared = shared_copy("claims-three", three_tasks_two_clones)
    return shared, shared.base / "one", shared.base / "two"


def test_a_claim_is_a_pushed_plan_commit_and_the_next_runner_takes_the_next_task(three):
    shared, one, two = three
    first = present(claims.claim_next(one, None, "runner-1", remote_of(one)))
    second = present(claims.claim_next(two, None, "runner-2", remote_of(two)))
    assert (first["id"], second["id"]) == ("t-aaaaaa", "t-bbbbbb")
    origin = on_origin(shared)
    assert task_in(origin, "t-aaaaaa")["claimed_by"] == "runner-1"
    assert task_in(origin, "t-bbbbbb")["claimed_by"] == "runner-2"
    subject = git(shared.origin, "log", "-1", "--format=%s", "main").strip()
    assert subject == "ralph: claim t-bbbbbb B (runner-2)"
    assert git(two, "status", "--porcelain") == ""


def test_a_runner_that_claims_again_gets_its_own_task_back_first(three):
    shared, one, _ = three
    claims.claim_next(one, None, "runner-1", remote_of(one))
    again = present(claims.claim_next(one, None, "runner-1", remote_of(one)))
    assert again["id"] == "t-aaaaaa"
    assert [task["id"] for task in on_origin(shared).claims()] == ["t-aaaaaa"]


class Beaten(Remote):
    """A remote another runner pushes to just before our first push: our push loses the race."""

    def __init__(self, repo: Repo, rival: Path, **kwargs):
        super().__init__(repo, **kwargs)
        self.rival, self.pushes = rival, 0

    def push(
        self,
        commit: str,
        drop: dict[str, str] | None = None,
        keep: dict[str, str] | None = None,
        mark: dict[str, tuple[str, str]] | None = None,
    ) -> bool:
        self.pushes += 1
        if self.pushes == 1:
            claims.claim_next(self.rival, None, "rival", remote_of(self.rival))
        return super().push(commit, drop, keep, mark)


# `make test` has it in test_nothing_moves_here_until_a_push_is_won_and_a_lost_race_takes_the_turn_first
# (the same race: the rival's t-aaaaaa dropped, t-bbbbbb claimed in the second push, one claim
# commit per claim on the remote)
@pytest.mark.slow
def test_a_lost_race_is_replayed_on_the_new_head_and_a_task_taken_meanwhile_is_dropped(three):
    shared, one, two = three
    remote = Beaten(Repo(two), rival=one, retries=0)
    won = present(claims.claim_next(two, None, "runner-2", remote))
    assert remote.pushes == 2
    assert won["id"] == "t-bbbbbb"  # t-aaaaaa went to the rival while runner-2's push was on its way
    _the_rival_holds_a_and_runner_2_b(shared)


def test_no_free_task_gives_none_and_commits_nothing(three):
    shared, one, two = three
    with transaction(one) as change:  # three runners' live claims, in one push, not three rounds
        for task, runner in (("t-aaaaaa", "r1"), ("t-bbbbbb", "r2"), ("t-cccccc", "r3")):
            change.plan.claim(task, runner, clock.now())
    git(one, "push", "-q", "origin", "main")
    before = git(shared.origin, "rev-parse", "main")
    assert claims.claim_next(two, None, "r4", remote_of(two)) is None
    assert git(shared.origin, "rev-parse", "main") == before


def test_a_stale_claim_is_taken_over_and_the_takeover_recorded(repo, tmp_path, monkeypatch):
    """A claim years old by its commit is taken over at first sight once another runner's clock
    agrees (that runner's claim made now); a runner whose clock nothing confirms yet takes a free
    task instead (its clock could be years ahead)."""
    seed(repo, {"id": "t-aaaaaa", "name": "A"}, {"id": "t-bbbbbb", "name": "B"})
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2020-01-01T00:00:00+00:00")  # a runner dead for years
    with transaction(repo) as change:
        change.plan.claim("t-aaaaaa", "dead-runner", "2020-01-01T00:00:00+00:00")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    shared = Shared(repo, tmp_path)
    one, two = shared.clone("one"), shared.clone("two")
    assert present(claims.claim_next(one, None, "runner-1", remote_of(one)))["id"] == "t-bbbbbb"
    assert present(claims.claim_next(two, None, "runner-2", remote_of(two)))["id"] == "t-aaaaaa"
    origin = on_origin(shared)
    assert task_in(origin, "t-aaaaaa")["claimed_by"] == "runner-2"
    takeovers = [line.record for line in origin.doc.records() if line.record["t"] == "takeover"]
    assert [(t["by"], t["was_claimed_by"], t["was_claimed_at"]) for t in takeovers] == [
        ("runner-2", "dead-runner", "2020-01-01T00:00:00+00:00")
    ]


# `make test` has its pick on a plan in memory, in
# test_the_next_task_is_of_the_runners_spec_or_none_and_under_no_live_claim_of_another
# (claim_next pushing a pick: test_a_claim_is_a_pushed_plan_commit_and_the_next_runner_takes_the_next_task)
@pytest.mark.slow
def test_a_live_claim_is_respected_until_the_ttl_says_it_is_stale(three):
    shared, one, two = three
    claims.claim_next(one, "specs/none.md", "runner-1", remote_of(one))  # tasks of no spec count for any
    assert present(claims.claim_next(two, None, "runner-2", remote_of(two)))["id"] == "t-bbbbbb"
    taken = present(claims.claim_next(two, None, "runner-3", remote_of(two), ttl_s=0.0))
    assert taken["id"] == "t-aaaaaa"  # a TTL of 0: every claim of another runner is stale


def test_the_next_task_is_of_the_runners_spec_or_none_and_under_no_live_claim_of_another():
    """claim_next's pick, on a plan in memory: a runner of one spec takes a task of no spec (those
    count for any spec) but not another spec's; another runner keeps off that claim while it is
    live, and takes it over once the TTL says it is stale."""
    plan = Plan(load(b""))  # no spec in its state: the tasks added have none but the one named
    plan.add_tasks([{"id": "t-ooooo0", "name": "Other", "spec": "specs/other.md"}])
    plan.add_tasks([{"id": "t-aaaaaa", "name": "A"}, {"id": "t-bbbbbb", "name": "B"}])

    assert present(claims.NextTask("specs/app.md", "runner-1")(plan))["id"] == "t-aaaaaa"
    assert present(claims.NextTask(None, "runner-2")(plan))["id"] == "t-ooooo0"
    assert present(claims.NextTask(None, "runner-3")(plan))["id"] == "t-bbbbbb"
    taken = present(claims.NextTask(None, "runner-4", ttl_s=0.0)(plan))
    assert taken["id"] == "t-ooooo0"  # a TTL of 0: every claim of another runner is stale
    assert claims.NextTask("specs/app.md", "runner-5")(plan) is None  # the rest live, or another spec's


def test_publish_merges_the_remote_and_pushes_the_build_with_the_claim_cleared(three):
    shared, one, two = three
    claims.claim_next(one, None, "runner-1", remote_of(one))
    (one / "a.txt").write_text("built\n")
    git(one, "add", "a.txt")
    git(one, "commit", "-qm", "build A")
    tasks.done(one, "t-aaaaaa")  # the build's plan commit frees the task
    claims.claim_next(two, None, "runner-2", remote_of(two))  # the remote moves meanwhile
    claims.publish(one, "t-aaaaaa", "runner-1", remote_of(one))
    origin = on_origin(shared)
    assert task_in(origin, "t-aaaaaa")["s"] == "d" and "claimed_by" not in task_in(origin, "t-aaaaaa")
    assert task_in(origin, "t-bbbbbb")["claimed_by"] == "runner-2"
    assert git(shared.origin, "show", "main:a.txt") == "built\n"
    assert git(shared.origin, "log", "-1", "--format=%s", "main").strip() == "ralph: merge origin/main"


def test_publish_clears_a_claim_the_build_left(three):
    shared, one, _ = three
    claims.claim_next(one, None, "runner-1", remote_of(one))
    claims.publish(one, "t-aaaaaa", "runner-1", remote_of(one))
    assert on_origin(shared).claims() == []
    assert (
        git(shared.origin, "log", "-1", "--format=%s", "main").strip() == "ralph: publish t-aaaaaa (runner-1)"
    )


# `make test` has it in cheaper tests: release in
# test_a_runner_gives_back_its_own_claim_on_the_remote_and_never_another_runners, release_all's ids
# dropped on the remote in test_a_namesakes_task_claim_on_another_host_is_neither_taken_nor_released,
# a runner's own claim again in test_a_runner_that_claims_again_gets_its_own_task_back_first
@pytest.mark.slow
def test_release_and_release_all_give_the_tasks_back(three):
    shared, one, _ = three
    claims.claim_next(one, None, "runner-1", remote_of(one))
    claims.claim_next(one, None, "runner-2", remote_of(one))
    claims.claim_next(one, None, "runner-2", remote_of(one))  # its own again: still one task
    claims.claim_next(one, None, "runner-1", remote_of(one))
    claims.release(one, "t-aaaaaa", "runner-1", remote_of(one))
    assert [t["claimed_by"] for t in on_origin(shared).claims()] == ["runner-2"]
    assert claims.release_all(one, "runner-2", remote_of(one)) == ["t-bbbbbb"]
    assert on_origin(shared).claims() == []


def test_a_runner_gives_back_its_own_claim_on_the_remote_and_never_another_runners(three):
    """`release` drops this runner's claim and pushes; a task another runner holds (it took it
    over meanwhile) is not this runner's to give back, even by name."""
    shared, one, _ = three
    with transaction(one) as change:  # two runners' claims, made here, pushed by the release
        change.plan.claim("t-aaaaaa", "runner-1", clock.now())
        change.plan.claim("t-bbbbbb", "runner-2", clock.now())
    claims.release(one, "t-aaaaaa", "runner-1", remote_of(one))
    claims.release(one, "t-bbbbbb", "runner-1", remote_of(one))
    assert [(t["id"], t["claimed_by"]) for t in on_origin(shared).claims()] == [("t-bbbbbb", "runner-2")]
    assert (
        git(shared.origin, "log", "-1", "--format=%s", "main").strip() == "ralph: release t-aaaaaa (runner-1)"
    )


def test_a_claim_on_the_same_task_that_reached_the_remote_first_wins_the_merge(three):
    shared, one, two = three
    with transaction(one) as change:  # runner-1 claimed t-aaaaaa here but never pushed it
        change.plan.claim("t-aaaaaa", "runner-1", clock.now())
    claims.claim_next(two, None, "runner-2", remote_of(two))  # runner-2's claim reaches origin
    claims.release_all(one, "runner-1", remote_of(one))  # merges: the two claims conflict
    assert task_in(on_origin(shared), "t-aaaaaa")["claimed_by"] == "runner-2"
    assert task_in(read_plan(one), "t-aaaaaa")["claimed_by"] == "runner-2"
    assert git(one, "status", "--porcelain") == ""


def test_an_unreachable_remote_fails_after_bounded_retries_with_nothing_claimed(three, tmp_path):
    shared, one, _ = three
    head = git(one, "rev-parse", "HEAD")
    git(one, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    with pytest.raises(RemoteOffline, match=r"^cannot fetch origin \(3 attempts\): "):
        claims.claim_next(one, None, "runner-1", remote_of(one))
    assert git(one, "rev-parse", "HEAD") == head
    assert read_plan(one).claims() == []


class GoneAtPush(Remote):
    def push(
        self,
        commit: str,
        drop: dict[str, str] | None = None,
        keep: dict[str, str] | None = None,
        mark: dict[str, tuple[str, str]] | None = None,
    ) -> bool:
        self.repo.git("remote", "set-url", self.name, "/nonexistent/gone.git")
        return super().push(commit, drop, keep, mark)


def test_a_remote_gone_between_fetch_and_push_leaves_no_claim_behind(three):
    _, one, _ = three
    head = git(one, "rev-parse", "HEAD")
    with pytest.raises(RemoteOffline, match="cannot push origin"):
        claims.claim_next(one, None, "runner-1", GoneAtPush(Repo(one), retries=1, backoff_s=0.01))
    assert git(one, "rev-parse", "HEAD") == head
    assert read_plan(one).claims() == []


# --- two processes racing --------------------------------------------------------------------


def _claim_in_process(clone: str, runner: str, barrier, results) -> None:
    barrier.wait()
    task = claims.claim_next(Path(clone), None, runner, Remote(Repo(Path(clone)), retries=2, backoff_s=0.01))
    results.put((runner, task["id"] if task else None))


def one_ready_task_two_clones(repo: Path, base: Path) -> Shared:
    seed(repo, {"id": "t-aaaaaa", "name": "A"}, {"id": "t-bbbbbb", "name": "B", "deps": ["t-aaaaaa"]})
    shared = Shared(repo, base)
    for name in ("one", "two"):
        shared.clone(name)
    return shared


# Each round is the same race, whichever process wins it: `make test` runs it once, the slow suites
# three times. The loser's path (fetch, replay on the new head, find nothing ready) is also taken on
# purpose, every time, by test_nothing_moves_here_until_a_push_is_won_and_a_lost_race_takes_the_turn_first.
@pytest.mark.parametrize("round_", [pytest.param(n, marks=[pytest.mark.slow] * (n > 0)) for n in range(3)])
def test_two_processes_racing_for_the_last_ready_task_exactly_one_claims_it(shared_copy, round_):
    shared = shared_copy("claims-race", one_ready_task_two_clones)
    clones = [shared.base / name for name in ("one", "two")]
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(2), context.Queue()
    workers = [
        context.Process(target=_claim_in_process, args=(str(clone), f"runner-{n}", barrier, results))
        for n, clone in enumerate(clones, start=1)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    got = dict(results.get(timeout=5) for _ in workers)
    assert sorted(got.values(), key=str) == [None, "t-aaaaaa"]  # t-bbbbbb waits for t-aaaaaa
    winner = next(runner for runner, task in got.items() if task)
    assert task_in(on_origin(shared), "t-aaaaaa")["claimed_by"] == winner
    assert json.dumps(task_in(on_origin(shared), "t-bbbbbb")).find("claimed_by") == -1
    git(shared.origin, "fsck", "--no-progress")


class OutPushed(Remote):
    """A remote another runner pushes to before each of our first `losses` pushes."""

    def __init__(self, repo: Repo, rival: Path, losses: int, **kwargs):
        super().__init__(repo, **kwargs)
        self.rival, self.losses, self.pushes = rival, losses, 0

    def push(
        self,
        commit: str,
        drop: dict[str, str] | None = None,
        keep: dict[str, str] | None = None,
        mark: dict[str, tuple[str, str]] | None = None,
    ) -> bool:
        self.pushes += 1
        if self.pushes <= self.losses:
            git(self.rival, "commit", "-q", "--allow-empty", "-m", f"rival's work {self.pushes}")
            git(self.rival, "push", "-q", "origin", "HEAD:main")
        return super().push(commit, drop, keep, mark)


def turn_on(shared) -> str:
    """The turn ref's commit on the remote ("" when nobody's turn)."""
    return git(shared.origin, "for-each-ref", "--format=%(objectname)", "refs/ralph/turn/main").strip()


def test_losing_races_to_a_remote_that_moves_is_no_error_and_the_loser_publishes_in_turn(three):
    """After a lost race the runner takes the turn to publish; holding it, a push made without it
    that wins again costs no pause: the next round goes at once. Its winning push ends the turn.
    One loss more than a remote that does not move may refuse (MAX_STILL_LOSSES): no error."""
    shared, one, two = three
    pauses: list[float] = []
    remote = OutPushed(Repo(two), rival=one, losses=sync.MAX_STILL_LOSSES + 1, retries=0, sleep=pauses.append)
    won = claims.claim_next(two, None, "runner-2", remote)
    assert won is not None and remote.pushes == sync.MAX_STILL_LOSSES + 2
    assert task_in(on_origin(shared), won["id"])["claimed_by"] == "runner-2"
    assert pauses == [] and remote.turn is None and turn_on(shared) == ""


def test_a_runner_that_lost_waits_while_another_has_the_turn(three):
    """The turn is taken: the loser pauses for a random while in the first range between tries, and
    pushes the branch only once it has the turn."""
    shared, one, two = three
    holder = Remote(Repo(one))
    assert holder.take_turn("holder")
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 2:
            holder.end_turn()  # its round ended meanwhile

    remote = OutPushed(Repo(two), rival=one, losses=1, retries=0, sleep=pause)
    won = present(claims.claim_next(two, None, "runner-2", remote))
    assert remote.pushes == 2 and len(pauses) == 2
    low, high = sync.TURN_PAUSE_S[0] / 2, sync.TURN_PAUSE_S[0]
    assert low <= pauses[0] <= high and 2 * low <= pauses[1] <= 2 * high  # the range doubled
    assert task_in(on_origin(shared), won["id"])["claimed_by"] == "runner-2"
    assert turn_on(shared) == ""


def test_rounds_that_end_without_a_push_give_the_turn_back(three):
    """A remote that turns every push away while its head stays put: after MAX_STILL_LOSSES such
    losses the run ends with the reason, and the turn taken after the first goes back."""
    shared, one, two = three
    remote = RefusingAsBehind(Repo(two), retries=0, sleep=lambda seconds: None)
    with pytest.raises(RemoteError, match="did not move"):
        claims.claim_next(two, None, "runner-2", remote)
    assert remote.pushes == sync.MAX_STILL_LOSSES + 1
    assert remote.turn is None and turn_on(shared) == ""


def test_the_pause_after_lost_races_of_a_change_made_on_the_remote_head_grows():
    ranges = [sync.pause_range(losses) for losses in range(1, 12)]
    assert ranges[0] == sync.LOST_RACE_PAUSE_S and ranges[-1] == sync.LOST_RACE_PAUSE_CAP_S
    assert ranges == sorted(ranges)


class RefusingAsBehind(Remote):
    """A remote that turns every push away as behind, while nobody pushes to it."""

    def __init__(self, repo: Repo, **kwargs):
        super().__init__(repo, **kwargs)
        self.pushes = 0

    def push(
        self,
        commit: str,
        drop: dict[str, str] | None = None,
        keep: dict[str, str] | None = None,
        mark: dict[str, tuple[str, str]] | None = None,
    ) -> bool:
        self.pushes += 1
        return False


# `make test` has it in test_rounds_that_end_without_a_push_give_the_turn_back
# (the same remote: "did not move" after MAX_STILL_LOSSES + 1 pushes, and the turn given back)
@pytest.mark.slow
def test_pushes_turned_away_while_the_remote_head_stays_put_end_the_run_with_the_reason(three):
    shared, one, two = three
    remote = RefusingAsBehind(Repo(two), retries=0, sleep=lambda seconds: None)
    with pytest.raises(RemoteError, match="did not move"):
        claims.claim_next(two, None, "runner-2", remote)
    assert remote.pushes == sync.MAX_STILL_LOSSES + 1


class Watched(Beaten):
    """Beaten, and what the clone's HEAD and plan.jsonl were at each push."""

    def __init__(self, repo: Repo, rival: Path, **kwargs):
        super().__init__(repo, rival, **kwargs)
        self.seen: list[tuple[str, bytes]] = []

    def push(
        self,
        commit: str,
        drop: dict[str, str] | None = None,
        keep: dict[str, str] | None = None,
        mark: dict[str, tuple[str, str]] | None = None,
    ) -> bool:
        self.seen.append(
            (git(self.repo.root, "rev-parse", "HEAD"), (self.repo.root / "plan.jsonl").read_bytes())
        )
        return super().push(commit, drop, keep, mark)


def test_nothing_moves_here_until_a_push_is_won_and_a_lost_race_takes_the_turn_first(three):
    """A lost race is replayed on the new head: the task the rival took meanwhile is dropped and
    the next one claimed, all in the object store until the push that wins."""
    shared, one, two = three
    start = (git(two, "rev-parse", "HEAD"), (two / "plan.jsonl").read_bytes())
    pauses: list[float] = []
    remote = Watched(Repo(two), rival=one, retries=0, sleep=pauses.append)
    won = present(claims.claim_next(two, None, "runner-2", remote))
    assert won["id"] == "t-bbbbbb"  # t-aaaaaa went to the rival while runner-2's push was on its way
    _the_rival_holds_a_and_runner_2_b(shared)
    # the lost round's merge and claim were made in the object store only: both pushes left from
    # the work tree as it was, and the lost one left nothing to undo
    assert remote.seen == [start, start]
    assert pauses == []  # the turn was free: taken at once, and ended by the push that won
    assert turn_on(shared) == ""
    assert git(two, "rev-parse", "HEAD") == git(shared.origin, "rev-parse", "main")
    assert task_in(read_plan(two), "t-bbbbbb")["claimed_by"] == "runner-2"
    assert git(two, "status", "--porcelain") == ""


class Counted(Remote):
    def __init__(self, repo: Repo, **kwargs):
        super().__init__(repo, **kwargs)
        self.pushes = 0

    def push(
        self,
        commit: str,
        drop: dict[str, str] | None = None,
        keep: dict[str, str] | None = None,
        mark: dict[str, tuple[str, str]] | None = None,
    ) -> bool:
        self.pushes += 1
        return super().push(commit, drop, keep, mark)


def test_publish_claims_the_next_task_in_a_commit_of_its_own_in_the_same_push(three):
    shared, one, _ = three
    claims.claim_next(one, None, "runner-1", remote_of(one))
    tasks.done(one, "t-aaaaaa")  # the build's plan commit frees the task
    build = git(one, "log", "-1", "--format=%s").strip()
    remote = Counted(Repo(one), retries=0)
    then = claims.NextTask(None, "runner-1")
    claims.publish(one, "t-aaaaaa", "runner-1", remote, then=then)
    assert remote.pushes == 1 and present(then.chosen)["id"] == "t-bbbbbb"
    assert git(shared.origin, "log", "-2", "--format=%s", "main").splitlines() == [
        "ralph: claim t-bbbbbb B (runner-1)",
        build,
    ]
    assert task_in(on_origin(shared), "t-aaaaaa")["s"] == "d"
    assert [(t["id"], t["claimed_by"]) for t in on_origin(shared).claims()] == [("t-bbbbbb", "runner-1")]


def test_the_spec_check_is_claimed_by_one_runner_holding_nothing_and_only_once_all_is_accepted(
    repo, tmp_path
):
    with transaction(repo, True) as change:
        change.plan.add_spec("specs/app.md")
        change.message = "the spec"
    (repo / "specs" / "app.md").write_text("# App\n")  # task add takes a spec that exists
    seed(repo, {"id": "t-aaaaaa", "name": "A", "spec": "specs/app.md"})
    shared = Shared(repo, tmp_path)
    one, two = shared.clone("one"), shared.clone("two")
    never = lambda plan: False  # noqa: E731  # no check found the spec met yet

    # A task of the spec is open: nothing to check.
    assert not claims.claim_check(one, "specs/app.md", "runner-1", remote_of(one), never)
    claimed = present(claims.claim_next(two, "specs/app.md", "runner-2", remote_of(two)))
    tasks.done(two, claimed["id"])
    tasks.accept(two, claimed["id"])
    git(two, "push", "-q", "origin", "HEAD:main")  # its verdict reaches the remote

    # All accepted: one runner wins the check, the other does not; once met, nobody checks.
    assert claims.claim_check(one, "specs/app.md", "runner-1", remote_of(one), never)
    assert not claims.claim_check(two, "specs/app.md", "runner-2", remote_of(two), never)
    spec = next(line.record for line in on_origin(shared).of("spec"))
    assert spec["claimed_by"] == "runner-1"
    claims.publish(one, "specs/app.md", "runner-1", remote_of(one))
    assert not claims.claim_check(two, "specs/app.md", "runner-2", remote_of(two), lambda plan: True)


# --- namesakes on two hosts ----------------------------------------------------------------------


def on_host(monkeypatch, host: str) -> None:
    monkeypatch.setattr(claims, "this_host", lambda: host)


def test_a_namesake_on_another_host_does_not_plan_a_spec_its_twin_claimed(repo, tmp_path, monkeypatch):
    """Two runners named `ci` on two hosts (a CI matrix): the one that claimed the spec for PLAN
    plans it; the other takes that live claim for another runner's, not its own, and waits."""
    with transaction(repo) as change:
        change.plan.add_spec("specs/app.md")
    shared = Shared(repo, tmp_path)
    one, two = shared.clone("one"), shared.clone("two")
    on_host(monkeypatch, "build-1")
    assert claims.claim_plan(one, "specs/app.md", "ci", remote_of(one))
    on_host(monkeypatch, "build-2")
    assert not claims.claim_plan(two, "specs/app.md", "ci", remote_of(two))
    spec = next(line.record for line in on_origin(shared).of("spec"))
    assert (spec["claimed_by"], spec["claimed_on"]) == ("ci", "build-1")
    on_host(monkeypatch, "build-1")  # the claimer itself, restarted: its own claim, renewed
    assert claims.claim_plan(one, "specs/app.md", "ci", remote_of(one))


def test_a_namesakes_task_claim_on_another_host_is_neither_taken_nor_released(three, monkeypatch):
    shared, one, two = three
    on_host(monkeypatch, "build-1")
    assert present(claims.claim_next(one, None, "ci", remote_of(one)))["id"] == "t-aaaaaa"
    on_host(monkeypatch, "build-2")
    assert present(claims.claim_next(two, None, "ci", remote_of(two)))["id"] == "t-bbbbbb"
    assert claims.release_all(two, "ci", remote_of(two)) == ["t-bbbbbb"]
    origin = on_origin(shared)
    assert (task_in(origin, "t-aaaaaa")["claimed_by"], task_in(origin, "t-aaaaaa")["claimed_on"]) == (
        "ci",
        "build-1",
    )
    assert "claimed_by" not in task_in(origin, "t-bbbbbb")


def test_a_claim_recorded_before_hosts_were_is_its_names_on_any_host(three, monkeypatch):
    """A plan claim with no `claimed_on` (a ralph before hosts) goes by its name, as it did."""
    shared, one, _ = three
    plan = on_origin(shared)
    plan.claim("t-aaaaaa", "ci", clock.now())
    assert "claimed_on" not in task_in(plan, "t-aaaaaa")
    plan.claim("t-aaaaaa", "ci", clock.now(), host="build-9")  # renewed, now with its host
    assert task_in(plan, "t-aaaaaa")["claimed_on"] == "build-9"
    assert not [line for line in plan.doc.records() if line.record["t"] == "takeover"]


# --- clocks that disagree ------------------------------------------------------------------------


# `make test` has it in store/test_claim_clock.py:
# test_no_runner_takes_over_a_live_claim_whichever_clock_is_off[-7200]
# (the claim of a runner two hours behind: a runner on time, one behind and one ahead each take a
# free task instead, and no takeover is recorded)
@pytest.mark.slow
def test_a_claim_by_a_runner_whose_clock_is_two_hours_behind_is_not_taken_over(three, monkeypatch):
    shared, one, two = three
    monkeypatch.setenv(clock.CLOCK_SKEW_ENV, str(-2 * 3600))
    assert present(claims.claim_next(one, None, "behind", remote_of(one)))["id"] == "t-aaaaaa"
    monkeypatch.delenv(clock.CLOCK_SKEW_ENV)
    # Its claimed_at is two hours old on this runner's clock, beyond the TTL: it is still live,
    # as this runner saw it only now.
    assert present(claims.claim_next(two, None, "on-time", remote_of(two), ttl_s=600))["id"] == "t-bbbbbb"
    assert not [line for line in on_origin(shared).doc.records() if line.record["t"] == "takeover"]


# `make test` has it in store/test_claim_clock.py:
# test_no_runner_takes_over_a_live_claim_whichever_clock_is_off[-7200]
# (runners two and four hours ahead of the claimer take free tasks; the claim stays the claimer's)
@pytest.mark.slow
def test_a_runner_whose_clock_is_two_hours_ahead_does_not_take_over_a_live_claim(three, monkeypatch):
    shared, one, two = three
    claims.claim_next(one, None, "on-time", remote_of(one))
    monkeypatch.setenv(clock.CLOCK_SKEW_ENV, str(2 * 3600))
    assert present(claims.claim_next(two, None, "ahead", remote_of(two), ttl_s=600))["id"] == "t-bbbbbb"
    assert task_in(on_origin(shared), "t-aaaaaa")["claimed_by"] == "on-time"


# `make test` has it in store/test_claim_clock.py:
# test_a_spec_is_planned_once_whichever_runner_claims_it_first
# (the runner two hours behind claims PLAN; one on time, then one ahead, do not, with ttl_s=600)
@pytest.mark.slow
def test_a_spec_claimed_for_plan_by_a_runner_two_hours_behind_is_planned_once(repo, tmp_path, monkeypatch):
    with transaction(repo) as change:
        change.plan.add_spec("specs/app.md")
    shared = Shared(repo, tmp_path)
    one, two = shared.clone("one"), shared.clone("two")
    monkeypatch.setenv(clock.CLOCK_SKEW_ENV, str(-2 * 3600))
    assert claims.claim_plan(one, "specs/app.md", "behind", remote_of(one))
    monkeypatch.delenv(clock.CLOCK_SKEW_ENV)
    assert not claims.claim_plan(two, "specs/app.md", "on-time", remote_of(two), ttl_s=600)


# `make test` has it in store/test_claim_clock.py: a claimer hours behind is not taken over at first
# sight ([-7200]), a dead runner's claim is a TTL after it was pushed, and sightings are kept.
@pytest.mark.slow
def test_a_claim_seen_for_longer_than_the_ttl_is_taken_over_whatever_the_claimers_clock(three, monkeypatch):
    shared, one, two = three
    monkeypatch.setenv(clock.CLOCK_SKEW_ENV, str(-2 * 3600))
    claims.claim_next(one, None, "behind", remote_of(one))
    claims.claim_next(one, None, "behind-2", remote_of(one))
    monkeypatch.delenv(clock.CLOCK_SKEW_ENV)
    assert present(claims.claim_next(two, None, "heir", remote_of(two), ttl_s=1))["id"] == "t-cccccc"
    sightings = json.loads((two / ".git" / "ralph" / "claims-seen.json").read_text())
    assert sorted(key.split("\t")[:2] for key in sightings) == [
        ["t-aaaaaa", "behind"],
        ["t-bbbbbb", "behind-2"],
    ]
    import time

    time.sleep(1.2)  # this runner has seen the claims for longer than the TTL now
    assert present(claims.claim_next(two, None, "heir-2", remote_of(two), ttl_s=1))["id"] == "t-aaaaaa"
    takeovers = [line.record for line in on_origin(shared).doc.records() if line.record["t"] == "takeover"]
    assert [(t["by"], t["was_claimed_by"]) for t in takeovers] == [("heir-2", "behind")]


def test_a_runs_last_push_of_a_stage_the_remote_shows_already_is_not_made(three):
    """Sixteen runners ending at once each pushed their `COMPLETE` after the first had: a push of
    nothing but this runner's stage, which the remote's state shows already, is not made. HEAD
    catches up with the remote all the same, and any other change still goes out."""
    shared, one, two = three
    with transaction(one) as change:
        change.plan.update_state(stage="COMPLETE")
    claims.release_all(one, "runner-1", remote_of(one))
    assert read_plan(one).state()["stage"] == on_origin(shared).state()["stage"] == "COMPLETE"
    with transaction(two) as change:
        change.plan.update_state(stage="COMPLETE", iteration=7)
    remote = Counted(Repo(two), retries=0)
    assert claims.release_all(two, "runner-2", remote) == []
    assert remote.pushes == 0 and on_origin(shared).state().get("iteration") != 7
    origin_head = git(shared.origin, "rev-parse", "main").strip()
    git(two, "merge-base", "--is-ancestor", origin_head, "HEAD")  # caught up: raises if not
    assert read_plan(two).state()["iteration"] == 7 and git(two, "status", "--porcelain") == ""
    with transaction(two) as change:  # a stage the remote does not show yet goes out
        change.plan.update_state(stage="VERIFY")
    remote = Counted(Repo(two), retries=0)
    claims.release_all(two, "runner-2", remote)
    assert remote.pushes == 1 and on_origin(shared).state()["stage"] == "VERIFY"


def test_a_runs_last_push_of_its_stage_alone_is_tried_once_and_anything_more_until_pushed(three):
    """Sixteen runners ending at once each lost some four races to push nothing but their stage:
    such a push is tried once, and a lost race leaves it here for the next run's push."""
    shared, one, two = three
    with transaction(two) as change:  # the loop's bookkeeping: this runner's stage alone
        change.plan.update_state(stage="COMPLETE")
    remote = OutPushed(Repo(two), rival=one, losses=1, retries=0, sleep=lambda _: None)
    assert claims.release_all(two, "runner-2", remote) == []
    assert remote.pushes == 1 and "COMPLETE" not in shared.plan_on_origin().decode()
    with transaction(two) as change:  # and a task done: that must reach the remote
        change.plan.done("t-aaaaaa")
    remote = OutPushed(Repo(two), rival=one, losses=1, retries=0, sleep=lambda _: None)
    claims.release_all(two, "runner-2", remote)
    assert remote.pushes == 2
    assert task_in(on_origin(shared), "t-aaaaaa")["s"] == "d"


def _the_rival_holds_a_and_runner_2_b(shared: Shared) -> None:
    """The remote after runner-2 lost a race for t-aaaaaa to the rival and claimed t-bbbbbb: the
    lost claim commit was never pushed, so there is one claim commit per claim."""
    origin = on_origin(shared)
    assert task_in(origin, "t-aaaaaa")["claimed_by"] == "rival"
    assert task_in(origin, "t-bbbbbb")["claimed_by"] == "runner-2"
    subjects = git(shared.origin, "log", "--format=%s", "main").splitlines()
    assert [s for s in subjects if s.startswith("ralph: claim")] == [
        "ralph: claim t-bbbbbb B (runner-2)",
        "ralph: claim t-aaaaaa A (rival)",
    ]
