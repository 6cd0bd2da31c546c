"""The plan lock (ralph/store/lock.py) with real processes on the other side: a holder makes others
wait and give up as Busy, it is released after an exception, and it still excludes where the file
system has no flock."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ralph.errors import EXIT_BUSY, Busy
from ralph.store.lock import LOCK_NAME, plan_lock
from tests.support.cli import ralph_process
from tests.support.locks import HOLDER

TRY_LOCK = """
import sys
from pathlib import Path

from ralph.errors import Busy
from ralph.store.lock import plan_lock

try:
    with plan_lock(Path(sys.argv[1])):
        pass
except Busy:
    sys.exit(75)
"""


def try_lock(root: Path) -> int:
    """Take the lock from another process, waiting at most 0.2 s; its exit code (75: Busy)."""
    env = {**os.environ, "RALPH_LOCK_TIMEOUT": "0.2"}
    return subprocess.run([sys.executable, "-c", TRY_LOCK, str(root)], env=env, check=False).returncode


def test_a_lock_held_by_another_process_ends_in_busy(repo, monkeypatch):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(repo)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == "locked\n"
        monkeypatch.setenv("RALPH_LOCK_TIMEOUT", "0.2")
        with pytest.raises(Busy, match=r"held its lock for 0\.2s") as info, plan_lock(repo):
            pytest.fail("took a lock another process holds")
        assert info.value.exit_code == EXIT_BUSY == 75
        before = (repo / "plan.jsonl").read_bytes()
        command = ralph_process(repo, "task", "add", "--name", "Waits for the lock")
        assert command.returncode == 75, command.stderr
        assert "busy" in command.stderr
        assert (repo / "plan.jsonl").read_bytes() == before
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert holder.returncode == 0
    with plan_lock(repo):  # free again once the holder is gone
        pass


def test_the_lock_is_held_inside_and_released_after_an_exception(tmp_path):
    with pytest.raises(RuntimeError, match="inside"), plan_lock(tmp_path):
        assert (tmp_path / LOCK_NAME).exists()
        assert try_lock(tmp_path) == 75
        raise RuntimeError("inside")
    assert try_lock(tmp_path) == 0


@pytest.mark.filterwarnings("ignore:flock not supported")  # filelock says so; ralph need not
def test_where_the_file_system_has_no_flock_the_lock_falls_back_and_still_excludes(tmp_path, monkeypatch):
    import errno
    import fcntl

    def no_flock(fd, operation):
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    monkeypatch.setenv("RALPH_LOCK_TIMEOUT", "0.2")
    with plan_lock(tmp_path), pytest.raises(Busy), plan_lock(tmp_path):
        pytest.fail("took a lock this process holds")
    with plan_lock(tmp_path):  # released
        pass
