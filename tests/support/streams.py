"""The agent CLIs' event streams recorded in tests/data/streams/, replayed through an adapter."""

from __future__ import annotations

from pathlib import Path

from ralph.agents import make_adapter
from ralph.agents.base import RunTracker

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


def token_totals(usage) -> tuple[int, int, int, int]:
    return (usage.input_tokens, usage.output_tokens, usage.cache_creation_tokens, usage.cache_read_tokens)
