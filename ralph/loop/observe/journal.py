"""build/ralph-logs/events.jsonl: one line per begin/end of every iteration, stage, agent run
and gate run, flushed as it happens so `tail -f` follows the loop."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ralph.errors import disk_full
from ralph.secrets import redact_fields
from ralph.text import json_text

# One line of events.jsonl: its "ts" and "event", then the event's own fields (JSON values, read
# back by name: watch, status, hooks).
JournalRecord = dict[str, Any]


class Journal:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()  # VERIFY writes from several threads
        self.listener: Callable[[JournalRecord], None] | None = None  # told of each event written (hooks)
        # The log folder as opened at the start (ralph.loop.observe.log_folder): written through it, so
        # a link an agent put in its place is never followed.
        self.folder_fd: int | None = None
        self._agent_runs_s: list[float] = []  # how long each agent run of this run took

    def agent_ran(self, seconds: float) -> None:
        self._agent_runs_s.append(seconds)

    def agent_pace_s(self) -> float | None:
        """The median length of this run's agent runs so far; None before the first ended."""
        runs = sorted(self._agent_runs_s)
        return runs[len(runs) // 2] if runs else None

    def event(self, event: str, **fields: object) -> JournalRecord:
        record: JournalRecord = {
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "event": event,
        }
        # Redacted here, once for the journal and the hooks it tells: the fields carry agents' and
        # gates' words (reasons, summaries, problems).
        record.update(redact_fields({key: value for key, value in fields.items() if value is not None}))
        line = json_text(record) + "\n"
        # Written, not fsynced: what a killed ralph wrote is in the page cache and survives it;
        # only a power cut loses the last lines of a log kept for people and `ralph status`,
        # and an fsync an event cost some 35 ms a commit (ten events each).
        try:
            with self._lock:
                self._append(line.encode("utf-8"))
        except OSError as exc:  # no room for it: the run ends DISK_FULL, saying so on the console
            if not disk_full(exc):
                raise
        if self.listener is not None:
            self.listener(record)
        return record

    def _append(self, data: bytes) -> None:
        if self.folder_fd is None:
            with open(self.path, "ab") as handle:
                handle.write(data)
            return
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
        fd = os.open(self.path.name, flags, 0o644, dir_fd=self.folder_fd)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def span(self, kind: str, **fields: object) -> Span:
        return Span(self, kind, fields)


class Span:
    """A begin event now and an end event (with its duration) when finished."""

    def __init__(self, journal: Journal, kind: str, fields: dict[str, object]):
        self.journal, self.kind, self.fields = journal, kind, fields
        self.started = time.monotonic()
        journal.event(f"{kind}_begin", **fields)

    def end(self, **fields: object) -> float:
        duration = round(time.monotonic() - self.started, 3)
        if self.kind == "agent":
            self.journal.agent_ran(duration)
        self.journal.event(f"{self.kind}_end", duration_s=duration, **self.fields, **fields)
        return duration


def read_events(path: Path) -> list[JournalRecord]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
