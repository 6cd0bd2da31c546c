"""This runner's clock, and $RALPH_CLOCK_SKEW_S moving it (to try runners whose clocks disagree)."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from ralph import clock


@pytest.mark.parametrize(
    ("setting", "skew"), [("7200", 7200.0), ("-7200", -7200.0), ("", 0.0), ("soon", 0.0)]
)
def test_the_skew_moves_the_clock_by_its_seconds_and_a_bad_one_moves_nothing(monkeypatch, setting, skew):
    monkeypatch.setenv(clock.CLOCK_SKEW_ENV, setting)
    assert clock.skew_s() == skew
    assert clock.now_s() == pytest.approx(time.time() + skew, abs=5)
    stamp = datetime.fromisoformat(clock.now())
    assert stamp.utcoffset() is not None and stamp.microsecond == 0
    assert stamp.timestamp() == pytest.approx(time.time() + skew, abs=5)
