"""Waiting out rate limits and overloaded servers: bounded by the time budget, backing off with
jitter, and an authentication failure ends the wait with the hint."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ralph.loop.process.supervisor import Supervisor


def _waits(folder: Path, max_wait_s=60.0, backoff_s=0.05, deadline_at=None, said=None):
    from ralph.loop.observe.journal import Journal
    from ralph.loop.runs.rate_limits import LimitWaits

    journal = Journal(folder / "events.jsonl")
    return LimitWaits(
        max_wait_s,
        backoff_s,
        deadline_at,
        journal,
        (said if said is not None else []).append,
        Supervisor(),
        "run `x login`",
    )


def test_a_limit_wait_ends_at_the_time_budget(tmp_path):
    from ralph.agents.events import FailureEvent
    from ralph.loop.process.supervisor import BudgetSpent

    waits = _waits(tmp_path, deadline_at=time.monotonic() + 0.2)
    started = time.monotonic()
    with pytest.raises(BudgetSpent):
        waits.should_retry(FailureEvent("rate_limit", "429", 429, retry_after_s=30), 0, "BUILD", "t-a")
    assert time.monotonic() - started < 30  # not the 30 s the limit asked to wait


def test_backoff_doubles_with_jitter_and_an_auth_error_raises_with_the_hint(tmp_path):
    from ralph.agents.events import FailureEvent
    from ralph.loop.runs.rate_limits import AgentAuthFailed

    said: list[str] = []
    waits = _waits(tmp_path, said=said)
    overloaded = FailureEvent("overloaded", "529 Overloaded", 529)
    delays = [waits._delay(overloaded, n, time.time()) for n in range(4)]
    assert all(0.05 * 2**n / 2 <= d <= 0.05 * 2**n for n, d in enumerate(delays))
    assert waits.should_retry(overloaded, 0, "VERIFY", "t-a") is True
    assert said[0].startswith("VERIFY t-a: waiting for the overloaded server until ")
    assert waits.should_retry(FailureEvent("other", "400"), 0, "BUILD", "t-a") is False
    with pytest.raises(AgentAuthFailed, match="run `x login`"):
        waits.should_retry(FailureEvent("auth", "401 Unauthorized", 401), 0, "BUILD", "t-a")
