"""The journal (build/ralph-logs/events.jsonl): one complete JSON line per begin and end."""

from __future__ import annotations

import json


def test_journal_lines_are_complete_json(tmp_path):
    from ralph.loop.journal import Journal, read_events

    journal = Journal(tmp_path / "events.jsonl")
    span = journal.span("agent", stage="BUILD", item="t-abc123")
    span.end(exit_code=0)
    events = read_events(tmp_path / "events.jsonl")
    assert [e["event"] for e in events] == ["agent_begin", "agent_end"]
    assert events[1]["duration_s"] >= 0 and events[1]["item"] == "t-abc123"
    assert all(json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines())
