"""The Codex adapter (ralph/agents/codex.py): the argv and env it builds, and what it reads from
its event streams in tests/data/streams/ (all adapters' streams together: test_adapters.py)."""

from __future__ import annotations

from ralph.agents import make_adapter
from tests.support.streams import replay


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
