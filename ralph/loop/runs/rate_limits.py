"""Waiting out rate limits, usage limits and overloaded servers: a run that failed for one of them
is run again after a wait (the reported reset or retry-after time, else exponential backoff with
jitter), bounded by `max_wait` for one wait and by the run's time budget. The waits are journalled,
shown on the console, and are not attempts: the stage sees only the run that ended otherwise.

An authentication error ends the loop (AgentAuthFailed): no wait or retry can fix a login."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import datetime

from ralph.agents import limits
from ralph.agents.events import FailureEvent
from ralph.errors import RalphError
from ralph.loop.observe.journal import Journal
from ralph.loop.process.supervisor import BudgetSpent, Supervisor

# Consecutive waits for one run before the loop gives up on the limit (a limit that never lifts).
MAX_WAITS = 8
_WORDS = {
    limits.RATE_LIMIT: "the rate limit",
    limits.USAGE_LIMIT: "the usage limit",
    limits.OVERLOADED: "the overloaded server",
    limits.NETWORK: "the network error",
}


class AgentAuthFailed(RalphError):
    """The agent CLI could not authenticate: the loop stops with AGENT_AUTH."""


class LimitTooLong(RalphError):
    """The limit lifts later than max_wait allows (or never did): the loop stops with AGENT_LIMITED."""


class LimitWaits:
    def __init__(
        self,
        max_wait_s: float,
        backoff_s: float,
        deadline_at: float | None,
        journal: Journal,
        say: Callable[[str], None],  # shows a wait on the console
        supervisor: Supervisor,
        auth_hint: str = "",
    ):
        self.max_wait_s, self.backoff_s, self.deadline_at = max_wait_s, backoff_s, deadline_at
        self.journal, self.say, self.supervisor, self.auth_hint = journal, say, supervisor, auth_hint

    def should_retry(self, failure: FailureEvent | None, waits: int, stage: str, item: str | None) -> bool:
        """After a failed run: wait and return True when its failure is waited out; raise for an
        authentication error or a limit too long to wait for; False for anything else."""
        if failure is None:
            return False
        if failure.kind == limits.AUTH:
            hint = f": {self.auth_hint}" if self.auth_hint else ""
            raise AgentAuthFailed(f"the agent could not authenticate ({failure.message[:200]}){hint}")
        if failure.kind not in limits.WAITED_OUT:
            return False
        words = _WORDS[failure.kind]
        if waits >= MAX_WAITS:
            raise LimitTooLong(f"{words} did not lift after {MAX_WAITS} waits: run again later")
        now = time.time()
        seconds = self._delay(failure, waits, now)
        if seconds > self.max_wait_s:
            until = _clock(now + seconds)
            raise LimitTooLong(
                f"{words} lifts at {until}, later than max_wait ({self.max_wait_s:g}s) allows: run again then"
            )
        until = _clock(now + seconds)
        self.journal.event(
            "limit_wait",
            kind=failure.kind,
            stage=stage,
            item=item,
            seconds=round(seconds, 3),
            until=datetime.fromtimestamp(now + seconds).isoformat(timespec="seconds"),
            status=failure.status,
            message=failure.message[:300],
            wait=waits + 1,
        )
        self.say(f"{stage} {item or ''}: waiting for {words} until {until} ({seconds:.0f}s)")
        return self._sleep(seconds)

    def _delay(self, failure: FailureEvent, waits: int, now: float) -> float:
        capped = min(self.max_wait_s, self.backoff_s * 2**waits)
        backoff = random.uniform(capped / 2, capped)  # noqa: S311 (exponential backoff, jittered)
        if failure.reset_at is not None:
            left = failure.reset_at - now
            if left > 0:
                return left + random.uniform(0, 1)  # noqa: S311 (jitter, not secrets)
            # The reset already passed (the CLI retried for a while itself): once at once, then back off.
            return random.uniform(0, 1) if waits == 0 else backoff  # noqa: S311
        if failure.retry_after_s is not None and failure.retry_after_s > 0:
            return failure.retry_after_s + random.uniform(0, 0.1 * failure.retry_after_s)  # noqa: S311
        return backoff

    def _sleep(self, seconds: float) -> bool:
        """Sleep; False when ralph is stopping meanwhile; at the budget's end, raise BudgetSpent."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if self.deadline_at is not None and time.monotonic() >= self.deadline_at:
                raise BudgetSpent("the time budget is spent (while waiting for a limit)", stopped_run=True)
            if self.supervisor.stopping:
                return False
            time.sleep(min(left, 0.1))
        return True


def _clock(at: float) -> str:
    moment = datetime.fromtimestamp(at)
    same_day = moment.date() == datetime.now().date()
    return moment.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S")
