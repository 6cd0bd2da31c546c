"""What every adapter provides (ralph/agents/base.py): the run tracker sums the turns' usage and
costs, keeps the latest turn's context, and lets a result's totals win."""

from __future__ import annotations

from ralph.agents.base import RunTracker
from ralph.agents.events import (
    CostEvent,
    ErrorEvent,
    Event,
    ResultEvent,
    SessionEvent,
    TextEvent,
    ToolEvent,
    UsageEvent,
)
from tests.support.streams import token_totals


def test_the_tracker_sums_the_turns_and_the_results_totals_win():
    tracker = RunTracker()
    events: list[Event] = [
        SessionEvent("s-1", model="m"),
        UsageEvent(input_tokens=10, output_tokens=2, cache_read_tokens=5),
        CostEvent(0.25),
        TextEvent("hi"),
        ToolEvent("shell", "ls", exit_code=0),
        UsageEvent(input_tokens=20, output_tokens=3, cache_creation_tokens=7),
        CostEvent(0.25),
    ]
    for event in events:
        tracker.add(event)
    usage = tracker.usage
    assert token_totals(usage) == (30, 5, 7, 5)
    assert usage.last_turn_context == 27 and usage.cost_usd == 0.5  # the latest turn; costs add up
    assert tracker.session_id == "s-1" and tracker.result is None and not tracker.reported_error
    tracker.add(ErrorEvent("HTTP 400"))
    totals = UsageEvent(input_tokens=100, output_tokens=10, cache_read_tokens=50)
    tracker.add(ResultEvent(is_error=True, subtype="error", usage=totals, cost_usd=1.0, context_window=1000))
    assert token_totals(usage) == (100, 10, 0, 50)
    assert usage.last_turn_context == 27 and usage.cost_usd == 1.0 and usage.context_window == 1000
    assert tracker.errors == ["HTTP 400"] and tracker.reported_error and tracker.result.subtype == "error"
