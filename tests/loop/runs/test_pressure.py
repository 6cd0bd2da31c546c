"""Context pressure from the token counts an agent reports: warn once, compact, kill, and right
after a compaction a context still above 80% is a kill."""

from __future__ import annotations

from ralph.loop.runs.pressure import Pressure
from ralph.usecases.settings import Settings


def pressure(after=False):
    seen: dict[str, list[float]] = {"warn": [], "after": []}
    thresholds = Settings(context_warn=0.7, context_compact=0.85, context_kill=0.95)
    p = Pressure(thresholds, 1000, after, seen["warn"].append, seen["after"].append)
    return p, seen


def usage_at(tokens: int):
    from ralph.agents.base import Usage

    return Usage(last_turn_context=tokens)


def test_pressure_tiers():
    p, seen = pressure()
    assert p.check(usage_at(500)) is None and seen["warn"] == []
    assert p.check(usage_at(720)) is None and seen["warn"] == [0.72]
    assert p.check(usage_at(800)) is None and seen["warn"] == [0.72]  # warned once
    assert p.check(usage_at(860)) == "context_compact"
    assert p.check(usage_at(960)) == "context_limit"


def test_pressure_after_compaction_kills_when_still_above_80_percent():
    p, seen = pressure(after=True)
    assert p.check(usage_at(810)) == "context_limit" and seen["after"] == [0.81]
    p, seen = pressure(after=True)
    assert p.check(usage_at(300)) is None and p.check(usage_at(810)) is None  # only the first turn counts


def test_the_reported_context_window_wins_over_the_default():
    from ralph.agents.base import Usage

    p, _ = pressure()
    assert p.check(Usage(last_turn_context=900, context_window=1_000_000)) is None and p.fill == 0.0009
