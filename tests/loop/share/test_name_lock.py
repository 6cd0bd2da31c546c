"""Two live runners under one --runner name: on one host the second is refused at its start; on two
hosts their claims are told apart by the host each records. A runner restarted under its name on
its host still takes its own claims back."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ralph.clock import now
from ralph.errors import EXIT_BUSY, Busy
from ralph.loop.share.name_lock import NameLock
from ralph.store.git import Repo
from ralph.store.remote import Remote
from ralph.usecases import claim_refs, tasks
from tests.support.construct import construct, with_app_spec
from tests.support.gitrepo import Shared, git

HOLD = """
import sys
from ralph.loop.share.name_lock import NameLock
held = NameLock(sys.argv[1], "main", sys.argv[2])
print("held", flush=True)
sys.stdin.read()
"""


def holding(url: str, name: str) -> subprocess.Popen[str]:
    """Another process, as another run is, holding runner `name` on `url`'s main."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, url, name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        restore_signals=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def test_a_name_held_by_a_live_process_is_refused_and_free_again_once_it_dies(tmp_path: Path):
    holder = holding("file:///srv/app.git", "twin")
    try:
        with pytest.raises(Busy) as refused:
            NameLock("file:///srv/app.git", "main", "twin")
        assert str(refused.value) == (
            "another ralph runs as runner 'twin' on this host against file:///srv/app.git main:"
            " give each runner its own --runner name"
        )
        # Another name, another remote, another branch: other runners.
        for url, branch, name in (
            ("file:///srv/app.git", "main", "other"),
            ("file:///srv/lib.git", "main", "twin"),
            ("file:///srv/app.git", "next", "twin"),
        ):
            NameLock(url, branch, name).release()
    finally:
        holder.send_signal(signal.SIGKILL)  # no release: the kernel frees the name with the process
        holder.wait()
    NameLock("file:///srv/app.git", "main", "twin").release()


def test_a_name_is_held_again_after_its_release_in_one_process():
    first = NameLock("file:///srv/app.git", "main", "again")
    with pytest.raises(Busy):
        NameLock("file:///srv/app.git", "main", "again")
    first.release()
    NameLock("file:///srv/app.git", "main", "again").release()


def seeded(repo: Path, tmp_path: Path, count: int) -> Shared:
    with_app_spec(repo, "# App\n")
    items: list[object] = [
        {"id": f"t-task{n:02d}", "name": f"Task {n}", "spec": "specs/app.md"} for n in range(count)
    ]
    tasks.add(repo, items)
    return Shared(repo, tmp_path)


def claimed(clone: Path, item: str, runner: str, host: str | None) -> None:
    """A claim ref as a runner on `host` pushes it (None: as a ralph before hosts did)."""
    remote = Remote(Repo(clone))
    remote.fetch(claims=True)
    commit = remote.make_claim(item, runner, now(), host=host)
    assert remote.push_claim(item, commit)


def test_a_namesakes_claim_from_another_host_is_not_taken_for_this_runners_own(repo: Path, tmp_path: Path):
    """`twin` on another host holds t-task00 (live); `twin` here held t-task01 in a run that ended
    (a restart), and a ralph before hosts held t-task02 as `twin`. This runner takes back its own
    and the host-less one, never the namesake's live claim."""
    shared = seeded(repo, tmp_path, 4)
    one = shared.clone("one")
    claimed(one, "t-task00", "twin", "elsewhere")
    claimed(one, "t-task01", "twin", claim_refs.this_host())
    claimed(one, "t-task02", "twin", None)
    remote = Remote(Repo(one))
    remote.fetch(claims=True)
    assert remote.claim_refs()["t-task00"].host == "elsewhere"
    assert remote.claim_refs()["t-task02"].host is None
    candidates = [{"id": f"t-task{n:02d}"} for n in range(4)]

    def take(among: list[dict]) -> str | None:
        won = claim_refs.claim_task(among, "twin", remote, 1800.0, claim_refs.to_build)
        return won.task_id if won else None

    assert take(candidates) == "t-task01"  # its own, first
    assert take(candidates[2:3]) == "t-task02"
    assert take(candidates[:1]) is None  # the namesake's live claim: not free, not its own
    assert take(candidates[3:]) == "t-task03"
    said = git(shared.origin, "log", "-1", "--format=%B", "refs/ralph/claims/t-task03")
    assert json.loads(said.split("Ralph-Claim: ", 1)[1])["host"] == claim_refs.this_host()


def test_construct_under_a_runner_name_another_run_holds_here_is_refused_and_changes_nothing(
    repo: Path, tmp_path: Path
):
    shared = seeded(repo, tmp_path, 1)
    one = shared.clone("one")
    url = git(one, "remote", "get-url", "origin").strip()
    head = git(one, "rev-parse", "HEAD")
    holder = holding(url, "twin")
    try:
        done = construct(one, "--remote", "origin", "--runner", "twin", "--no-review")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert done.returncode == EXIT_BUSY
    assert done.stderr.splitlines() == [
        f"ralph: another ralph runs as runner 'twin' on this host against {url} main:"
        " give each runner its own --runner name"
    ]
    assert git(one, "rev-parse", "HEAD") == head and git(one, "status", "--porcelain") == ""
    assert git(shared.origin, "for-each-ref", "refs/ralph/claims/") == ""
