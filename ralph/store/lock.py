"""The one lock every writer of plan.jsonl holds: a real file lock, waited for within a bound."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ralph.errors import Busy

LOCK_NAME = "plan.jsonl.lock"
DEFAULT_LOCK_TIMEOUT_S = 60.0


@contextmanager
def plan_lock(root: Path) -> Iterator[None]:
    """The lock every writer of plan.jsonl holds; waiting is bounded and ends in Busy."""
    from filelock import FileLock, Timeout

    timeout = float(os.environ.get("RALPH_LOCK_TIMEOUT", DEFAULT_LOCK_TIMEOUT_S))
    lock = FileLock(root / LOCK_NAME, timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise Busy(f"plan.jsonl is busy: another ralph command held its lock for {timeout:g}s") from None
    try:
        yield
    finally:
        lock.release()
