"""The supervisor with real processes: every stop takes the child's whole process group with it.

The children are `sh` scripts that start a `sleep 600` grandchild and print both pids at once,
so a test can check that neither outlives the stop. Timeouts here are hang guards, never asserted.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ralph.loop.process.supervisor import BudgetSpent, ChildNotFound, RunResult, Supervisor, _Reader
from tests.support.construct import alive
from tests.support.present import present

# Prints "<grandchild pid> <own pid>", then waits for the grandchild (ten minutes).
FAMILY = ["sh", "-c", "sleep 600 & echo pids $! $$; wait"]
GRACE_S = 1.0


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
        with contextlib.suppress(ChildProcessError):  # an orphan adopted by this process
            os.waitpid(pid, 0)


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


@pytest.fixture
def sigint_handled():
    """Python's own SIGINT handler, which interrupt_main() needs: where SIGINT is ignored, as under
    a `(cmd &)` shell, the interrupt would do nothing and the run would wait for its hang guard."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_an_interrupt_while_waiting_stops_the_group_and_goes_on(tmp_path, cleanup, sigint_handled):
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

    from ralph.loop.process import supervisor

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

    from ralph.loop.process.supervisor import _group_alive

    # It runs until the test closes its stdin: a child that slept a fixed time could already be a
    # zombie at the first look on a busy machine.
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE, start_new_session=True
    )
    assert _group_alive(child)
    present(child.stdin).close()
    stat = Path(f"/proc/{child.pid}/stat")
    for _ in range(400):  # until it has exited, unreaped (a hang guard, not a timing assertion)
        if stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
            break
        time.sleep(0.025)
    assert not _group_alive(child)  # a zombie runs nothing: no grace period spent waiting on it
    child.wait()


# --- what a run leaves outside its group --------------------------------------------------------
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="child subreapers are Linux's")

# Starts `setsid sleep 600` (holding the output pipe, as `setsid cmd &` in a shell does), prints
# "pids <daemon> <own>" once the daemon is in a session of its own, then exits: the daemon outlives
# its parent and is not in the group the supervisor stops.
# Exits once the daemon is `sleep` in a session of its own: setsid takes the session, then execs.
DAEMON = """import os, subprocess, time
daemon = subprocess.Popen(["setsid", "sleep", "600"])
def ready(stat):
    return "(sleep)" in stat and stat.rsplit(")", 1)[1].split()[3] == str(daemon.pid)
while not ready(open(f"/proc/{daemon.pid}/stat").read()):
    time.sleep(0.01)
print("pids", daemon.pid, os.getpid(), flush=True)
"""
# A double fork: the middle process takes a new session, starts the daemon and exits, so the daemon
# is an orphan while the run goes on (ten minutes).
ORPHAN_THEN_WAIT = """import os, time
middle = os.fork()
if middle == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "600"])
    os._exit(0)
os.waitpid(middle, 0)
"""


def daemon_pid(log: Path) -> int:
    return pids_in(log)[0]


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@linux_only
def test_a_daemon_left_outside_the_group_is_ended_and_reaped(tmp_path, cleanup):
    from ralph.loop.process import reaper

    supervisor = Supervisor(GRACE_S)
    with supervisor.adopting_orphans() as adopting:
        assert adopting
        result = run(supervisor, tmp_path, "daemon", argv=[sys.executable, "-c", DAEMON])
        pid = daemon_pid(result.log_path)
        cleanup.append(pid)
        assert result.ok
        assert not Path(f"/proc/{pid}").exists()  # ended, and reaped by its adoptive parent: this process
        assert f"ended 1 process left running outside the run's group: {pid} sleep" in (
            result.log_path.read_text()
        )
    prctl = reaper._prctl()
    assert prctl is None or not reaper._is_subreaper(prctl)  # as it was before


