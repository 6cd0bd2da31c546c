"""The supervisor: runs the loop's children (agents and gates) and can stop them all.

Each child starts in its own session (so its own process group) with the given stdin bytes and
then EOF; on timeout, on a monitor's request or when ralph is stopped (Ctrl-C, SIGTERM, SIGHUP)
the whole group gets SIGTERM, then SIGKILL after a grace period, so no grandchild outlives it.
Output is written to the log as it arrives, line by line, not when the child exits.
`stop_all` is final: a child a thread starts after it (a VERIFY worker that was just about to) is
not run at all, and one that slipped in between is stopped at once, with stop_reason "interrupted".
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

DEFAULT_GRACE_S = 3.0
CHUNK = 1 << 20  # the most of one output line read at once
TAIL_LINE_CHARS = 2000  # of each line kept for failure summaries
LOG_HEAD = 32 << 20  # bytes of a run's output written to its log as they arrive
LOG_TAIL = 8 << 20  # bytes kept from the end once the head is written

# A monitor sees each output line; returning a reason (e.g. "context_limit") stops the child.
Monitor = Callable[[str], "str | None"]


class RunResult:
    __slots__ = ("exit_code", "stop_reason", "duration_s", "log_path", "tail")

    def __init__(
        self,
        exit_code: int | None,
        stop_reason: str | None,
        duration_s: float,
        log_path: Path,
        tail: list[str],
    ):
        self.exit_code = exit_code  # None when ralph stopped it
        self.stop_reason = stop_reason  # "timeout", "interrupted", a monitor's reason, or None
        self.duration_s = duration_s
        self.log_path = log_path
        self.tail = tail  # the last lines of output, for failure summaries

    @property
    def ok(self) -> bool:
        return self.stop_reason is None and self.exit_code == 0


class ChildNotFound(Exception):
    """The program to run does not exist or is not executable."""


class Supervisor:
    """Owns the running children: the loop holds one, and `stop_all` ends every one of them."""

    def __init__(self, grace_s: float = DEFAULT_GRACE_S):
        self.grace_s = grace_s
        self._running: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self._stopped = False  # set by stop_all, never cleared

    def running(self) -> int:
        with self._lock:
            return len(self._running)

    def run(
        self,
        argv: list[str],
        *,
        cwd: Path,
        env: dict[str, str],
        log_path: Path,
        timeout_s: float | None,
        stdin_data: bytes | None = None,
        monitor: Monitor | None = None,
        tail_lines: int = 60,
    ) -> RunResult:
        """Run one child to its end, or until its time is up or the monitor stops it."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with open(log_path, "ab", buffering=0) as log:
            if self._stopped:
                log.write(b"[ralph] not started: ralph is stopping (interrupted)\n")
                return RunResult(None, "interrupted", 0.0, log_path, [])
            child = _start(argv, cwd, env, log, stdin_data)
            with self._lock:
                self._running.add(child)
            try:
                reader = _Reader(child, log, monitor, tail_lines)
                reader.start()
                if stdin_data is not None:
                    threading.Thread(target=_feed, args=(child, stdin_data), daemon=True).start()
                stop_reason = self._wait(child, reader, timeout_s, started)
                if stop_reason:
                    log.write(f"\n[ralph] stopping the agent's process group: {stop_reason}\n".encode())
                    _stop_group(child, self.grace_s)
                else:
                    _kill_leftovers(child)  # a grandchild still running after its parent exited
                reader.join(timeout=self.grace_s + 1)
            except BaseException:  # Ctrl-C or a stop signal in this thread: the child goes too
                _stop_group(child, self.grace_s)
                raise
            finally:
                with self._lock:
                    self._running.discard(child)
            exit_code = None if stop_reason else child.returncode
            log.write(f"\n[ralph] exit {exit_code if exit_code is not None else stop_reason}\n".encode())
        return RunResult(exit_code, stop_reason, time.monotonic() - started, log_path, reader.tail)

    def stop_all(self) -> None:
        """Stop every child still running, each group TERM, then KILL after the grace period; from
        now on nothing more is started."""
        with self._lock:
            self._stopped = True
            children = list(self._running)
        threads = [threading.Thread(target=_stop_group, args=(child, self.grace_s)) for child in children]
        for thread in threads:  # in parallel: N children cost one grace period, not N
            thread.start()
        for thread in threads:
            thread.join()

    def _wait(
        self, child: subprocess.Popen, reader: _Reader, timeout_s: float | None, started: float
    ) -> str | None:
        """Wait for the child; return why ralph must stop it, or None once it exited by itself."""
        while True:
            if self._stopped:  # added to _running after stop_all took its list, or killed by it
                return "interrupted"
            if reader.stop_reason:
                return reader.stop_reason
            try:
                child.wait(timeout=0.05)
                reader.join(timeout=5)  # let the last lines reach the log and the monitor
                return "interrupted" if self._stopped else reader.stop_reason
            except subprocess.TimeoutExpired:
                pass
            if timeout_s is not None and time.monotonic() - started > timeout_s:
                return "timeout"


