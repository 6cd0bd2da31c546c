"""The Gemini CLI adapter (ralph/agents/gemini.py): the argv and env it builds, and what it reads from
its event streams in tests/data/streams/ (all adapters' streams together: test_adapters.py)."""

from __future__ import annotations

from ralph.agents import make_adapter
from tests.support.present import present
from tests.support.streams import replay


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


def test_gemini_real_stream():
    tracker = replay("gemini", "gemini-real.jsonl")
    assert tracker.session_id == "e333592e-2253-493b-86c3-cbf3f6f1ca1e"
    # stats.input_tokens 7200 = 1200 + 2400 + 3600 includes stats.cached 600; stats.input is the rest
    assert (tracker.usage.input_tokens, tracker.usage.cache_read_tokens, tracker.usage.output_tokens) == (
        6600,
        600,
        60,
    )
    assert present(tracker.result).subtype == "success" and not tracker.reported_error and not tracker.errors
    assert tracker.usage.last_turn_context == 0  # Gemini CLI reports no per-turn usage


def test_gemini_real_http_400_is_an_error():
    tracker = replay("gemini", "gemini-real-http-400.jsonl")
    assert tracker.reported_error and present(tracker.result).subtype == "error"
    assert "mock failure (HTTP 400)" in tracker.errors[0] and tracker.usage.total == 0
