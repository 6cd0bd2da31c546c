"""plan.jsonl as a document of lines, rewritten line by line.

A command changes only the lines of the records it touches and appends new records after the last
record; every other byte (a hand editor's spacing and key order, unknown keys and record types,
trailing blank lines) is written back exactly as it was read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
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


# What a record line is at a glance: its type and its id (None when it has none), read without
# making the line's record (see Document.heads).
Head = tuple[str, str | None]


class Heads(dict[object, "Head | None"]):
    """Raw lines to their heads, each read once (by `read`) and kept: a document's heads are then
    looked up in one pass of C (map), not a call per line. A line already made is its record's
    (not kept: its record may change)."""

    def __init__(self, read: Callable[[bytes], Head | None], limit: int = 200_000):
        super().__init__()
        self.read, self.limit = read, limit

    def __missing__(self, item: object) -> Head | None:
        if type(item) is not bytes:
            return _head(item.record)  # type: ignore[attr-defined]  # a Line
        head = self.read(item)
        if len(self) >= self.limit:  # many large versions read: start over rather than grow
            self.clear()
        self[item] = head
        return head


class Kinds(dict[object, "str | None"]):
    """Raw lines to their records' types, from `heads` (as Heads: one pass of C per document)."""

    def __init__(self, heads: Heads):
        super().__init__()
        self.heads = heads

    def __missing__(self, item: object) -> str | None:
        head = self.heads[item]
        kind = head[0] if head else None
        if type(item) is bytes:
            if len(self) >= self.heads.limit:
                self.clear()
            self[item] = kind
        return kind


