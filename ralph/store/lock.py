"""The one lock every writer of plan.jsonl holds: a real file lock, waited for within a bound."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ralph.errors import Busy, InvalidInput, RalphError

LOCK_NAME = "plan.jsonl.lock"
DEFAULT_LOCK_TIMEOUT_S = 60.0


@contextmanager
def plan_lock(root: Path) -> Iterator[None]:
    """The lock every writer of plan.jsonl holds; waiting is bounded and ends in Busy."""
    from filelock import FileLock, Timeout

    timeout = lock_timeout()
    lock = FileLock(root / LOCK_NAME, timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise Busy(f"plan.jsonl is busy: another ralph command held its lock for {timeout:g}s") from None
    except OSError as exc:  # a read-only folder, a directory where the lock file goes, ...
        raise RalphError(f"cannot take the lock {LOCK_NAME}: {exc.strerror or exc}") from None
    try:
        yield
    finally:
        lock.release()


def lock_timeout() -> float:
    """Seconds to wait for the lock: RALPH_LOCK_TIMEOUT, a number >= 0 (a negative one would wait
    forever), else the default."""
    text = os.environ.get("RALPH_LOCK_TIMEOUT")
    if text is None:
        return DEFAULT_LOCK_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):  # also refuses NaN
        raise InvalidInput(f"RALPH_LOCK_TIMEOUT must be a number of seconds >= 0, not {text!r}")
    return value


@contextmanager
def exclusive_run(path: Path, what: str) -> Iterator[None]:
    """Hold `path` locked while `what` runs; a second one fails at once with Busy naming the
    first (pid, start). The kernel drops the lock of a process that dies, so a file left by a dead
    run never blocks the next."""
    import fcntl
    import time

    handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 (held for the whole run)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown pid"
            raise Busy(f"another {what} is running in this repository ({holder})") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}, since {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")
        handle.flush()
        yield
    finally:
        handle.close()  # closing releases the lock
