"""Issue 14: each adapter classifies a failed run from its structured output (rate limit, usage
limit with its reset time, overloaded / 5xx, authentication, other)."""

from __future__ import annotations

import json
import time
from datetime import datetime

import pytest

from ralph.agents import make_adapter
from ralph.agents.base import RunTracker
from ralph.agents.limits import classify
from tests.support.present import present

NOW = datetime(2026, 11, 23, 13, 0).timestamp()


@pytest.mark.parametrize(
    ("status", "text", "kind", "retry_after_s"),
    [
        (
            429,
            'API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}',
            "rate_limit",
            None,
        ),
        (
            None,
            "unexpected status 429 Too Many Requests: Rate limit reached. Please try again in 20s.",
            "rate_limit",
            20,
        ),
        (
            None,
            '{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"retryDelay":"3s"}]}}',
            "rate_limit",
            3,
        ),
        (None, "You've hit your usage limit. Try again in 2 hours 5 minutes.", "usage_limit", 7500),
        (
            529,
            'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
            "overloaded",
            None,
        ),
        (None, "unexpected status 503 Service Unavailable", "overloaded", None),
        (401, "Invalid API key · Please run /login", "auth", None),
        (None, "unexpected status 401 Unauthorized", "auth", None),
        (400, "API Error: 400", "other", None),
        (None, "error_max_turns", "other", None),
    ],
)
def test_classify(status, text, kind, retry_after_s):
    failure = classify(status, text, now=NOW)
    assert (failure.kind, failure.retry_after_s) == (kind, retry_after_s)


def test_a_usage_limit_gives_its_reset_time_as_an_epoch_or_a_clock_time():
    assert classify(None, "Claude AI usage limit reached|1795957200", now=NOW).reset_at == 1795957200
    at_five = classify(429, "429 rate_limit_error: 5-hour limit reached, resets at 5pm", now=NOW)
    assert at_five.kind == "rate_limit"
    assert datetime.fromtimestamp(present(at_five.reset_at)) == datetime(2026, 11, 23, 17, 0)
    tomorrow = classify(None, "usage limit reached, resets 9am", now=NOW).reset_at
    assert datetime.fromtimestamp(present(tomorrow)) == datetime(2026, 11, 24, 9, 0)


def replay(agent: str, *events: dict) -> RunTracker:
    adapter, tracker = make_adapter(agent, None), RunTracker()
    for event in events:
        for parsed in adapter.parse_line(json.dumps(event)):
            tracker.add(parsed)
    return tracker


def test_claude_reads_the_status_and_reset_from_its_result():
    limited = {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "api_error_status": 429,
        "result": f"Claude AI usage limit reached|{int(time.time()) + 3600}",
    }
    failure = present(replay("claude", limited).failure)
    assert failure.kind == "usage_limit" and failure.status == 429 and present(failure.reset_at) > time.time()
    ok = {"type": "result", "subtype": "success", "is_error": False, "result": "rate limit docs written"}
    assert replay("claude", ok).failure is None  # success is never classified from words


def test_codex_classifies_a_failed_turn():
    failed = {"type": "turn.failed", "error": {"message": "unexpected status 429 Too Many Requests"}}
    assert (
        present(replay("codex", {"type": "error", "message": "Reconnecting... 1/5"}, failed).failure).kind
        == "rate_limit"
    )


def test_opencode_reads_the_status_code_and_retry_after_header():
    error = {
        "type": "error",
        "error": {
            "name": "APIError",
            "data": {"message": "Overloaded", "statusCode": 503, "responseHeaders": {"Retry-After": "7"}},
        },
    }
    failure = present(replay("opencode", error).failure)
    assert (failure.kind, failure.status, failure.retry_after_s) == ("overloaded", 503, 7)


def test_gemini_classifies_an_error_result():
    message = '[API Error: {"error":{"code":401,"message":"API key not valid","status":"UNAUTHENTICATED"}}]'
    result = {"type": "result", "status": "error", "error": {"type": "unknown", "message": message}}
    assert present(replay("gemini", result).failure).kind == "auth"


@pytest.mark.parametrize(
    ("agent", "stream"),
    [
        ("claude", "claude-http-400.jsonl"),
        ("codex", "codex-failed.jsonl"),
        ("opencode", "opencode-real-http-400.jsonl"),
        ("gemini", "gemini-real-http-400.jsonl"),
    ],
)
def test_the_recorded_http_400_streams_are_other_failures_not_limits(agent, stream):
    from pathlib import Path

    lines = (Path(__file__).parents[1] / "data" / "streams" / stream).read_text().splitlines()
    failure = present(replay(agent, *(json.loads(line) for line in lines if line.strip())).failure)
    assert failure.kind == "other" and failure.status == 400
