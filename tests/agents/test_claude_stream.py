"""Claude Code's stream-json lines read one at a time (ralph/agents/claude_stream.py), shared by the
claude and command adapters: each kind of event, the lines that are not events, and a failed
result classified. Whole recorded streams are in test_claude.py."""

from __future__ import annotations

import json

import pytest

from ralph.agents.claude_stream import parse_stream_json
from ralph.agents.events import (
    FailureEvent,
    ResultEvent,
    SessionEvent,
    TextEvent,
    ToolEvent,
    ToolResultEvent,
    UsageEvent,
)


def line(**event) -> str:
    return json.dumps(event)


@pytest.mark.parametrize(
    "text", ["", "plain text from the agent", "[1, 2]", "{not json", '"a string"', "   "]
)
def test_lines_that_are_not_event_objects_are_no_events(text):
    assert parse_stream_json(text) == []


def test_the_session_the_assistants_blocks_and_its_usage():
    assert parse_stream_json(line(type="system", subtype="init", session_id="s-1", model="m")) == [
        SessionEvent("s-1", "m")
    ]
    content = [
        {"type": "text", "text": "reading"},
        {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}},
    ]
    usage = {
        "input_tokens": 10,
        "output_tokens": 1,
        "cache_creation_input_tokens": 3,
        "cache_read_input_tokens": 5,
    }
    assert parse_stream_json(line(type="assistant", message={"content": content, "usage": usage})) == [
        TextEvent("reading"),
        ToolEvent("Bash", {"command": "ls"}),
        UsageEvent(input_tokens=10, output_tokens=1, cache_creation_tokens=3, cache_read_tokens=5),
    ]
    assert parse_stream_json(line(type="stream_event", event={})) == []  # kinds it does not read


def test_tool_results_keep_their_text_blocks_and_error_flag():
    blocks = [
        {"type": "tool_result", "content": "plain", "is_error": False},
        {
            "type": "tool_result",
            "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}],
            "is_error": True,
        },
        {"type": "text", "text": "not a result"},
    ]
    assert parse_stream_json(line(type="user", message={"content": blocks})) == [
        ToolResultEvent("plain", False),
        ToolResultEvent("a\nb", True),
    ]


def test_a_result_gives_the_runs_totals_cost_and_largest_context_window():
    event = line(
        type="result", subtype="success", is_error=False, session_id="s-1", num_turns=3, total_cost_usd=0.5,
        usage={"input_tokens": 30, "output_tokens": 7}, result="done",
        modelUsage={"haiku": {"contextWindow": 200000}, "opus": {"contextWindow": 1000000}, "x": "odd"},
    )  # fmt: skip
    (result,) = parse_stream_json(event)
    assert result == ResultEvent(
        is_error=False, subtype="success", session_id="s-1", num_turns=3, cost_usd=0.5,
        usage=UsageEvent(input_tokens=30, output_tokens=7), context_window=1000000, text="done",
    )  # fmt: skip


def test_a_failed_result_is_followed_by_its_classified_failure():
    event = line(
        type="result", subtype="success", is_error=True, api_error_status=429, result="Rate limit reached"
    )
    result, failure = parse_stream_json(event)
    assert isinstance(result, ResultEvent) and result.is_error
    assert isinstance(failure, FailureEvent) and failure.kind == "rate_limit" and failure.status == 429
