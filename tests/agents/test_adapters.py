"""What every agent adapter shares: each reads its recorded streams as typed events with the token
totals the adapter's own tests (test_claude.py, test_codex.py, test_opencode.py, test_gemini.py,
test_command.py) assert; the run tracker is in test_base.py.

The streams in tests/data/streams/ follow the event shapes the real CLIs printed on these
machines (see shared agent-clis notes); the `*-real*.jsonl` ones are real output, recorded from
the binaries against tests/support/mock_model.py. The real binaries run in the slow e2e suite."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from ralph.agents import make_adapter
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
from tests.support.streams import STREAMS, adapter_named, replay, token_totals

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


@pytest.mark.parametrize(
    ("name", "option"), [("claude", "--model"), ("codex", "-m"), ("gemini", "-m"), ("opencode", "-m")]
)
def test_a_run_s_own_model_replaces_the_adapter_s_for_that_run_only(name, option):
    """One adapter for the whole loop; a stage's model (--stage-model) is passed per run."""
    adapter = make_adapter(name, None, model="default-model")
    verify = adapter.invocation("PROMPT", "/tmp/p", {}, "strong-model").argv
    build = adapter.invocation("PROMPT", "/tmp/p", {}).argv
    assert verify[verify.index(option) + 1] == "strong-model" and "default-model" not in verify
    assert build[build.index(option) + 1] == "default-model"
