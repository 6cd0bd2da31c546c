"""What every agent adapter shares: each reads its recorded streams as typed events with the token
totals the adapter's own tests (test_claude.py, test_codex.py, test_opencode.py, test_gemini.py,
test_command.py) assert, and the run tracker sums turns and lets a result's totals win.

The streams in tests/data/streams/ follow the event shapes the real CLIs printed on these
machines (see shared agent-clis notes); the `*-real*.jsonl` ones are real output, recorded from
the binaries against tests/support/mock_model.py. The real binaries run in the slow e2e suite."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from ralph.agents.base import RunTracker
from ralph.agents.events import (
    CostEvent,
    ErrorEvent,
    Event,
    FailureEvent,
    ResultEvent,
    SessionEvent,
    TextEvent,
    ToolEvent,
    ToolResultEvent,
    UsageEvent,
)
from tests.support.streams import STREAMS, adapter_named, replay


def token_totals(usage) -> tuple[int, int, int, int]:
    return (usage.input_tokens, usage.output_tokens, usage.cache_creation_tokens, usage.cache_read_tokens)


CHAT = {SessionEvent, TextEvent, ToolEvent, ToolResultEvent}
FAILED = {SessionEvent, ErrorEvent, ResultEvent, FailureEvent}

# Every fixture with the event types its adapter reads from it and the tracker's token totals
# (input, output, cache creation, cache read), as each adapter's own tests assert them.
FIXTURES = [
    ("claude", "claude.jsonl", CHAT | {UsageEvent, ResultEvent}, (1240, 95, 300, 1500)),
    ("command", "claude.jsonl", CHAT | {UsageEvent, ResultEvent}, (1240, 95, 300, 1500)),
    (
        "claude",
        "claude-http-400.jsonl",
        {SessionEvent, TextEvent, UsageEvent, ResultEvent, FailureEvent},
        (0, 0, 0, 0),
    ),
    ("codex", "codex.jsonl", CHAT | {UsageEvent}, (5200 - 4096, 310, 0, 4096)),
    ("codex", "codex-failed.jsonl", FAILED, (0, 0, 0, 0)),
    ("opencode", "opencode.jsonl", CHAT | {UsageEvent, CostEvent}, (1900, 70, 50, 100)),
    ("opencode", "opencode-real.jsonl", CHAT | {UsageEvent, CostEvent}, (6600, 60, 0, 600)),
    ("opencode", "opencode-real-http-400.jsonl", FAILED, (0, 0, 0, 0)),
    ("gemini", "gemini.jsonl", CHAT | {ResultEvent}, (1500, 50, 0, 800)),
    ("gemini", "gemini-real.jsonl", CHAT | {ResultEvent}, (6600, 60, 0, 600)),
    ("gemini", "gemini-real-http-400.jsonl", FAILED, (0, 0, 0, 0)),
]


@pytest.mark.parametrize(("name", "stream", "kinds", "tokens"), FIXTURES)
def test_each_adapter_reads_its_stream_as_typed_events(name, stream, kinds, tokens):
    adapter = adapter_named(name)
    lines = (STREAMS / stream).read_text().splitlines()
    events = [event for line in lines for event in adapter.parse_line(line)]
    assert all(isinstance(event, typing.get_args(Event)) for event in events)
    assert {type(event) for event in events} == kinds
    results = [event for event in events if isinstance(event, ResultEvent)]
    assert all(result.usage is None or isinstance(result.usage, UsageEvent) for result in results)
    with pytest.raises(dataclasses.FrozenInstanceError):  # the tracker keeps the result: nobody may edit it
        events[0].session_id = "changed"
    assert token_totals(replay(name, stream).usage) == tokens


def test_the_tracker_sums_the_turns_and_the_results_totals_win():
    tracker = RunTracker()
    for event in [
        SessionEvent("s-1", model="m"),
        UsageEvent(input_tokens=10, output_tokens=2, cache_read_tokens=5),
        CostEvent(0.25),
        TextEvent("hi"),
        ToolEvent("shell", "ls", exit_code=0),
        UsageEvent(input_tokens=20, output_tokens=3, cache_creation_tokens=7),
        CostEvent(0.25),
    ]:
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
