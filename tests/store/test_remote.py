"""ralph.store.remote against real git: a bare repository and its clones. The push is the
compare-and-swap: a push another clone beat reports a lost race; a remote that cannot be reached or
refuses is retried a bounded number of times, with backoff, then one line names why."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from ralph.errors import EXIT_REMOTE, RemoteOffline, RemoteRejected
from ralph.store import remote as remote_module
from ralph.store.git import Repo
from ralph.store.remote import Remote, classify_push
from tests.support.gitrepo import git


def commit(root: Path, name: str) -> str:
    (root / name).write_text(name)
    git(root, "add", name)
    git(root, "commit", "-qm", name)
    return git(root, "rev-parse", "HEAD").strip()


def test_fetch_gives_the_remote_head_and_a_fast_forward_push_moves_it(shared):
    one = shared.clone("one")
    remote = Remote(Repo(one))
    assert remote.branch == "main"
    assert remote.fetch() == git(shared.origin, "rev-parse", "main").strip()
    head = commit(one, "a")
    assert remote.push(head) is True
    assert git(shared.origin, "rev-parse", "main").strip() == head
    assert git(one, "rev-parse", "refs/remotes/origin/main").strip() == head


def test_a_push_another_clone_beat_is_a_lost_race_and_changes_nothing(shared):
    one, two = shared.clone("one"), shared.clone("two")
    first = commit(one, "a")
    assert Remote(Repo(one)).push(first)
    late = commit(two, "b")
    assert Remote(Repo(two)).push(late) is False
    assert git(shared.origin, "rev-parse", "main").strip() == first  # never forced


def test_a_held_claim_is_moved_by_the_push_that_gives_its_task_back_and_read_as_held(shared):
    """A claim marked held goes in the publishing push under a lease on the claim it replaces,
    and another clone reads what it waits for; a `held_at` that is not a commit id (a runner's
    message is another machine's text, and it is handed to git) makes no hold."""
    one, two = shared.clone("one"), shared.clone("two")
    remote = Remote(Repo(one))
    remote.with_claims = True
    head = remote.fetch()
    assert head is not None
    claim = remote.make_claim("t-a", "one", "2026-11-30T00:00:00+00:00")
    assert remote.push_claim("t-a", claim)
    held = remote.make_claim(
        "t-a",
        "one",
        "2026-11-30T00:00:01+00:00",
        remote.claim_refs()["t-a"],
        None,
        (head, frozenset({"t-b"})),
    )
    other = remote.make_claim("t-a", "one", "2026-11-30T00:00:01+00:00")
    assert not remote.push(head, mark={"t-a": (other, held)})  # the lease: the ref is not `other`
    assert remote.push(head, mark={"t-a": (claim, held)})
    assert remote.claim_refs()["t-a"].commit == held  # as a fetch would leave it

    seen = Remote(Repo(two))
    seen.with_claims = True
    seen.fetch()
    (read,) = seen.claim_refs().values()
    assert (read.held, read.held_at, read.waits_for, read.runner) == (True, head, frozenset({"t-b"}), "one")
    assert git(shared.origin, "rev-parse", f"{held}^").strip() == claim  # the ref's story

    forged = remote.make_claim(
        "t-c", "one", "2026-11-30T00:00:00+00:00", hold=("--output=/tmp/x", frozenset())
    )
    assert remote.push_claim("t-c", forged)
    assert seen.fetch() and not seen.claim_refs()["t-c"].held


def turn_on(origin: Path) -> str:
    """The turn ref's commit on the remote ("" when nobody's turn)."""
    return git(origin, "for-each-ref", "--format=%(objectname)", "refs/ralph/turn/main").strip()


def test_one_runner_at_a_time_has_the_turn_and_its_winning_push_ends_it(shared):
    one, two = shared.clone("one"), shared.clone("two")
    first, second = Remote(Repo(one)), Remote(Repo(two))
    assert first.take_turn("runner-1", "host-1") is True
    assert turn_on(shared.origin) == first.turn
    assert "runner-1's turn to publish on main" in git(shared.origin, "log", "-1", "--format=%s", first.turn)
    assert second.take_turn("runner-2") is False and second.turn is None
    assert second.push(commit(two, "b")) is True  # the turn is advice: a push without it still wins
    first.fetch()
    git(one, "merge", "-q", "origin/main")
    assert first.push(commit(one, "a")) is True
    assert turn_on(shared.origin) == "" and first.turn is None  # gone in the same push
    assert second.take_turn("runner-2") is True


def test_a_push_that_loses_keeps_the_turn_and_the_turn_is_given_back_without_a_push(shared):
    one, two = shared.clone("one"), shared.clone("two")
    first = Remote(Repo(one))
    assert first.take_turn("runner-1")
    Remote(Repo(two)).push(commit(two, "b"))
    assert first.push(commit(one, "a")) is False
    assert first.still_my_turn() and turn_on(shared.origin) == first.turn
    first.end_turn()
    assert first.turn is None and turn_on(shared.origin) == ""
    first.end_turn()  # nothing held: nothing to do


class Unsaid(Remote):
    """A remote whose ref listing fails (a moment offline) while pushes go through."""

    def turn_holder(self) -> str | None:
        return None


def test_a_remote_that_does_not_say_who_has_the_turn_changes_no_ones_turn(shared, monkeypatch):
    one, two = shared.clone("one"), shared.clone("two")
    holder, waiting = Unsaid(Repo(one)), Unsaid(Repo(two))
    assert holder.take_turn("holder")
    assert holder.still_my_turn() and holder.turn is not None  # kept: the next push finds out
    now = [1000.0]
    monkeypatch.setattr(remote_module, "monotonic", lambda: now[0])
    for _ in range(3):
        assert waiting.take_turn("waiting") is False  # never judged stale on no answer
        now[0] += remote_module.TURN_STALE_S
    assert turn_on(shared.origin) == holder.turn


def test_a_turn_held_past_its_time_by_the_same_commit_is_taken_over(shared, monkeypatch):
    """Its runner died mid-round: another takes the turn over once it has seen that one turn commit
    for TURN_STALE_S by its own clock, under a lease on it; the dead runner's push then loses."""
    one, two = shared.clone("one"), shared.clone("two")
    dead, heir = Remote(Repo(one)), Remote(Repo(two))
    assert dead.take_turn("dead")
    now = [1000.0]
    monkeypatch.setattr(remote_module, "monotonic", lambda: now[0])
    assert heir.take_turn("heir") is False  # first seen now
    now[0] += remote_module.TURN_STALE_S - 1
    assert heir.take_turn("heir") is False  # not long enough
    now[0] += 2
    assert heir.take_turn("heir") is True
    assert turn_on(shared.origin) == heir.turn != dead.turn
    assert dead.push(commit(one, "a")) is False  # its lease on its turn fails: nothing pushed
    assert not dead.still_my_turn() and dead.turn is None


def test_a_turn_seen_to_change_hands_is_not_stale(shared, monkeypatch):
    one, two, three = shared.clone("one"), shared.clone("two"), shared.clone("three")
    first, second, waiting = Remote(Repo(one)), Remote(Repo(two)), Remote(Repo(three))
    now = [1000.0]
    monkeypatch.setattr(remote_module, "monotonic", lambda: now[0])
    assert first.take_turn("runner-1")
    assert waiting.take_turn("waiting") is False
    first.end_turn()
    assert second.take_turn("runner-2")
    now[0] += remote_module.TURN_STALE_S + 1
    assert waiting.take_turn("waiting") is False  # another turn than the one it saw first
    assert turn_on(shared.origin) == second.turn


def test_a_rewritten_shared_branch_stops_a_clone_that_holds_what_it_dropped(shared):
    """A person pushed a secret, a runner took it, the person rewrote it away and force-pushed:
    the runner's next fetch refuses in one line instead of handing back a head its old commits
    (the secret among them) would be merged onto. Once the clone is brought in line, it goes on."""
    runner, person = shared.clone("runner"), shared.clone("person")
    base = git(person, "rev-parse", "HEAD").strip()
    leaked = commit(person, "secret.txt")
    git(person, "push", "-q", "origin", "main")
    remote = Remote(Repo(runner))
    assert remote.fetch() == leaked
    git(runner, "merge", "-q", "--ff-only", "origin/main")
    git(person, "reset", "-q", "--hard", base)
    cleaned = commit(person, "notes.txt")
    git(person, "push", "-q", "--force", "origin", "main")

    with pytest.raises(RemoteRejected, match="rewritten .force-pushed. since this clone last saw it"):
        remote.fetch()

    git(runner, "reset", "-q", "--keep", "origin/main")
    assert remote.fetch() == cleaned  # in line now: nothing of the rewrite comes back
    git(shared.origin, "update-ref", "-d", "refs/heads/main")  # deleted on the remote
    with pytest.raises(RemoteRejected, match="is gone"):
        remote.fetch()


def test_fetch_of_an_empty_remote_gives_none(tmp_path, repo):
    empty = tmp_path / "empty.git"
    git(tmp_path, "init", "-q", "--bare", str(empty))
    git(repo, "remote", "add", "origin", str(empty))
    remote = Remote(Repo(repo))
    assert remote.fetch() is None
    assert remote.push(git(repo, "rev-parse", "HEAD").strip())  # the first push makes the branch


def test_an_unreachable_remote_is_retried_with_backoff_then_one_line(repo, tmp_path):
    git(repo, "remote", "add", "origin", str(tmp_path / "no-such-remote.git"))
    waits: list[float] = []
    remote = Remote(Repo(repo), retries=3, backoff_s=0.5, sleep=waits.append)
    with pytest.raises(RemoteOffline) as caught:
        remote.fetch()
    assert waits == [0.5, 1.0, 2.0]  # exponential, bounded
    message = str(caught.value)
    assert "\n" not in message and message.startswith("cannot fetch origin (4 attempts): ")
    assert "does not appear to be a git repository" in message
    assert caught.value.exit_code == EXIT_REMOTE
    waits.clear()
    with pytest.raises(RemoteOffline, match="cannot push origin"):
        remote.push(git(repo, "rev-parse", "HEAD").strip())
    assert waits == [0.5, 1.0, 2.0]


def test_a_hook_that_declines_is_a_refusal_not_a_race(shared):
    hook = shared.origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are closed today' >&2\nexit 1\n")
    hook.chmod(0o755)
    one = shared.clone("one")
    waits: list[float] = []
    with pytest.raises(RemoteRejected) as caught:
        Remote(Repo(one), retries=1, backoff_s=0.1, sleep=waits.append).push(commit(one, "a"))
    assert waits == [0.1]
    assert str(caught.value).startswith("push to origin refused (2 attempts): ")
    assert "hook declined" in str(caught.value)


@pytest.mark.skipif(hasattr(__import__("os"), "geteuid") and __import__("os").geteuid() == 0, reason="root")
def test_a_remote_without_write_permission_is_a_refusal(shared):
    one = shared.clone("one")
    objects = shared.origin / "objects"
    modes = {path: path.stat().st_mode for path in [objects, *objects.rglob("*")] if path.is_dir()}
    for path in modes:
        path.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(RemoteRejected, match="refused"):
            Remote(Repo(one), retries=0).push(commit(one, "a"))
    finally:
        for path, mode in modes.items():
            path.chmod(mode)


@pytest.mark.parametrize(
    ("out", "err", "verdict"),
    [
        ("To o\n!\trefs/heads/main:refs/heads/main\t[rejected] (non-fast-forward)\nDone\n", "", "race"),
        ("!\trefs/heads/main:refs/heads/main\t[rejected] (fetch first)\n", "", "race"),
        ("!\tHEAD:refs/heads/main\t[remote rejected] (failed to update ref)\n", "", "race"),
        ("", "error: cannot lock ref 'refs/heads/main': is at 1 but expected 2", "race"),
        ("!\tHEAD:refs/heads/main\t[remote rejected] (pre-receive hook declined)\n", "", "refused"),
        ("", "remote: Permission to o/r.git denied to u.\nfatal: unable to access: 403", "refused"),
        (
            "",
            "ssh: Could not resolve hostname example.invalid\nfatal: Could not read from remote",
            "unreachable",
        ),
    ],
)
def test_a_failed_push_is_told_apart_by_what_git_said(out, err, verdict):
    assert classify_push(out, err) == verdict
