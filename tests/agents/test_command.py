"""The generic `command` adapter: its argv split as a shell would, never run by one, and the
Claude Code stream-json lines of its output read for usage."""

from __future__ import annotations

import pytest

from ralph.agents import make_adapter
from ralph.agents.base import RunTracker
from ralph.errors import InvalidInput


def test_command_adapter_splits_like_a_shell_and_never_uses_one():
    adapter = make_adapter("command", "python 'my agent.py' --flag=$HOME;rm")
    invocation = adapter.invocation("the prompt", "/tmp/p.md", {"A": "1"})
    assert invocation.argv == ["python", "my agent.py", "--flag=$HOME;rm"]
    assert invocation.stdin == b"the prompt"
    with pytest.raises(InvalidInput, match="unknown agent"):
        make_adapter("nonesuch", None)


def test_stream_json_usage_is_read_and_the_result_totals_win():
    adapter = make_adapter("command", ["x"])
    tracker = RunTracker()
    lines = [
        '{"type": "system", "subtype": "init", "session_id": "s-1"}',
        '{"type": "assistant", "message": {"content": [{"type": "text", "text": "hi"}],'
        ' "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 1}}}',
        "not json at all",
        '{"type": "result", "subtype": "success", "is_error": false, "total_cost_usd": 0.5,'
        ' "usage": {"input_tokens": 30, "output_tokens": 7}, "modelUsage": {"m": {"contextWindow": 200000}}}',
    ]
    for line in lines:
        for event in adapter.parse_line(line):
            tracker.add(event)
    assert tracker.session_id == "s-1"
    assert tracker.usage.input_tokens == 30 and tracker.usage.output_tokens == 7
    assert tracker.usage.last_turn_context == 15 and tracker.usage.context_window == 200000
    assert tracker.usage.cost_usd == 0.5 and not tracker.reported_error
