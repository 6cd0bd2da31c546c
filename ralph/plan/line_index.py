"""What a plan's raw lines say, found once per line's bytes and kept: their heads (type and id),
their types, a field's value, and for a document's bytes the places of each type and the accepted
ids (a Skeleton). Lines in ralph's own spelling are read off how they start, in passes of C; any
other line is decoded. ralph.plan.document reads a document's lines through these."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from itertools import compress, repeat
from operator import not_
from typing import Any

# One plan record as read from its line: JSON keys to values.
Record = dict[str, Any]

# What a record line is at a glance: its type and its id (None when it has none), read without
# making the line's record (see Document.heads).
Head = tuple[str, str | None]


def split_lines(data: bytes) -> list[bytes]:
    """The file's lines with their endings. Only \n ends a line: a raw \r inside one (bytes'
    splitlines would cut there) stays part of it and is reported on its own line number."""
    if b"\r" not in data:  # then splitlines cuts where this does, with no line made in Python
        return data.splitlines(keepends=True)
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


class Heads(dict[object, "Head | None"]):
    """Raw lines to their heads, each read once (by `read`) and kept: a document's heads are then
    looked up in one pass of C (map), not a call per line. A line already made is its record's
    (not kept: its record may change)."""

    def __init__(self, read: Callable[[bytes], Head | None], limit: int = 200_000):
        super().__init__()
        self.read, self.limit = read, limit

    def __missing__(self, item: object) -> Head | None:
        if type(item) is not bytes:
            return head_of(item.record)  # type: ignore[attr-defined]  # a Line
        head = self.read(item)
        if len(self) >= self.limit:  # many large versions read: start over rather than grow
            self.clear()
        self[item] = head
        return head


class Field(dict[bytes, Any]):
    """Raw lines to the value of one field of their records (None when absent), each read once:
    a string value off ralph's own spelling (`"spec": "specs/x.md"`), any other decoded by `decode`."""

    def __init__(self, key: str, decode: Callable[[bytes], Record | None], limit: int):
        super().__init__()
        self.key, self.decode, self.limit = key, decode, limit
        self.spelled, self.quoted = f'"{key}": "'.encode(), f'"{key}"'.encode()

    def __missing__(self, raw: bytes) -> Any:
        value = _spelled_value(raw, self.spelled, self.quoted)
        if value is _UNREAD:
            record = self.decode(raw)
            value = None if record is None else record.get(self.key)
        if len(self) >= self.limit:
            self.clear()
        self[raw] = value
        return value


_UNREAD = object()


def _spelled_value(raw: bytes, spelled: bytes, quoted: bytes) -> Any:
    """A string field's value as ralph spells it, None when the key is not in the line, or _UNREAD.
    Without a backslash no string holds a quote, so one `"key"` in the line is that key, and in a
    line with one `{` it is the record's own (not a key of an object inside it)."""
    if b"\\" in raw:
        return _UNREAD
    count = raw.count(quoted)
    if count == 0:
        return None
    start = raw.find(spelled)
    if count != 1 or start < 0 or raw.count(b"{") != 1:
        return _UNREAD
    start += len(spelled)
    return raw[start : raw.index(b'"', start)].decode("utf-8")


class Kinds(dict[object, "str | None"]):
    """Raw lines to their records' types, from `heads` (as Heads: one pass of C per document), and
    to the values of other fields (`field`)."""

    def __init__(
        self,
        heads: Heads,
        decode: Callable[[bytes], Record | None],
        scan: Callable[[list[bytes]], tuple[list[bytes], list[Head], list[str]]] | None = None,
    ):
        super().__init__()
        self.heads, self.decode, self.scan = heads, decode, scan
        self.fields: dict[str, Field] = {}

    def fill(self, raws: list[bytes]) -> None:
        """Read the heads of those of `raws` not read yet at once (`scan`, in passes of C): a
        command that reads a plan of 10,000 lines once pays no call of Python per line. The lines
        `scan` leaves out are read one by one when asked for."""
        if self.scan is None or len(self) >= len(raws):  # most are known: those few one by one
            return
        if len(self) + len(raws) > self.heads.limit:
            self.clear()
            self.heads.clear()
        read, heads, kinds = self.scan(list(set(raws).difference(self)) if self else raws)  # none known: all
        self.heads.update(zip(read, heads, strict=True))
        self.update(zip(read, kinds, strict=True))

    def seed(self, raws: list[bytes], heads: list[Head | None], kinds: list[str | None]) -> None:
        """The heads and types of these lines, known already (a parse decoded them)."""
        if len(self) + len(raws) > self.heads.limit:
            self.clear()
            self.heads.clear()
        self.heads.update(zip(raws, heads, strict=True))
        self.update(zip(raws, kinds, strict=True))

    def field(self, key: str) -> Field:
        found = self.fields.get(key)
        if found is None:
            found = self.fields[key] = Field(key, self.decode, self.heads.limit)
        return found

    def __missing__(self, item: object) -> str | None:
        head = self.heads[item]
        kind = head[0] if head else None
        if type(item) is bytes:
            if len(self) >= self.heads.limit:
                self.clear()
            self[item] = kind
        return kind


