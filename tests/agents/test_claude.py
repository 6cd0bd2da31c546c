"""The Claude Code adapter (ralph/agents/claude.py): the argv and env it builds, and what it reads from
its event streams in tests/data/streams/ (all adapters' streams together: test_adapters.py)."""

from __future__ import annotations

import pytest

from ralph.agents import make_adapter
from tests.support.present import present
from tests.support.streams import replay


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
    assert present(tracker.result).subtype == "success" and tracker.reported_error