class Document:
    """The file's lines. A document loaded from bytes proven valid (Document.lazy) keeps most lines
    as their bytes alone and makes a line (its record decoded) only when one is asked for: with
    10,000 finished tasks beside the work, a command that touches one task decodes little. Each
    line made keeps the number it had when loaded, as every line of an eager document does."""

    def __init__(self, name: str, lines: list[Line]):
        self.name = name
        self._items: list[Line | bytes] = list(lines)  # a line made, or the bytes of one not made yet
        self._make: Callable[[bytes, int], Line] = line_of_bytes
        self._head_of, self._kind_of = _DECODED_HEADS, _DECODED_KINDS
        self._heads: list[Head | None] | None = None  # by position, for self._heads_version
        self._heads_version = -1
        self._kinds: list[str | None] | None = None  # by position, for self._kinds_version
        self._kinds_version = -1
        self.changed = False
        self.version = 0  # counts changes, so views of the lines know when to refresh
        self.touched: list[Line] = []  # lines rewritten or added since loading
        self.frozen = False  # shared between readers (ralph.store.reader): changing it is a bug

    @classmethod
    def lazy(
        cls,
        name: str,
        raws: list[bytes],
        make: Callable[[bytes, int], Line],
        kinds: Kinds,
    ) -> Document:
        """The document of these lines, each a valid record or blank: `make` makes the line of a
        raw line and its number when it is asked for, `kinds` (and its heads) says what it is."""
        doc = cls(name, [])
        doc._items = list(raws)
        doc._make, doc._head_of, doc._kind_of = make, kinds.heads, kinds
        return doc

    @property
    def lines(self) -> list[Line]:
        """Every line, made (a pass over the whole file: readers of a few records use heads())."""
        items = self._items
        for index, item in enumerate(items):
            if type(item) is bytes:
                items[index] = self._make(item, index + 1)
        return items  # type: ignore[return-value]  # every item is a line now

    def line(self, index: int) -> Line:
        """The line at `index` (from 0), made if it was not."""
        item = self._items[index]
        if type(item) is bytes:
            made = self._make(item, index + 1)
            self._items[index] = made  # readers on threads may both make it: either copy will do
            return made
        return item  # type: ignore[return-value]  # not bytes: a line

    def record_line(self, index: int) -> RecordLine:
        """The line at `index`, one with a head (a record), made if it was not."""
        line = self.line(index)
        assert isinstance(line, RecordLine)
        return line

    def number(self, index: int) -> int:
        """The number of the line at `index` as loaded (0 for a line added since)."""
        item = self._items[index]
        return index + 1 if type(item) is bytes else item.number  # type: ignore[union-attr]

    def position(self, line: Line) -> int | None:
        """Where `line` is now (from 1), or None when it is no longer in the document."""
        return next((index + 1 for index, item in enumerate(self._items) if item is line), None)

    def present(self, lines: list[Line]) -> list[Line]:
        """Those of `lines` still in the document, each once, in the order given."""
        made = {id(item) for item in self._items if type(item) is not bytes}
        return list({id(line): line for line in lines if id(line) in made}.values())

    def raws(self) -> list[bytes]:
        """Every line's bytes, in order."""
        return [item if type(item) is bytes else item.raw for item in self._items]  # type: ignore[union-attr]

    def heads(self) -> list[Head | None]:
        """Each line's head by position: its record's type and id, None for a line with no record."""
        if self._heads_version != self.version or self._heads is None:
            heads = list(map(self._head_of.__getitem__, self._items))
            self._heads, self._heads_version = heads, self.version  # built aside: threads may share it
        return self._heads

    def kinds(self) -> list[str | None]:
        """Each line's record type by position, None for a line with no record."""
        if self._kinds_version != self.version or self._kinds is None:
            kinds = list(map(self._kind_of.__getitem__, self._items))
            self._kinds, self._kinds_version = kinds, self.version
        return self._kinds

    def positions(self, kind: str) -> list[int]:
        """Where the records of type `kind` are (from 0), in file order: found in C (list.index),
        so that the few open tasks among 10,000 finished ones cost no pass of Python."""
        kinds = self.kinds()
        many = kinds.count(kind)
        if many > 64:  # one pass then, not a call of index per record
            return [index for index, each in enumerate(kinds) if each == kind]
        found, index = [], -1
        for _ in range(many):
            index = kinds.index(kind, index + 1)
            found.append(index)
        return found

    def lines_of(self, *kinds: str) -> list[RecordLine]:
        """The lines of records of these types, in file order."""
        at = sorted(index for kind in kinds for index in self.positions(kind))
        return [self.record_line(index) for index in at]

    def records(self) -> list[RecordLine]:
        return [line for line in self.lines if isinstance(line, RecordLine)]

    def to_bytes(self) -> bytes:
        return b"".join(self.raws())

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
        previous = self._raw_at(index - 1) if index else b"\n"
        if not previous.endswith(b"\n"):
            self.line(index - 1).raw += b"\r\n" if b"\r\n" in self._raw_at(0) else b"\n"
            previous = self._raw_at(index - 1)
        line = RecordLine(_ending_like(serialize(record), previous), record, 0)
        self._make_from(index)  # the lines after it move: each keeps the number it was loaded with
        self._items.insert(index, line)
        self.touched.append(line)
        self._changed()
        return line

    def remove(self, line: Line) -> None:
        self._changeable()
        index = next(index for index, item in enumerate(self._items) if item is line)
        self._make_from(index + 1)
        del self._items[index]
        self._changed()

    def freeze(self) -> None:
        """From now on this document is only read: it may be handed to many readers."""
        self.frozen = True

    def _raw_at(self, index: int) -> bytes:
        item = self._items[index]
        return item if type(item) is bytes else item.raw  # type: ignore[union-attr]

    def _make_from(self, start: int) -> None:
        for index in range(start, len(self._items)):
            self.line(index)

    def _changeable(self) -> None:
        if self.frozen:
            raise TypeError("a plan read to be shared was changed: change the plan in a transaction")

    def _changed(self) -> None:
        self.changed = True
        self.version += 1

    def _after_last_record(self) -> int:
        # New records go before trailing blank lines, so those stay at the end.
        for index in range(len(self._items) - 1, -1, -1):
            item = self._items[index]
            if type(item) is bytes:
                if item.strip():
                    return index + 1
            elif item.record is not None or item.raw.strip():  # type: ignore[union-attr]
                return index + 1
        return 0


def line_of_bytes(raw: bytes, number: int) -> Line:
    """The line of `raw`, known to be a valid record or blank (Document.lazy's default maker)."""
    stripped = raw.strip()
    return line_of(raw, json.loads(stripped) if stripped else None, number)


def _head(record: Record | None) -> Head | None:
    return None if record is None else (record["t"], record.get("id"))


def _decoded_head(raw: bytes) -> Head | None:
    stripped = raw.strip()
    return _head(json.loads(stripped)) if stripped else None


_DECODED_HEADS = Heads(_decoded_head)
_DECODED_KINDS = Kinds(_DECODED_HEADS)


def _ending_like(raw: bytes, model: bytes) -> bytes:
    """`raw` (ending in \\n) with the line ending `model` has: CRLF lines stay CRLF."""
    return raw[:-1] + b"\r\n" if model.endswith(b"\r\n") else raw
