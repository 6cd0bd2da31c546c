"""This runner's wall clock, which $RALPH_CLOCK_SKEW_S moves (to try runners whose clocks disagree):
the times ralph writes into the plan (claimed_at) and into the commits it makes are read here, so
a skewed runner stamps both exactly as a machine with a wrong clock would."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

CLOCK_SKEW_ENV = "RALPH_CLOCK_SKEW_S"  # seconds added to this runner's clock


def skew_s() -> float:
    """The seconds $RALPH_CLOCK_SKEW_S adds to this runner's clock (0 when unset or not a number)."""
    try:
        return float(os.environ.get(CLOCK_SKEW_ENV) or 0)
    except ValueError:
        return 0.0


def now_s() -> float:
    """This runner's clock in seconds since the epoch."""
    return time.time() + skew_s()


def now() -> str:
    """This runner's clock (UTC, ISO 8601, whole seconds)."""
    return datetime.fromtimestamp(now_s(), UTC).isoformat(timespec="seconds")