class Skeleton:
    """What is known of a plan's bytes by position, for each document loaded from them: the lines'
    bytes (each document changes a copy of its own), and once found, their heads, their types, the
    places of each type and the accepted ids (shared between documents: never changed in place)."""

    __slots__ = ("raws", "heads", "kinds", "positions", "accepted", "spelled")

    def __init__(self, raws: list[bytes]):
        self.raws = raws
        self.heads: list[Head | None] | None = None
        self.kinds: list[str | None] | None = None
        self.positions: dict[str, list[int]] = {}
        self.accepted: frozenset[str] | None = None
        self.spelled: bool | None = None  # every record line in ralph's own spelling (in_own_spelling)


TYPE_FIRST = b'{"t": "'
ACCEPT_ID = b'{"t": "accept", "id": "'
ACCEPT_IDS = re.compile(rb'\{"t": "accept", "id": "([^"]*)"')


def in_own_spelling(raws: list[bytes]) -> bool:
    """Whether each line that is not blank starts with its record's type and holds no other "t"
    (in the lines of a valid plan: no backslash, so no string holds a quote, and one "t" per line
    starting with one): a line's type is then the start it has. Told by one search over all at once
    for a "t" anywhere else (a record's every line has one: none left out is every line spelled so)."""
    joined = b"".join(raws)
    if b"\\" in joined:
        return False
    stray = _STRAY_T.search(joined)
    if stray is not None and stray.start() == 1 and joined.startswith(TYPE_FIRST):  # the first line's
        stray = _STRAY_T.search(joined, len(b'{"t"'))
    return stray is None


# A "t" that is not the type first on a line (`{"t": "` right after a line's end): found by its
# text first, in C, and only then its neighbours looked at (faster than counting every "t").
_STRAY_T = re.compile(rb'"t"(?:(?<!\n\{"t")|(?!: "))')


def places_by_starts(raws: list[bytes]) -> dict[str, list[int]] | None:
    """Each type's line numbers read off the starts of lines in ralph's own spelling, where nearly
    every line is an accept record (a long history's): one pass of C tells those from the rest,
    whose few types are read off their starts. None where the others are many, or a line does not
    start with its type (then each type is looked for alone)."""
    accepts = list(map(bytes.startswith, raws, repeat(_ACCEPT_START)))
    others = list(compress(range(len(raws)), map(not_, accepts)))
    if len(others) > _FEW_OTHERS:
        return None
    accepted = list(compress(range(len(raws)), accepts))
    every: dict[str, list[int]] = {"accept": accepted} if accepted else {}
    for at in others:
        raw = raws[at]
        if not raw.strip():
            continue
        end = raw.find(b'"', len(TYPE_FIRST)) if raw.startswith(TYPE_FIRST) else -1
        if end < 0:
            return None
        every.setdefault(raw[len(TYPE_FIRST) : end].decode("utf-8"), []).append(at)
    return every


_ACCEPT_START = TYPE_FIRST + b'accept"'
_FEW_OTHERS = 512  # lines of other types beside the accept lines, for places_by_starts to read alone


def head_of(record: Record | None) -> Head | None:
    return None if record is None else (record["t"], record.get("id"))


def _decoded_head(raw: bytes) -> Head | None:
    stripped = raw.strip()
    return head_of(json.loads(stripped)) if stripped else None


DECODED_HEADS = Heads(_decoded_head)
DECODED_KINDS = Kinds(DECODED_HEADS, lambda raw: json.loads(raw) if raw.strip() else None)
