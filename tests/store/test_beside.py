"""A person's ralph command beside a live `ralph construct` in the same work tree: its change is
written, not committed (the run owns the commits while it lasts), and written down for the run
(ralph.store.beside). A real process holds the construct lock, as only another process can; the
commands are real processes, but for the one beside a dead run's lock file, in process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ralph.store import beside
from ralph.store.git import Repo
from ralph.store.lock import CONSTRUCT_LOCK_NAME
from tests.support.cli import ralph_in_process
from tests.support.gitrepo import git
from tests.support.runlock import hold_the_run_lock


def ralph(root: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "ralph", "-C", str(root), *args]
    return subprocess.run(command, capture_output=True, text=True)


def test_a_command_beside_a_live_run_writes_its_change_for_the_run_to_commit(repo: Path):
    head = git(repo, "rev-parse", "HEAD")
    holder = hold_the_run_lock(repo)
    try:
        added = ralph(repo, "task", "add", json.dumps({"id": "t-mine", "name": "Mine"}))
        configured = ralph(repo, "config", "set", "max_attempts", "7")
    finally:
        holder.kill()
        holder.wait()

    assert added.returncode == 0 and configured.returncode == 0, added.stderr + configured.stderr
    assert (
        f"ralph construct (pid {holder.pid}) runs in this work tree: it commits this change" in added.stderr
    )
    assert git(repo, "rev-parse", "HEAD") == head  # nothing committed under the run
    assert '"t-mine"' in (repo / "plan.jsonl").read_text()
    found, end = beside.entries(Repo(repo))
    assert [(e.keys, e.run) for e in found] == [(("t-mine",), holder.pid), (("config",), holder.pid)]
    assert found[0].message.startswith("ralph: task add t-mine")
    assert found[0].ops.startswith('Ralph-Op: {"op":"add_tasks"')  # for the run's commit: a runner replays it
    assert found[1].ops.startswith('Ralph-Op: {"op":"set_config"')
    assert beside.entries(Repo(repo), end) == ([], end)


# `make test` has it in process, in
# test_a_lock_file_naming_a_run_that_holds_no_lock_is_no_live_run_to_defer_to (the kernel letting go
# of a killed holder's lock: loop/test_drafts.py's run killed outright)
@pytest.mark.slow
def test_a_command_with_no_live_run_commits_as_ever(repo: Path):
    holder = hold_the_run_lock(repo)
    holder.kill()  # the kernel drops its lock; the file still names it
    holder.wait()

    added = ralph(repo, "task", "add", json.dumps({"id": "t-mine", "name": "Mine"}))

    assert added.returncode == 0, added.stderr
    assert "runs in this work tree" not in added.stderr
    assert git(repo, "log", "-1", "--format=%s").startswith("ralph: task add t-mine")
    assert beside.entries(Repo(repo)) == ([], 0)


def test_a_lock_file_naming_a_run_that_holds_no_lock_is_no_live_run_to_defer_to(repo: Path):
    """A killed run's lock file still names it; what decides is the lock, which nothing holds (the
    process named here lives, as a reused pid would): the command commits as ever and defers to
    no run."""
    lock_file = Repo(repo).git_dir() / CONSTRUCT_LOCK_NAME
    lock_file.write_text(f"pid {os.getppid()}, since 2026-11-30 09:00:00 UTC")

    added = ralph_in_process(repo, "task", "add", json.dumps({"id": "t-mine", "name": "Mine"}))

    assert added.returncode == 0, added.stderr
    assert "runs in this work tree" not in added.stderr
    assert git(repo, "log", "-1", "--format=%s").startswith("ralph: task add t-mine")
    assert git(repo, "status", "--porcelain") == ""
    assert beside.entries(Repo(repo)) == ([], 0)
