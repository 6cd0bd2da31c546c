"""plan.jsonl as a document of lines, rewritten line by line.

A command changes only the lines of the records it touches and appends new records after the last
record; every other byte (a hand editor's spacing and key order, unknown keys and record types,
trailing blank lines) is written back exactly as it was read.
"""

from __future__ import annotations

import json
from typing import Any

# One plan record as read from its line: JSON keys to values.
Record = dict[str, Any]

_ENCODER = json.JSONEncoder(ensure_ascii=False)  # json.dumps(..., ensure_ascii=False) builds one per call


class Line:
    """One line of the file: its bytes as read (with the newline), and no record (a blank line, or
    one that is not a valid record); a line that holds one is a RecordLine."""

    __slots__ = ("raw", "record", "number")

    def __init__(self, raw: bytes, number: int):
        self.raw = raw
        self.record: Record | None = None
        self.number = number


class RecordLine(Line):
    """A line and the record it holds, for as long as it lives (no line loses or gains one)."""

    __slots__ = ()
    record: Record

    def __init__(self, raw: bytes, record: Record, number: int):
        self.raw = raw
        self.record = record
        self.number = number


def line_of(raw: bytes, record: Record | None, number: int) -> Line:
    return RecordLine(raw, record, number) if record is not None else Line(raw, number)


def serialize(record: Record) -> bytes:
    text = _ENCODER.encode(record)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate ("\ud800" in the JSON read): keep it escaped
        return json.dumps(record).encode("utf-8") + b"\n"


class Document:
    def __init__(self, name: str, lines: list[Line]):
        self.name = name
        self.lines = lines
        self.changed = False
        self.version = 0  # counts changes, so views of the lines know when to refresh
        self.touched: list[Line] = []  # lines rewritten or added since loading
        self.frozen = False  # shared between readers (ralph.store.reader): changing it is a bug

    def records(self) -> list[RecordLine]:
        return [line for line in self.lines if isinstance(line, RecordLine)]

    def to_bytes(self) -> bytes:
        return b"".join(line.raw for line in self.lines)

    def rewrite(self, line: RecordLine) -> None:
        """Serialize line.record again: call after changing the record in place. The line keeps
        its ending (a CRLF file stays CRLF)."""
        self._changeable()
        line.raw = _ending_like(serialize(line.record), line.raw)
        self.touched.append(line)
        self._changed()

    def append(self, record: Record) -> RecordLine:
        self._changeable()
        index = self._after_last_record()
        previous = self.lines[index - 1].raw if index else b"\n"
        if not previous.endswith(b"\n"):
            self.lines[index - 1].raw += b"\r\n" if b"\r\n" in self.lines[0].raw else b"\n"
            previous = self.lines[index - 1].raw
        line = RecordLine(_ending_like(serialize(record), previous), record, 0)
        self.lines.insert(index, line)
        self.touched.append(line)
        self._changed()
        return line

    def remove(self, line: Line) -> None:
        self._changeable()
        self.lines.remove(line)
        self._changed()

    def freeze(self) -> None:
        """From now on this document is only read: it may be handed to many readers."""
        self.frozen = True

    def _changeable(self) -> None:
        if self.frozen:
            raise TypeError("a plan read to be shared was changed: change the plan in a transaction")

    def _changed(self) -> None:
        self.changed = True
        self.version += 1

    def _after_last_record(self) -> int:
        # New records go before trailing blank lines, so those stay at the end.
        for index in range(len(self.lines) - 1, -1, -1):
            if self.lines[index].record is not None or self.lines[index].raw.strip():
                return index + 1
        return 0


def _ending_like(raw: bytes, model: bytes) -> bytes:
    """`raw` (ending in \\n) with the line ending `model` has: CRLF lines stay CRLF."""
    return raw[:-1] + b"\r\n" if model.endswith(b"\r\n") else raw
