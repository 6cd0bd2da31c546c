"""The journal (build/ralph-logs/events.jsonl): one complete JSON line per begin and end."""

from __future__ import annotations

import json
import os


def test_journal_lines_are_complete_json(tmp_path):
    from ralph.loop.observe.journal import Journal, read_events

    journal = Journal(tmp_path / "events.jsonl")
    span = journal.span("agent", stage="BUILD", item="t-abc123")
    span.end(exit_code=0)
    events = read_events(tmp_path / "events.jsonl")
    assert [e["event"] for e in events] == ["agent_begin", "agent_end"]
    assert events[1]["duration_s"] >= 0 and events[1]["item"] == "t-abc123"
    assert all(json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines())


def test_an_event_with_no_room_for_it_is_dropped_and_any_other_write_error_raised(tmp_path, monkeypatch):
    """On a full disk the run ends DISK_FULL; the journal's own lines must not turn that ending into
    a crash (every later event of the ending failed the same way)."""
    import builtins
    import errno

    import pytest

    from ralph.loop.observe.journal import Journal

    journal = Journal(tmp_path / "events.jsonl")
    failing = {"errno": errno.ENOSPC}

    def no_room(*args, **kwargs):
        raise OSError(failing["errno"], os.strerror(failing["errno"]))

    monkeypatch.setattr(builtins, "open", no_room)
    journal.event("disk_full")  # dropped
    failing["errno"] = errno.EACCES
    with pytest.raises(PermissionError):
        journal.event("anything")
