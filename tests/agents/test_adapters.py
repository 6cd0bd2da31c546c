"""Each agent CLI's adapter: the argv and env it builds, and what it reads from event streams.

The streams in tests/data/streams/ follow the event shapes the real CLIs printed on these
machines (see shared agent-clis notes); the `*-real*.jsonl` ones are real output, recorded from
the binaries against tests/support/mock_model.py. The real binaries run in the slow e2e suite."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from ralph.agents import make_adapter
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

STREAMS = Path(__file__).parents[1] / "data" / "streams"


def adapter_named(name: str):
    return make_adapter(name, ["agent"] if name == "command" else None)  # `command` needs a program


def replay(name: str, stream: str) -> RunTracker:
    adapter = adapter_named(name)
    tracker = RunTracker()
    for line in (STREAMS / stream).read_text().splitlines():
        for event in adapter.parse_line(line):
            tracker.add(event)
    return tracker


def test_claude_argv_env_and_stream():
    invocation = make_adapter("claude", None, model="sonnet", extra_args="--max-turns 40").invocation(
        "Stage: BUILD", "/tmp/p.md", {"KEEP": "me"}
    )
    assert invocation.argv[:3] == ["claude", "-p", "Stage: BUILD"]
    assert "--dangerously-skip-permissions" in invocation.argv and "stream-json" in invocation.argv
    assert invocation.argv[-4:] == ["--model", "sonnet", "--max-turns", "40"]
    assert invocation.stdin is None and invocation.env["KEEP"] == "me"
    tracker = replay("claude", "claude.jsonl")
    assert tracker.session_id == "0b6f-claude"
    assert (tracker.usage.input_tokens, tracker.usage.output_tokens) == (1240, 95)
    assert (tracker.usage.cache_creation_tokens, tracker.usage.cache_read_tokens) == (300, 1500)
    assert tracker.usage.last_turn_context == 40 + 1500  # the latest turn, not the sum
    assert tracker.usage.context_window == 200000 and tracker.usage.cost_usd == pytest.approx(0.0123)
    assert not tracker.reported_error


def test_claude_http_error_is_an_error_even_though_subtype_says_success():
    tracker = replay("claude", "claude-http-400.jsonl")
    assert tracker.result.subtype == "success" and tracker.reported_error


def test_codex_argv_and_stream():
    invocation = make_adapter("codex", "/opt/codex/bin/codex", model="gpt-5").invocation(
        "PROMPT", "/tmp/p", {}
    )
    assert invocation.argv == [
        "/opt/codex/bin/codex", "exec", "--json", "--dangerously-bypass-approvals-and-sandbox",
        "-m", "gpt-5", "PROMPT",
    ]  # fmt: skip
    tracker = replay("codex", "codex.jsonl")
    assert tracker.session_id == "019a-codex-thread"
    assert tracker.usage.input_tokens == 5200 - 4096 and tracker.usage.cache_read_tokens == 4096
    assert tracker.usage.output_tokens == 310
    assert not tracker.errors and not tracker.reported_error  # the model-metadata error item is harmless


def test_codex_failed_turn_is_an_error():
    tracker = replay("codex", "codex-failed.jsonl")
    assert tracker.reported_error and "400" in tracker.errors[0]


def test_opencode_argv_and_stream():
    adapter = make_adapter("opencode", None, model="mock/mock-model")
    invocation = adapter.invocation("PROMPT", "/tmp/p", {})
    assert invocation.argv == [
        "opencode", "run", "--format", "json", "--auto", "-m", "mock/mock-model", "PROMPT",
    ]  # fmt: skip
    assert invocation.env["OPENCODE_DISABLE_AUTOUPDATE"] == "1"
    tracker = replay("opencode", "opencode.jsonl")
    assert tracker.session_id == "ses_oc1"
    assert tracker.usage.input_tokens == 1900 and tracker.usage.output_tokens == 70
    assert tracker.usage.cache_read_tokens == 100 and tracker.usage.cache_creation_tokens == 50
    assert tracker.usage.cost_usd == pytest.approx(0.003)
    assert tracker.usage.last_turn_context == 1000


def test_gemini_argv_and_stream():
    invocation = make_adapter("gemini", None, model="gemini-2.5-flash").invocation("PROMPT", "/tmp/p", {})
    assert invocation.argv[:3] == ["gemini", "-p", "PROMPT"] and "--yolo" in invocation.argv
    tracker = replay("gemini", "gemini.jsonl")
    assert tracker.session_id == "gem-session-1"
    assert (tracker.usage.input_tokens, tracker.usage.cache_read_tokens, tracker.usage.output_tokens) == (
        1500,
        800,
        50,
    )
    assert not tracker.reported_error


# Recorded from the real binaries (opencode 1.18.33, Gemini CLI 0.61.0), each run once by hand on a
# BUILD prompt against tests/support/mock_model.py with Usage(input_tokens_schedule=[1200, 2400, 3600],
# cache_read_tokens=200, output_tokens=20): the mock answered the agent's requests with input 1200,
# 2400 and 3600 (200 of each cached) and 20 output tokens each; only absolute temp paths are replaced.


def test_opencode_real_stream():
    tracker = replay("opencode", "opencode-real.jsonl")
    assert tracker.session_id == "ses_dff240855ffe6fILE2ruXJEKMD"
    # opencode's `input` excludes the cached tokens: (1200 + 2400 + 3600) - 3 * 200. Its session-title
    # request (another 1200/200/20 from the mock) is not reported in the stream.
    assert tracker.usage.input_tokens == 6600 and tracker.usage.cache_read_tokens == 600
    assert tracker.usage.output_tokens == 60 and tracker.usage.cache_creation_tokens == 0
    assert tracker.usage.last_turn_context == 3600  # the last request: 3400 + 200 cached
    assert tracker.usage.cost_usd == 0  # no price known for the mock model
    assert tracker.result is None and not tracker.errors and not tracker.reported_error


def test_opencode_real_http_400_is_an_error():
    tracker = replay("opencode", "opencode-real-http-400.jsonl")
    assert tracker.reported_error and tracker.errors == ["mock failure (HTTP 400)"]
    assert tracker.session_id.startswith("ses_") and tracker.usage.total == 0


def test_gemini_real_stream():
    tracker = replay("gemini", "gemini-real.jsonl")
    assert tracker.session_id == "e333592e-2253-493b-86c3-cbf3f6f1ca1e"
    # stats.input_tokens 7200 = 1200 + 2400 + 3600 includes stats.cached 600; stats.input is the rest
    assert (tracker.usage.input_tokens, tracker.usage.cache_read_tokens, tracker.usage.output_tokens) == (
        6600,
        600,
        60,
    )
    assert tracker.result.subtype == "success" and not tracker.reported_error and not tracker.errors
    assert tracker.usage.last_turn_context == 0  # Gemini CLI reports no per-turn usage


def test_gemini_real_http_400_is_an_error():
    tracker = replay("gemini", "gemini-real-http-400.jsonl")
    assert tracker.reported_error and tracker.result.subtype == "error"
    assert "mock failure (HTTP 400)" in tracker.errors[0] and tracker.usage.total == 0


def token_totals(usage) -> tuple[int, int, int, int]:
    return (usage.input_tokens, usage.output_tokens, usage.cache_creation_tokens, usage.cache_read_tokens)


CHAT = {SessionEvent, TextEvent, ToolEvent, ToolResultEvent}
FAILED = {SessionEvent, ErrorEvent, ResultEvent, FailureEvent}

# Every fixture with the event types its adapter reads from it and the tracker's token totals
# (input, output, cache creation, cache read), as the tests above assert them.
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
