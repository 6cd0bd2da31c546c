"""The supervisor with real processes: every stop takes the child's whole process group with it.

The children are `sh` scripts that start a `sleep 600` grandchild and print both pids at once,
so a test can check that neither outlives the stop. Timeouts here are hang guards, never asserted.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from ralph.loop.supervisor import ChildNotFound, RunResult, Supervisor

# Prints "<grandchild pid> <own pid>", then waits for the grandchild (ten minutes).
FAMILY = ["sh", "-c", "sleep 600 & echo pids $! $$; wait"]
GRACE_S = 1.0


def alive(pid: int) -> bool:
    """Exists and is not a zombie (an orphaned zombie may wait a while for its reaper)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def gone(pid: int) -> bool:
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def pids_in(log: Path) -> list[int]:
    """The pids FAMILY printed, once it has."""
    text = log.read_text() if log.exists() else ""
    line = next((line for line in text.splitlines() if line.startswith("pids ")), None)
    return [int(pid) for pid in line.split()[1:]] if line else []


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.fixture
def cleanup():
    """Kills whatever a failing test left: pass each pid seen."""
    seen: list[int] = []
    yield seen
    for pid in seen:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def run(supervisor: Supervisor, tmp_path: Path, name: str, argv=FAMILY, **kwargs) -> RunResult:
    kwargs.setdefault("timeout_s", 120)  # a hang guard
    return supervisor.run(
        argv, cwd=tmp_path, env=dict(os.environ), log_path=tmp_path / f"{name}.log", **kwargs
    )


def in_thread(function) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def target() -> None:
        try:
            out["result"] = function()
        except BaseException as exc:  # reported by the test, not lost in the thread
            out["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, out


def test_a_timeout_stops_the_child_and_its_grandchild(tmp_path, cleanup):
    result = run(Supervisor(GRACE_S), tmp_path, "timeout", timeout_s=2)
    pids = pids_in(result.log_path)
    cleanup += pids
    assert len(pids) == 2, result.log_path.read_text()
    assert result.stop_reason == "timeout" and result.exit_code is None and not result.ok
    assert all(gone(pid) for pid in pids)
    assert "stopping the agent's process group: timeout" in result.log_path.read_text()


def test_a_grandchild_left_behind_by_a_finished_child_is_stopped(tmp_path, cleanup):
    # The grandchild lets go of the output pipe, as a daemon does; one holding it is the same case
    # but costs the reader's five-second wait for the last lines.
    script = "sleep 600 >/dev/null 2>&1 & echo pids $! $$"
    result = run(Supervisor(GRACE_S), tmp_path, "orphan", argv=["sh", "-c", script])
    pids = pids_in(result.log_path)
    cleanup += pids
    assert result.ok and len(pids) == 2
    assert all(gone(pid) for pid in pids)


def test_stop_all_from_another_thread_stops_every_running_child(tmp_path, cleanup):
    supervisor = Supervisor(GRACE_S)
    runs = [in_thread(lambda name=name: run(supervisor, tmp_path, name)) for name in ("one", "two")]
    logs = [tmp_path / "one.log", tmp_path / "two.log"]
    wait_for(lambda: all(pids_in(log) for log in logs) and supervisor.running() == 2, "both children ran")
    pids = [pid for log in logs for pid in pids_in(log)]
    cleanup += pids
    stopper, _ = in_thread(supervisor.stop_all)
    stopper.join(timeout=60)
    for thread, out in runs:
        thread.join(timeout=60)
        assert "error" not in out, out
        assert out["result"].stop_reason == "interrupted" and out["result"].exit_code is None
    assert all(gone(pid) for pid in pids) and supervisor.running() == 0


def test_after_stop_all_a_child_about_to_start_is_not_run(tmp_path):
    supervisor = Supervisor(GRACE_S)
    supervisor.stop_all()  # a VERIFY thread was just about to start its agent
    marker = tmp_path / "ran"
    result = run(supervisor, tmp_path, "late", argv=["touch", str(marker)])
    assert result.stop_reason == "interrupted" and not marker.exists()
    assert "interrupted" in result.log_path.read_text()


def test_an_interrupt_while_waiting_stops_the_group_and_goes_on(tmp_path, cleanup):
    log = tmp_path / "waited.log"

    def interrupt_once_running() -> None:
        wait_for(lambda: pids_in(log), "the child never printed its pids")
        _thread.interrupt_main()  # as Ctrl-C (or a stop signal's handler) in the main thread

    thread, _ = in_thread(interrupt_once_running)
    with pytest.raises(KeyboardInterrupt):
        run(Supervisor(GRACE_S), tmp_path, "waited")
    thread.join(timeout=60)
    pids = pids_in(log)
    cleanup += pids
    assert len(pids) == 2 and all(gone(pid) for pid in pids)


def test_a_monitor_reason_stops_the_child_with_that_reason(tmp_path, cleanup):
    script = "sleep 600 & echo pids $! $$; echo CONTEXT FULL; wait"
    seen: list[str] = []

    def monitor(line: str) -> str | None:
        seen.append(line)
        return "context_limit" if line == "CONTEXT FULL" else None

    result = run(Supervisor(GRACE_S), tmp_path, "monitored", argv=["sh", "-c", script], monitor=monitor)
    pids = pids_in(result.log_path)
    cleanup += pids
    assert result.stop_reason == "context_limit" and result.exit_code is None
    assert seen[-1] == "CONTEXT FULL" and result.tail[-1] == "CONTEXT FULL"
    assert "stopping the agent's process group: context_limit" in result.log_path.read_text()
    assert len(pids) == 2 and all(gone(pid) for pid in pids)


@pytest.mark.parametrize("kind", ["missing", "not executable"])
def test_a_program_that_cannot_start_raises_and_says_why_in_the_log(tmp_path, kind):
    program = tmp_path / "prog"
    if kind == "not executable":
        program.write_text("#!/bin/sh\n")
    supervisor = Supervisor(GRACE_S)
    with pytest.raises(ChildNotFound, match="cannot run"):
        run(supervisor, tmp_path, "missing", argv=[str(program), "--flag"])
    assert f"cannot start {program}" in (tmp_path / "missing.log").read_text()
    assert supervisor.running() == 0


def test_the_child_gets_the_given_environment_and_directory(tmp_path):
    script = "import os; print(os.getcwd()); print(os.environ.get('ONLY_HERE'))"
    env = {**os.environ, "ONLY_HERE": "yes"}
    result = Supervisor(GRACE_S).run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, log_path=tmp_path / "env.log", timeout_s=60
    )
    assert result.ok and result.tail == [str(tmp_path), "yes"]