def _start(
    argv: list[str], cwd: Path, env: dict[str, str], log, stdin_data: bytes | None
) -> subprocess.Popen:
    try:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except (FileNotFoundError, PermissionError) as exc:
        log.write(f"[ralph] cannot start {argv[0]}: {exc}\n".encode())
        raise ChildNotFound(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None


def _feed(child: subprocess.Popen, data: bytes) -> None:
    try:
        child.stdin.write(data)
        child.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the child did not read its stdin; that is its choice


def _signal_group(child: subprocess.Popen, sig: int) -> bool:
    try:
        os.killpg(child.pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _stop_group(child: subprocess.Popen, grace_s: float) -> None:
    _signal_group(child, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if child.poll() is not None and not _group_alive(child):
            return
        time.sleep(0.05)
    _signal_group(child, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=5)


def _group_alive(child: subprocess.Popen) -> bool:
    """Whether any process of the child's group still runs. A zombie (exited, not yet reaped by
    whoever adopted it: a slow PID 1 in a container) no longer runs, so it does not count."""
    if not _signal_group(child, 0):
        return False
    members = _group_members(child.pid)
    return members is None or any(state != "Z" for state in members)


def _group_members(pgid: int) -> list[str] | None:
    """The states of the processes in group `pgid`, read from /proc; None where there is no /proc."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    states = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it exited while being read
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state, ppid, pgrp, ...
        if int(fields[2]) == pgid:
            states.append(fields[0])
    return states


def _kill_leftovers(child: subprocess.Popen) -> None:
    if _group_alive(child):
        _stop_group(child, 0.5)


class _Reader(threading.Thread):
    """Copies the child's output to the log line by line and feeds the monitor. Memory stays
    bounded whatever the child prints (a line is read at most CHUNK bytes at a time), and so does
    the log: past LOG_HEAD bytes only the last LOG_TAIL are kept, written when the child ends."""

    def __init__(self, child: subprocess.Popen, log, monitor: Monitor | None, tail_lines: int):
        super().__init__(daemon=True)
        self.child, self.log, self.monitor = child, log, monitor
        self.tail: list[str] = []
        self.tail_lines = tail_lines
        self.stop_reason: str | None = None
        self.logged = 0
        self.held: collections.deque[bytes] = collections.deque()  # the log's tail past its head
        self.held_bytes = self.omitted = 0

    def run(self) -> None:
        for raw in iter(lambda: self.child.stdout.readline(CHUNK), b""):
            self._log(raw)
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.tail.append(line[:TAIL_LINE_CHARS])
            del self.tail[: -self.tail_lines]
            if self.monitor and not self.stop_reason:
                try:
                    self.stop_reason = self.monitor(line)
                except Exception as exc:  # a parser bug must not hang the run
                    self._log(f"[ralph] output monitor failed: {exc!r}\n".encode())
        self.child.stdout.close()
        self._flush_tail()

    def _log(self, raw: bytes) -> None:
        if self.logged < LOG_HEAD:
            self.log.write(raw)
            self.logged += len(raw)
            return
        self.held.append(raw)
        self.held_bytes += len(raw)
        while self.held_bytes > LOG_TAIL:
            dropped = self.held.popleft()
            self.held_bytes -= len(dropped)
            self.omitted += len(dropped)

    def _flush_tail(self) -> None:
        if self.omitted:
            note = f"\n[ralph] {self.omitted:,} bytes of output omitted (the log keeps its head and tail)\n"
            self.log.write(note.encode())
        self.log.write(b"".join(self.held))
        self.held.clear()
