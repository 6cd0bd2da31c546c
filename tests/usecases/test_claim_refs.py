"""Claims by ref (ralph.usecases.claim_refs, ralph.store.remote): one ref per claimed task on a real
bare remote, pushed create-only from clones of it. Two clones racing for one task's ref: exactly one
wins; a stale claim is taken over under a lease on the one it replaces; a task published meanwhile
is given back after a won claim, never built again."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from ralph.store.git import Repo
from ralph.store.remote import CLAIMS, Remote
from ralph.usecases import claim_refs, tasks
from tests.support.gitrepo import Shared, git

TTL = 1800.0


def three_tasks_two_clones(repo: Path, base: Path) -> Shared:
    tasks.add(repo, [{"id": f"t-task0{n}", "name": f"Task {n}"} for n in range(3)])
    shared = Shared(repo, base)
    shared.clone("one"), shared.clone("two")
    return shared


@pytest.fixture
def three(shared_copy):
    shared = shared_copy("claim-refs-three", three_tasks_two_clones)
    return shared, shared.base / "one", shared.base / "two"


def remote_of(clone: Path) -> Remote:
    remote = Remote(Repo(clone), retries=0, backoff_s=0.01)
    remote.with_claims = True
    remote.fetch()
    return remote


def holders(shared: Shared) -> dict[str, str]:
    """The claim refs on origin: task -> claim commit."""
    out = git(shared.origin, "for-each-ref", "--format=%(refname) %(objectname)", CLAIMS)
    return {ref.removeprefix(CLAIMS): commit for ref, commit in (line.split() for line in out.splitlines())}


def candidates(clone: Path, remote: Remote) -> list[dict]:
    return claim_refs.buildable(clone, None, remote, ())


def test_two_clones_pushing_one_tasks_claim_ref_at_once_exactly_one_wins(three):
    shared, one, two = three
    remotes = [remote_of(one), remote_of(two)]
    commits = [
        remote.make_claim("t-task00", name, "2026-11-29T07:00:00+00:00")
        for remote, name in zip(remotes, ("one", "two"), strict=True)
    ]
    won: list[bool] = [False, False]
    start = threading.Barrier(2)

    def push(n: int) -> None:
        start.wait()
        won[n] = remotes[n].push_claim("t-task00", commits[n])

    threads = [threading.Thread(target=push, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won) == [False, True]
    winner = won.index(True)
    assert holders(shared) == {"t-task00": commits[winner]}
    # The loser's later push of the same claim still loses: the ref is create-only.
    assert not remotes[1 - winner].push_claim("t-task00", commits[1 - winner])
    assert git(shared.origin, "rev-parse", "main") == git(one, "rev-parse", "HEAD")  # the branch never moved


def test_a_runner_that_lost_a_claim_race_takes_another_task(three):
    shared, one, two = three
    first, second = remote_of(one), remote_of(two)  # both looked before either claimed
    taken = claim_refs.claim_task(candidates(one, first), "one", first, TTL, claim_refs.to_build)
    looks = second.fetches
    other = claim_refs.claim_task(candidates(two, second), "two", second, TTL, claim_refs.to_build)
    assert taken is not None and other is not None
    assert taken.task_id == "t-task00" and other.task_id != "t-task00"
    assert second.claims_lost == 1 and second.claims_won == 1
    # No look after the lost push (the ref is another's: the pick goes on among the others seen),
    # one after the won one (a task published meanwhile goes back).
    assert second.fetches - looks == 1
    assert holders(shared) == {"t-task00": taken.commit, other.task_id: other.commit}


def test_a_runner_whose_every_pick_was_lost_looks_again_and_finds_nothing_left(three):
    shared, one, two = three
    first, second = remote_of(one), remote_of(two)  # both looked before either claimed
    seen = candidates(two, second)
    for task in seen:
        assert claim_refs.claim_task([task], "one", first, TTL, claim_refs.to_build) is not None
    looks = second.fetches
    assert claim_refs.claim_task(seen, "two", second, TTL, claim_refs.to_build) is None
    assert second.claims_lost == len(seen) and second.claims_won == 0
    assert second.fetches - looks == 1  # one look, once every task it saw free was lost


def test_a_claim_is_judged_live_until_the_ttl_and_a_stale_one_is_taken_over_under_a_lease(three):
    shared, one, two = three
    first, second = remote_of(one), remote_of(two)
    taken = claim_refs.claim_task(candidates(one, first)[:1], "one", first, TTL, claim_refs.to_build)
    assert taken is not None
    second.fetch()
    assert claim_refs.claim_task(candidates(two, second)[:1], "two", second, TTL, claim_refs.to_build) is None
    heir = claim_refs.claim_task(candidates(two, second)[:1], "two", second, 0.0, claim_refs.to_build)
    assert heir is not None and heir.task_id == "t-task00"
    assert heir.took_over is not None and heir.took_over.runner == "one"
    assert holders(shared) == {"t-task00": heir.commit}
    assert git(shared.origin, "rev-parse", f"{heir.commit}^") == taken.commit + "\n"  # its story
    assert "take t-task00 over from one (two)" in git(shared.origin, "log", "-1", "--format=%s", heir.commit)
    # The runner that looked dead cannot drop the claim it lost: the lease is on its own commit.
    assert not first.drop_claims({"t-task00": taken.commit})
    assert holders(shared) == {"t-task00": heir.commit}


def test_a_task_published_meanwhile_is_given_back_after_a_won_claim(three):
    shared, one, two = three
    late = remote_of(two)  # looked before the task was built and published
    stale_view = candidates(two, late)
    tasks.done(one, "t-task00")
    git(one, "push", "-q", "origin", "HEAD:main")
    claimed = claim_refs.claim_task(stale_view, "two", late, TTL, claim_refs.to_build)
    assert claimed is not None and claimed.task_id == "t-task01"
    assert holders(shared) == {"t-task01": claimed.commit}  # the claim on t-task00 went back


def test_a_task_accepted_meanwhile_is_given_back_after_a_won_claim(three):
    # An accepted task leaves no task record: its verdict's push freed its claim ref, and a runner
    # that looked before it must not take that free ref for a task still to build (CI caught one
    # task built twice by three runners).
    shared, one, two = three
    late = remote_of(two)
    stale_view = candidates(two, late)
    tasks.done(one, "t-task00")
    tasks.accept(one, "t-task00")
    git(one, "push", "-q", "origin", "HEAD:main")
    claimed = claim_refs.claim_task(stale_view, "two", late, TTL, claim_refs.to_build)
    assert claimed is not None and claimed.task_id == "t-task01"
    assert holders(shared) == {"t-task01": claimed.commit}


def test_a_claim_goes_in_the_push_that_publishes_its_task_and_only_with_it(three):
    shared, one, _ = three
    remote = remote_of(one)
    claimed = claim_refs.claim_task(candidates(one, remote)[:1], "one", remote, TTL, claim_refs.to_build)
    assert claimed is not None
    tasks.done(one, "t-task00")
    head = git(one, "rev-parse", "HEAD").strip()
    # A claim that is not the remote's any more makes the whole push fail: the branch stays.
    assert not remote.push(head, {"t-task00": "0" * 40})
    assert holders(shared) == {"t-task00": claimed.commit}
    assert git(shared.origin, "rev-parse", "main") != git(one, "rev-parse", "HEAD")
    assert remote.push(head, {"t-task00": claimed.commit})
    assert holders(shared) == {}
    assert git(shared.origin, "rev-parse", "main") == git(one, "rev-parse", "HEAD")
