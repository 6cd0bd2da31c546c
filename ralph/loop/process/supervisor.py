"""The supervisor: runs the loop's children (agents and gates) and can stop them all.

Each child starts in its own session (so its own process group) with the given stdin bytes and
then EOF; on timeout, on a monitor's request or when ralph is stopped (Ctrl-C, SIGTERM, SIGHUP)
the whole group gets SIGTERM, then SIGKILL after a grace period, so no grandchild outlives it.
Output is written to the log as it arrives, line by line, not when the child exits.
`stop_all` is final: a child a thread starts after it (a VERIFY worker that was just about to) is
not run at all, and one that slipped in between is stopped at once, with stop_reason "interrupted".
The exception is a run that `outlives_stop` (the run_ended hooks): it starts and runs after a
stop or a spent budget, bounded only by its own timeout, so a stopped run still tells.
Inside `adopting_orphans` (the construct loop), what a run leaves behind outside its group (a
`setsid` daemon) is ended when the run ends too: see reaper.py.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ralph.loop.process import reaper
from ralph.plan.records import StopReason
from ralph.secrets import OutputLines
from ralph.text import plural

if TYPE_CHECKING:
    import select

DEFAULT_GRACE_S = 3.0
CHUNK = 1 << 20  # the most of one output line read at once
TAIL_LINE_CHARS = 2000  # of each line kept for failure summaries
CARRIED = 8192  # of a piece of a long line, carried to the next: a secret that spans the two is seen
LOG_HEAD = 32 << 20  # bytes of a run's output written to its log as they arrive
LOG_TAIL = 8 << 20  # bytes kept from the end once the head is written
WAKE_S = 0.05  # how often a wait looks at the stop flag, the monitor, the timeout and the budget

# A monitor sees each output line; returning a reason (e.g. "context_limit") stops the child.
Monitor = Callable[[str], "StopReason | None"]


class RunResult:
    __slots__ = ("exit_code", "stop_reason", "duration_s", "log_path", "tail")

    def __init__(
        self,
        exit_code: int | None,
        stop_reason: StopReason | None,
        duration_s: float,
        log_path: Path,
        tail: list[str],
    ):
        self.exit_code = exit_code  # None when ralph stopped it
        self.stop_reason = stop_reason  # None: the child ended by itself
        self.duration_s = duration_s
        self.log_path = log_path
        self.tail = tail  # the last lines of output, for failure summaries

    @property
    def ok(self) -> bool:
        return self.stop_reason is None and self.exit_code == 0


class ChildNotFound(Exception):
    """The program to run does not exist or is not executable."""


class BudgetSpent(Exception):
    """The run's time budget is spent: the loop ends with MAX_MINUTES. `stopped_run`: a child
    (agent or gate) was stopped for it, so its unfinished work must be set aside."""

    def __init__(self, message: str, stopped_run: bool = False):
        super().__init__(message)
        self.stopped_run = stopped_run


class Supervisor:
    """Owns the running children: the loop holds one, and `stop_all` ends every one of them."""

    def __init__(self, grace_s: float = DEFAULT_GRACE_S):
        self.grace_s = grace_s
        self._running: dict[subprocess.Popen[bytes], int] = {}  # each running child: its run's number
        self._runs = 0  # runs started so far; run n's children carry the mark "<ralph pid>.n"
        self._lock = threading.Lock()
        self._stopped = False  # set by stop_all, never cleared
        self._outliving: set[subprocess.Popen[bytes]] = set()  # children stop_all leaves to their timeout
        self._adopting = False  # ralph is a child subreaper: the orphans of its children come to it
        # time.monotonic() at which the run's time budget ends (--max-minutes): every child still
        # running then is stopped, so the budget overshoots by at most the grace period.
        self.deadline_at: float | None = None

    @property
    def stopping(self) -> bool:
        return self._stopped

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
        outlives_stop: bool = False,
    ) -> RunResult:
        """Run one child to its end, or until its time is up or the monitor stops it. A child that
        `outlives_stop` runs even after stop_all, and is not stopped by it or the time budget."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with open(log_path, "ab", buffering=0) as log:
            child = self._start(argv, cwd, env, log, stdin_data, outlives_stop)
            if child is None:
                log.write(b"[ralph] not started: ralph is stopping (interrupted)\n")
                return RunResult(None, StopReason.INTERRUPTED, 0.0, log_path, [])
            reader = _Reader(child, log, monitor, tail_lines)
            try:
                reader.start()
                if stdin_data is not None:
                    threading.Thread(target=_feed, args=(child, stdin_data), daemon=True).start()
                stop_reason = self._wait(child, reader, timeout_s, started, outlives_stop)
                if stop_reason:
                    log.write(f"\n[ralph] stopping the agent's process group: {stop_reason}\n".encode())
                    _stop_group(child, self.grace_s)
                else:
                    _kill_leftovers(child)  # a grandchild still running after its parent exited
            except BaseException:  # Ctrl-C or a stop signal in this thread: the child goes too
                _stop_group(child, self.grace_s)
                reader.detach()  # the log closes as this leaves: the reader writes nothing more
                raise
            finally:
                self._end_run(child, log)
            # Only now: a process left behind may hold the output pipe open until it is ended.
            reader.join(timeout=5 if stop_reason is None else self.grace_s + 1)
            reader.detach()  # what it reads after this is not written: the log closes below
            if stop_reason is None:  # the monitor may find a reason in the last lines
                stop_reason = (
                    StopReason.INTERRUPTED if self._stopped and not outlives_stop else reader.stop_reason
                )
                if stop_reason:
                    log.write(f"\n[ralph] stopping the agent's process group: {stop_reason}\n".encode())
            exit_code = None if stop_reason else child.returncode
            log.write(f"\n[ralph] exit {exit_code if exit_code is not None else stop_reason}\n".encode())
        if stop_reason == StopReason.BUDGET:
            raise BudgetSpent("the time budget is spent", stopped_run=True)
        return RunResult(exit_code, stop_reason, time.monotonic() - started, log_path, reader.tail)

    @contextlib.contextmanager
    def adopting_orphans(self) -> Iterator[bool]:
        """While inside, ralph adopts what its children leave behind and each run's leftovers are
        ended when it ends; on the way out, whatever is left of any run. Yields whether adopting
        works here (Linux); elsewhere a daemon an agent starts outlives its run (docs/agent-contract.md)."""
        with reaper.subreaper() as adopting:
            self._adopting = adopting
            try:
                yield adopting
            finally:
                if adopting:
                    with self._lock:
                        runs, live = self._runs, set(self._running.values())
                        running = {child.pid for child in self._running}
                    reaper.end_left_behind(self._finished(runs, live), running, self.grace_s)
                    reaper.reap_adopted()  # the loop's end: no thread of ralph runs a child now
                self._adopting = False

    def stop_all(self, outliving_too: bool = False) -> None:
        """Stop every child still running (those that outlive a stop only when `outliving_too`),
        each group TERM, then KILL after the grace period; from now on nothing more is started."""
        with self._lock:
            self._stopped = True
            children = [child for child in self._running if outliving_too or child not in self._outliving]
            if outliving_too:
                self._outliving.clear()
        threads = [threading.Thread(target=_stop_group, args=(child, self.grace_s)) for child in children]
        for thread in threads:  # in parallel: N children cost one grace period, not N
            thread.start()
        for thread in threads:
            thread.join()

    def _wait(
        self,
        child: subprocess.Popen[bytes],
        reader: _Reader,
        timeout_s: float | None,
        started: float,
        outlives: bool,
    ) -> StopReason | None:
        """Wait for the child; return why ralph must stop it, or None once it exited by itself."""
        with _ExitWatch(child) as exited:
            while True:
                if self._stopped and (not outlives or child not in self._outliving):
                    return StopReason.INTERRUPTED  # started after stop_all took its list, or killed by it
                if reader.stop_reason:
                    return reader.stop_reason
                if exited(WAKE_S):
                    return None
                if timeout_s is not None and time.monotonic() - started > timeout_s:
                    return StopReason.TIMEOUT
                if self.deadline_at is not None and time.monotonic() >= self.deadline_at and not outlives:
                    return StopReason.BUDGET

    def _start(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        log: BinaryIO,
        stdin_data: bytes | None,
        outlives: bool,
    ) -> subprocess.Popen[bytes] | None:
        """Start the child unless stop_all came first (and it does not outlive a stop). Under the
        lock, so a sweep never sees a child of ralph that is not yet counted as running."""
        with self._lock:
            if self._stopped and not outlives:
                return None
            self._runs += 1
            mark = f"{os.getpid()}.{self._runs}"
            child = _start(argv, cwd, {**env, reaper.MARK: mark}, log, stdin_data)
            self._running[child] = self._runs
            if outlives:
                self._outliving.add(child)
        return child

    def _end_run(self, child: subprocess.Popen[bytes], log: BinaryIO) -> None:
        """The run is over: it no longer counts as running, and what it left behind outside its
        group (and what earlier runs did) is ended now, while runs still going keep theirs."""
        with self._lock:
            self._running.pop(child, None)
            self._outliving.discard(child)
            runs, live = self._runs, set(self._running.values())
            running = {other.pid for other in self._running}
        if not self._adopting:
            return
        if child.returncode is None:  # not reaped: it resisted SIGKILL; its Popen keeps it
            running.add(child.pid)
        ended = reaper.end_left_behind(self._finished(runs, live), running, self.grace_s)
        if ended:
            processes = plural(len(ended), "process", "processes")
            note = f"\n[ralph] ended {processes} left running outside the run's group: "
            log.write((note + ", ".join(ended) + "\n").encode())

    @staticmethod
    def _finished(runs: int, live: set[int]) -> Callable[[str], bool]:
        """Whether a mark is one of this ralph's runs that had ended when `runs` runs had started
        and `live` were still running (a run started later is not finished)."""
        prefix = f"{os.getpid()}."

        def finished(mark: str) -> bool:
            if not mark.startswith(prefix) or not mark[len(prefix) :].isdigit():
                return False
            number = int(mark[len(prefix) :])
            return number <= runs and number not in live

        return finished