@linux_only
def test_a_daemon_of_a_run_still_going_is_ended_only_when_that_run_ends(tmp_path, cleanup):
    supervisor = Supervisor(GRACE_S)
    script = ORPHAN_THEN_WAIT + "print('pids', os.getpid(), flush=True)\ntime.sleep(600)\n"
    log = tmp_path / "going.log"
    with supervisor.adopting_orphans():
        argv = [sys.executable, "-c", script]
        going, out = in_thread(lambda: run(supervisor, tmp_path, "going", argv=argv))
        wait_for(lambda: pids_in(log), "the run never started its daemon")
        cleanup.append(pids_in(log)[0])
        wait_for(lambda: _children_of(os.getpid()), "the daemon was never adopted")
        (daemon,) = _children_of(os.getpid())
        cleanup.append(daemon)
        assert run(supervisor, tmp_path, "short", argv=["true"]).ok  # another run ends meanwhile
        assert alive(daemon) and parent_of(daemon) == os.getpid()
        supervisor.stop_all()
        going.join(timeout=60)
        assert out["result"].stop_reason == "interrupted"
        assert not Path(f"/proc/{daemon}").exists()


@linux_only
def test_what_ralph_itself_started_is_never_ended_by_the_sweep(tmp_path, cleanup):
    import subprocess

    supervisor = Supervisor(GRACE_S)
    with supervisor.adopting_orphans():
        # as a gpg-agent a signed plan commit starts: a child of ralph's own, without a run's mark
        subprocess.run([sys.executable, "-c", ORPHAN_THEN_WAIT], check=True)
        wait_for(lambda: _children_of(os.getpid()), "the daemon was never adopted")
        (daemon,) = _children_of(os.getpid())
        cleanup.append(daemon)
        assert run(supervisor, tmp_path, "any", argv=["true"]).ok
        assert alive(daemon)
    assert alive(daemon)