def test_output_without_newlines_keeps_memory_and_the_log_bounded(tmp_path, monkeypatch):
    import resource

    from ralph.loop import supervisor

    monkeypatch.setattr(supervisor, "LOG_HEAD", 1 << 20)
    monkeypatch.setattr(supervisor, "LOG_TAIL", 1 << 20)
    flood = "import sys\nfor _ in range(200): sys.stdout.write('x' * (1 << 20))\n"
    script = flood + "sys.stdout.write('\\nTHE END\\n')"
    log = tmp_path / "flood.log"
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = supervisor.Supervisor().run(
        [sys.executable, "-c", script], cwd=tmp_path, env=dict(os.environ), log_path=log, timeout_s=120
    )
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert result.ok and grown_mb < 100, grown_mb  # 200 MB went through; a few chunks were held
    data = log.read_bytes()
    assert len(data) < 3 << 20 and b"bytes of output omitted" in data and data.rstrip().endswith(b"exit 0")
    assert b"THE END" in data and result.tail[-1] == "THE END"
    assert all(len(line) <= 2000 for line in result.tail)


def test_a_group_whose_only_member_is_a_zombie_counts_as_gone():
    import subprocess

    from ralph.loop.supervisor import _group_alive

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.2)"], start_new_session=True)
    assert _group_alive(child)
    stat = Path(f"/proc/{child.pid}/stat")
    for _ in range(400):  # until it has exited, unreaped (a hang guard, not a timing assertion)
        if stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
            break
        time.sleep(0.025)
    assert not _group_alive(child)  # a zombie runs nothing: no grace period spent waiting on it
    child.wait()