class _ExitWatch:
    """`exited(seconds)`: waits up to that long for the child to exit, and says whether it did.

    On Linux it sleeps on a pidfd, which wakes the moment the child exits. Popen.wait(timeout)
    instead polls with sleeps growing to 50 ms, so each run's end was noticed some 25 ms late on
    average, and every agent run, gate and hook of a loop paid that. Elsewhere: Popen.wait."""

    def __init__(self, child: subprocess.Popen[bytes]):
        self.child = child
        self._poll: select.poll | None = None
        self._pidfd: int | None = None

    def __enter__(self) -> Callable[[float], bool]:
        import select

        try:
            self._pidfd = os.pidfd_open(self.child.pid)
        except (AttributeError, OSError):  # not Linux 5.3+, or seccomp refuses it
            return self._wait
        self._poll = select.poll()
        self._poll.register(self._pidfd, select.POLLIN)
        return self._wait_on_pidfd

    def __exit__(self, *exc: object) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)

    def _wait(self, seconds: float) -> bool:
        try:
            self.child.wait(timeout=seconds)
            return True
        except subprocess.TimeoutExpired:
            return False

    def _wait_on_pidfd(self, seconds: float) -> bool:
        assert self._poll is not None  # __enter__ made it before handing out this method
        if self._poll.poll(seconds * 1000):
            self.child.wait()  # it has exited: this reaps it at once
            return True
        return self.child.poll() is not None


