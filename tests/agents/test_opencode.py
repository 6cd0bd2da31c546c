"""The opencode adapter (ralph/agents/opencode.py): the argv and env it builds, and what it reads from
its event streams in tests/data/streams/ (all adapters' streams together: test_adapters.py)."""

from __future__ import annotations

import pytest

from ralph.agents import make_adapter
from tests.support.present import present
from tests.support.streams import replay


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
    assert present(tracker.session_id).startswith("ses_") and tracker.usage.total == 0
