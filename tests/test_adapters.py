"""Each agent CLI's adapter: the argv and env it builds, and what it reads from event streams.

The streams in tests/data/streams/ follow the event shapes the real CLIs printed on these
machines (see shared agent-clis notes); the real binaries run in the slow e2e suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralph.agents import make_adapter
from ralph.agents.base import RunTracker
from ralph.pressure import Pressure

STREAMS = Path(__file__).parent / "data" / "streams"


def replay(name: str, stream: str) -> RunTracker:
    adapter = make_adapter(name, None)
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
    assert tracker.result["subtype"] == "success" and tracker.reported_error


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
    invocation = make_adapter("opencode", None, model="mock/mock-model").invocation("PROMPT", "/tmp/p", {})
    assert invocation.argv == ["opencode", "run", "--format", "json", "-m", "mock/mock-model", "PROMPT"]
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


def pressure(after=False, may_compact=True):
    seen = {"warn": [], "after": []}
    p = Pressure(
        {"context_warn": 0.7, "context_compact": 0.85, "context_kill": 0.95}, 1000, may_compact, after,
        seen["warn"].append, seen["after"].append,
    )  # fmt: skip
    return p, seen


def usage_at(tokens: int):
    from ralph.agents.base import Usage

    return Usage(last_turn_context=tokens)


def test_pressure_tiers():
    p, seen = pressure()
    assert p.check(usage_at(500)) is None and seen["warn"] == []
    assert p.check(usage_at(720)) is None and seen["warn"] == [0.72]
    assert p.check(usage_at(800)) is None and seen["warn"] == [0.72]  # warned once
    assert p.check(usage_at(860)) == "context_compact"
    assert p.check(usage_at(960)) == "context_limit"
    p, _ = pressure(may_compact=False)
    assert p.check(usage_at(900)) is None and p.check(usage_at(950)) == "context_limit"


def test_pressure_after_compaction_kills_when_still_above_80_percent():
    p, seen = pressure(after=True)
    assert p.check(usage_at(810)) == "context_limit" and seen["after"] == [0.81]
    p, seen = pressure(after=True)
    assert p.check(usage_at(300)) is None and p.check(usage_at(810)) is None  # only the first turn counts


def test_the_reported_context_window_wins_over_the_default():
    from ralph.agents.base import Usage

    p, _ = pressure()
    assert p.check(Usage(last_turn_context=900, context_window=1_000_000)) is None and p.fill == 0.0009