def _start(
    argv: list[str], cwd: Path, env: dict[str, str], log: BinaryIO, stdin_data: bytes | None
) -> subprocess.Popen[bytes]:
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


def _feed(child: subprocess.Popen[bytes], data: bytes) -> None:
    assert child.stdin is not None  # stdin=PIPE: there is data to feed
    try:
        child.stdin.write(data)
        child.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the child did not read its stdin; that is its choice


def _signal_group(child: subprocess.Popen[bytes], sig: int) -> bool:
    try:
        os.killpg(child.pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _stop_group(child: subprocess.Popen[bytes], grace_s: float) -> None:
    _signal_group(child, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    pause = 0.001
    while time.monotonic() < deadline:
        if child.poll() is not None and not _group_alive(child):
            return
        # Short at first: what is usually left is a process already exiting (bubblewrap's
        # helper, a moment after bubblewrap itself), gone within milliseconds; a fixed 50 ms
        # wait cost most sandboxed runs 50 ms.
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
    _signal_group(child, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=5)


def _group_alive(child: subprocess.Popen[bytes]) -> bool:
    """Whether any process of the child's group still runs. A zombie (exited, not yet reaped by
    whoever adopted it: a slow PID 1 in a container) no longer runs, so it does not count."""
    if not _signal_group(child, 0):
        return False
    members = _group_members(child.pid)
    return members is None or any(state != "Z" for state in members)


def _group_members(pgid: int) -> list[str] | None:
    """The states of the processes in group `pgid`, read from /proc; None where there is no /proc.
    Looked for among ralph's descendants first (where its subreaper keeps a run's orphans); only
    when none is there (a member adopted elsewhere: no subreaper) among every process."""
    ours = reaper.descendants_table()
    members = [proc.state for proc in ours.values() if proc.pgrp == pgid] if ours else []
    if members:
        return members
    table = reaper.process_table()
    return None if table is None else [proc.state for proc in table.values() if proc.pgrp == pgid]


def _kill_leftovers(child: subprocess.Popen[bytes]) -> None:
    if _group_alive(child):
        _stop_group(child, 0.5)


class _Reader(threading.Thread):
    """Copies the child's output to the log line by line and feeds the monitor. Memory stays
    bounded whatever the child prints (a line is read at most CHUNK bytes at a time), and so does
    the log: past LOG_HEAD bytes only the last LOG_TAIL are kept, written when the child ends."""

    def __init__(
        self, child: subprocess.Popen[bytes], log: BinaryIO, monitor: Monitor | None, tail_lines: int
    ):
        super().__init__(daemon=True)
        self.child, self.log, self.monitor = child, log, monitor
        self.tail: list[str] = []  # redacted: it goes into summaries, the plan and the console
        self.tail_lines = tail_lines
        self.redact = OutputLines()
        self.stop_reason: StopReason | None = None
        self.logged = 0
        self.held: collections.deque[bytes] = collections.deque()  # the log's tail past its head
        self.held_bytes = self.omitted = 0
        self._writing = threading.Lock()
        self._detached = False  # the run has ended and its log is closing: nothing more is written

    def detach(self) -> None:
        """The run ended while this thread still reads (a process left behind, outside the
        child's group, holds the pipe open): from now on it writes nothing to the log, which the
        run closes, and reads on only to let that process go."""
        with self._writing:
            self._detached = True

    def _write(self, data: bytes) -> None:
        with self._writing:
            if not self._detached:
                self.log.write(data)

    def run(self) -> None:
        stdout = self.child.stdout
        assert stdout is not None  # stdout=PIPE
        before = ""  # the end of the same line's last piece, when a line longer than CHUNK goes on
        for raw in iter(lambda: stdout.readline(CHUNK), b""):
            self._log(raw)
            line = raw.decode("utf-8", "replace").rstrip("\n")
            # Cut with no piece of a secret left at either end (a flood of one 200 MB line took
            # seconds to redact whole; its head is redacted as the whole would be).
            self.tail.append(self.redact.head(line, TAIL_LINE_CHARS, before))
            before = "" if raw.endswith(b"\n") else line[-CARRIED:]
            del self.tail[: -self.tail_lines]
            if self.monitor and not self.stop_reason and not self._detached:  # the run is over
                try:
                    self.stop_reason = self.monitor(line)
                except Exception as exc:  # a parser bug must not hang the run
                    self._log(f"[ralph] output monitor failed: {exc!r}\n".encode())
        stdout.close()
        self._flush_tail()

    def _log(self, raw: bytes) -> None:
        if self.logged < LOG_HEAD:
            self._write(raw)
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
            self._write(note.encode())
        self._write(b"".join(self.held))
        self.held.clear()