def _children_of(parent: int) -> list[int]:
    """The living `sleep 600` processes whose parent is `parent`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text.rsplit(")", 1)[1].split()
        if "(sleep)" in text and fields[0] != "Z" and int(fields[1]) == parent:
            found.append(int(stat.parent.name))
    return found


def test_a_child_still_running_at_the_budgets_deadline_is_stopped_then(tmp_path):
    supervisor = Supervisor(grace_s=0.5)
    supervisor.deadline_at = time.monotonic() + 0.3
    started = time.monotonic()
    with pytest.raises(BudgetSpent) as raised:
        supervisor.run(
            ["sleep", "30"], cwd=tmp_path, env=dict(os.environ), log_path=tmp_path / "x.log", timeout_s=60
        )
    # Stopped at the deadline, not at the child's end (30 s) or its timeout (60 s): what would have
    # come instead, not how fast (a loaded machine takes its time to get there).
    assert raised.value.stopped_run and time.monotonic() - started < 30
    assert "[ralph] exit budget" in (tmp_path / "x.log").read_text()


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "no pidfd"])
def test_the_exit_watch_says_whether_the_child_exited_and_reaps_it(monkeypatch, pidfd):
    from ralph.loop.process.supervisor import _ExitWatch

    if not pidfd:  # as on a system without pidfd_open (not Linux, or a seccomp filter)
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read(); sys.exit(7)"], stdin=subprocess.PIPE
    )
    assert child.stdin is not None
    try:
        with _ExitWatch(child) as exited:
            assert not exited(0.05)  # still waiting for its stdin
            child.stdin.close()
            assert exited(30)
        assert child.returncode == 7  # reaped: its exit status is known
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_output_reaches_the_log_while_the_child_still_runs(tmp_path):
    import threading

    log, go = tmp_path / "run.log", tmp_path / "go"
    # The child prints its second line only once the test has seen the first in the log (a handshake:
    # a 3 s sleep between them could pass unnoticed by a test thread a loaded machine held back).
    script = (
        "import os, time; print('first line', flush=True)\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
        "print('second')"
    )
    result: dict[str, RunResult] = {}
    thread = threading.Thread(
        target=lambda: result.update(
            run=Supervisor().run(
                [sys.executable, "-c", script], cwd=tmp_path, env=dict(os.environ), log_path=log, timeout_s=30
            )
        )
    )
    thread.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "first line" not in (log.read_text() if log.exists() else ""):
        time.sleep(0.05)
    assert "first line" in log.read_text() and "second" not in log.read_text()
    go.touch()
    thread.join()
    assert result["run"].ok and "second" in log.read_text()


def test_prompt_is_passed_on_stdin_and_stdin_then_closes(tmp_path):
    script = "import sys; data = sys.stdin.read(); print(len(data)); print(data[:5])"
    run = Supervisor().run(
        [sys.executable, "-c", script], cwd=tmp_path, env=dict(os.environ), log_path=tmp_path / "l.log",
        timeout_s=30, stdin_data=b"hello " * 100_000,
    )  # fmt: skip
    assert run.ok and run.tail == ["600000", "hello"]


def test_a_secret_across_the_cut_of_a_long_line_is_redacted_before_the_cut(tmp_path):
    from ralph.loop.process import supervisor

    token = "ghp_" + "a1" * 20
    script = f"print('x' * 1989 + ' ' + {token!r} + ' ' + 'y' * 100_000)"
    result = supervisor.Supervisor().run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=dict(os.environ),
        log_path=tmp_path / "l.log",
        timeout_s=60,
    )
    assert result.ok and len(result.tail[-1]) == supervisor.TAIL_LINE_CHARS
    assert "ghp_" not in result.tail[-1] and result.tail[-1].startswith("x" * 1989 + " [")


@linux_only
def test_the_descendants_table_is_the_full_tables_descendants_of_this_process(cleanup):
    """After each run ralph looks for what it left among its own descendants (through /proc's
    children files), not in every process of the machine: the same processes, as they are."""
    from ralph.loop.process import reaper

    family = subprocess.Popen(FAMILY, stdout=subprocess.PIPE, text=True)
    assert family.stdout is not None
    grandchild, child = (int(pid) for pid in family.stdout.readline().split()[1:])
    cleanup += [grandchild, child]
    deadline = time.monotonic() + 30
    while Path(f"/proc/{grandchild}/comm").read_text().strip() != "sleep" and time.monotonic() < deadline:
        time.sleep(0.01)  # forked, not yet exec'd: its name is still sh's
    try:
        ours = reaper.descendants_table()
        full = reaper.process_table()
        assert ours is not None and full is not None
        mine = [pid for pid, proc in full.items() if proc.ppid == os.getpid()]
        assert {child, grandchild} <= set(ours) == set(reaper._with_descendants(full, mine))
        same = ("name", "ppid", "pgrp", "sid")  # its state may change between the two reads
        assert [getattr(ours[grandchild], f) for f in same] == [getattr(full[grandchild], f) for f in same]
        assert ours[grandchild].ppid == child
        assert len(ours) < len(full)  # this machine's other processes are not read
    finally:
        family.kill()
        family.wait()


def test_without_children_files_the_whole_table_is_read(monkeypatch):
    from ralph.loop.process import reaper

    def no_children_files(pid):
        raise FileNotFoundError(f"/proc/{pid}/task/{pid}/children")

    monkeypatch.setattr(reaper, "_children", no_children_files)
    assert reaper.descendants_table() is None
    everything = {1: reaper.Proc("init", "S", 0, 1, 1)}
    monkeypatch.setattr(reaper, "process_table", lambda: everything)
    assert reaper._ours() is everything


def test_a_group_member_that_is_not_a_descendant_is_found_in_the_whole_table(monkeypatch):
    """Without a subreaper a run's orphan is re-parented to PID 1: not ralph's descendant, still
    in the run's group, and still to be stopped."""
    from ralph.loop.process import reaper, supervisor

    adopted_elsewhere = reaper.Proc("sleep", "S", 1, 4242, 4242)
    monkeypatch.setattr(reaper, "descendants_table", lambda: {})
    monkeypatch.setattr(reaper, "process_table", lambda: {4243: adopted_elsewhere})
    assert supervisor._group_members(4242) == ["S"]
    ours = reaper.Proc("bwrap", "Z", os.getpid(), 4242, 4242)
    monkeypatch.setattr(reaper, "descendants_table", lambda: {4244: ours})
    monkeypatch.setattr(reaper, "process_table", lambda: pytest.fail("the whole table was read"))
    assert supervisor._group_members(4242) == ["Z"]


def test_output_a_process_left_outside_the_group_prints_after_the_run_is_not_written_to_the_closed_log(
    tmp_path, monkeypatch
):
    """A grandchild in a session of its own keeps the output pipe open after the run ends: the run
    stops waiting for its reader, closes the log, and the reader writes nothing after that (it
    died on the closed file, and the end of the log was lost with it)."""
    import threading

    failures: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))
    go, gone = tmp_path / "go", tmp_path / "gone"
    late = (
        "import os, time\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
        "print('late line', flush=True)\n"
        f"open({str(gone)!r}, 'w').close()"
    )
    script = (
        "import subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', {late!r}], start_new_session=True)\n"
        "print('early line', flush=True)"
    )
    log = tmp_path / "run.log"
    result = Supervisor().run(
        [sys.executable, "-c", script], cwd=tmp_path, env=dict(os.environ), log_path=log, timeout_s=30
    )
    go.touch()  # the grandchild prints now, after the run ended and its log was closed
    for _ in range(600):
        if gone.exists():
            break
        time.sleep(0.05)
    from ralph.loop.process.supervisor import _Reader

    for reader in [thread for thread in threading.enumerate() if isinstance(thread, _Reader)]:
        reader.join(timeout=30)  # the pipe closed with the grandchild: its reader ends
    assert result.ok and "early line" in log.read_text()
    assert "late line" not in log.read_text()
    assert failures == []


def test_an_interrupt_while_a_process_outside_the_group_still_prints_leaves_no_error_behind(
    tmp_path, cleanup, sigint_handled, monkeypatch
):
    """The run's log closes as the interrupt leaves run(); a process outside the child's group
    (setsid) still holds the pipe and prints: the reader reads on but writes and monitors nothing
    (it wrote into the closed log, and `ralph spec draft` ended with a thread's ValueError)."""
    failures: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))
    outside = tmp_path / "outside.pid"
    # "started" once the outside process has left the group and said its pid: the interrupt must
    # not find it still in the group (it would stop with the run), nor its pid file not yet there.
    script = (
        f"setsid sh -c 'echo $$ > {outside}; i=0; while [ $i -lt 300 ]; do echo late $i; i=$((i+1));"
        f" sleep 0.01; done' & while [ ! -s {outside} ]; do sleep 0.01; done; echo started; sleep 60"
    )
    log = tmp_path / "interrupted.log"
    seen: list[str] = []

    def interrupt_once_started() -> None:
        wait_for(lambda: log.exists() and "started" in log.read_text(), "the child never started")
        _thread.interrupt_main()

    thread, _ = in_thread(interrupt_once_started)
    with pytest.raises(KeyboardInterrupt):
        run(Supervisor(GRACE_S), tmp_path, "interrupted", argv=["sh", "-c", script], monitor=seen.append)
    thread.join(timeout=60)
    cleanup.append(int(outside.read_text()))
    for reader in [t for t in threading.enumerate() if isinstance(t, _Reader)]:
        reader.join(timeout=60)  # it ends when the outside process does (300 lines, about 3 s)
    assert failures == []
    assert "late 299" not in log.read_text()  # nothing written after the log closed
    assert "late 299" not in seen  # nor given to the monitor
