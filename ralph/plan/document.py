"""plan.jsonl as a document of lines, rewritten line by line.

A command changes only the lines of the records it touches and appends new records after the last
record; every other byte (a hand editor's spacing and key order, unknown keys and record types,
trailing blank lines) is written back exactly as it was read.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Iterable, Set
from itertools import compress, repeat
from operator import eq, itemgetter
from typing import Any

from ralph.plan.line_index import (
    ACCEPT_ID,
    ACCEPT_IDS,
    DECODED_HEADS,
    DECODED_KINDS,
    Kinds,
    Skeleton,
    head_of,
    in_own_spelling,
    places_by_starts,
)
from ralph.plan.line_index import (
    Head as Head,
)
from ralph.plan.line_index import (
    Record as Record,
)

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


# A change's edit of what is known of each line by position (Document._changed): the list before
# it and what a record says, to the list after it, or None when it must be read again.
Edit = Callable[[list[Any], Callable[[Any], Any]], "list[Any] | None"]


class Document:
    """The file's lines. A document loaded from bytes proven valid (Document.lazy) keeps most lines
    as their bytes alone and makes a line (its record decoded) only when one is asked for: with
    10,000 finished tasks beside the work, a command that touches one task decodes little. Each
    line made keeps the number it had when loaded, as every line of an eager document does."""

    def __init__(self, name: str, lines: list[Line]):
        self.name = name
        self._lines: list[Line | None] = list(lines)  # by position: a line made, or None
        self._every_made = False  # True once every line is made, which no change undoes
        self._raws = [line.raw for line in lines]  # by position, kept in step with each line made
        self._made = list(range(len(lines)))  # the positions of the lines made, in order
        self._where: dict[int, int] | None = None  # id of a line made -> its position, once asked
        self._numbers: list[int] | None = None  # each line's number as loaded, once lines moved
        self._make: Callable[[bytes, int], Line] = line_of_bytes
        self._head_of, self._kind_of = DECODED_HEADS, DECODED_KINDS
        self._heads: list[Head | None] | None = None  # by position, for self._heads_version
        self._heads_version = -1
        self._kinds: list[str | None] | None = None  # by position, for self._kinds_version
        self._kinds_version = -1
        self._positions: tuple[int, dict[str, list[int]]] = (0, {})  # by type, for that version
        self._every = -1  # the version at which _positions holds every type there is
        self._accepted: tuple[int, frozenset[str]] | None = None  # accepted ids, for that version
        self._ids: tuple[int, frozenset[str]] | None = None  # every record's id, for that version
        self._skeleton: Skeleton | None = None  # what is known of the bytes loaded, while unchanged
        self._spelled: tuple[int, bool] | None = None  # (version, whether _spelled holds then)
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
        skeleton: Skeleton | None = None,
    ) -> Document:
        """The document of these lines, each a valid record or blank: `make` makes the line of a
        raw line and its number when it is asked for, `kinds` (and its heads) says what it is.
        `skeleton`: what an earlier document of the same bytes found out (`raws` are its own)."""
        doc = cls(name, [])
        doc._lines, doc._raws = [None] * len(raws), raws
        doc._make, doc._head_of, doc._kind_of = make, kinds.heads, kinds
        if skeleton is not None:
            doc._skeleton = skeleton
            doc._heads, doc._kinds = skeleton.heads, skeleton.kinds
            doc._heads_version = 0 if skeleton.heads is not None else -1
            doc._kinds_version = 0 if skeleton.kinds is not None else -1
            doc._positions = (0, skeleton.positions)
            doc._accepted = (0, skeleton.accepted) if skeleton.accepted is not None else None
            doc._spelled = (0, skeleton.spelled) if skeleton.spelled is not None else None
        return doc

    def skeleton(self) -> Skeleton:
        """What is known now of the lines by position, for documents loaded later from the same
        bytes (the lists are shared: none of them is ever changed in place)."""
        version = self.version
        skeleton = Skeleton(list(self._raws))
        if self._heads_version == version:
            skeleton.heads = self._heads
        if self._kinds_version == version:
            skeleton.kinds = self._kinds
        if self._positions[0] == version:
            skeleton.positions = dict(self._positions[1])
        if self._accepted is not None and self._accepted[0] == version:
            skeleton.accepted = self._accepted[1]
        if self._spelled is not None and self._spelled[0] == version:
            skeleton.spelled = self._spelled[1]
        return skeleton

    @property
    def lines(self) -> list[Line]:
        """Every line, made (a pass over the whole file: readers of a few records use heads())."""
        lines = self._lines
        if None in lines:
            for index, line in enumerate(lines):
                if line is None:
                    lines[index] = self._make(self._raws[index], self.number(index))
            self._made, self._where = list(range(len(lines))), None
        return lines  # type: ignore[return-value]  # every line is made now

    def line(self, index: int) -> Line:
        """The line at `index` (from 0), made if it was not."""
        line = self._lines[index]
        if line is None:
            line = self._make(self._raws[index], self.number(index))
            self._lines[index] = line  # readers on threads may both make it: either copy will do
            bisect.insort(self._made, index)
            if self._where is not None:
                self._where[id(line)] = index
        return line

    def record_line(self, index: int) -> RecordLine:
        """The line at `index`, one with a head (a record), made if it was not."""
        line = self.line(index)
        assert isinstance(line, RecordLine)
        return line

    def number(self, index: int) -> int:
        """The number of the line at `index` as loaded (0 for a line added since)."""
        line = self._lines[index]
        if line is not None:
            return line.number
        return self._numbers[index] if self._numbers is not None else index + 1

    def position(self, line: Line) -> int | None:
        """Where `line` is now (from 1), or None when it is no longer in the document."""
        index = self._index_of(line)
        return None if index is None else index + 1

    def present(self, lines: list[Line]) -> list[Line]:
        """Those of `lines` still in the document, each once, in the order given."""
        return list({id(line): line for line in lines if self._index_of(line) is not None}.values())

    def raws(self) -> list[bytes]:
        """Every line's bytes, in order."""
        return list(self._raws)

    def heads(self) -> list[Head | None]:
        """Each line's head by position: its record's type and id, None for a line with no record."""
        if self._heads_version != self.version or self._heads is None:
            heads = self._by_position(self._head_of, head_of)
            self._heads, self._heads_version = (
                heads,
                self.version,
            )  # built aside: threads may share a read plan
            if self.version == 0 and self._skeleton is not None:
                self._skeleton.heads = heads
        return self._heads

    def kinds(self) -> list[str | None]:
        """Each line's record type by position, None for a line with no record."""
        if self._kinds_version != self.version or self._kinds is None:
            kinds = self._by_position(self._kind_of, _kind)
            self._kinds, self._kinds_version = kinds, self.version
            if self.version == 0 and self._skeleton is not None:
                self._skeleton.kinds = kinds
        return self._kinds

    def positions(self, kind: str) -> list[int]:
        """Where the records of type `kind` are (from 0), in file order; found once per version of
        the document (and kept across a change that moves none of them). Shared: not to change."""
        version, known = self._positions
        if version != self.version:
            known = {}
            self._positions = (self.version, known)  # built aside: threads may share a read plan
        found = known.get(kind)
        if found is None:
            if self._every == self.version:  # every type's places are known: none has this one
                return known.setdefault(kind, [])
            every = self._every_by_starts()
            if every is not None:  # each type's places at once: none asked again at this version
                for other, at in every.items():
                    known.setdefault(other, at)
                self._every = self.version
                return known.setdefault(kind, [])
            found = known[kind] = self._find(kind)
        return found

    def accepted_ids(self) -> frozenset[str]:
        """The ids of the accept records (the tasks accepted), once per version of the document."""
        if self._accepted is None or self._accepted[0] != self.version:
            ids = self._spelled_accepted_ids()
            if ids is None:
                heads: list[Any] = self.heads()
                ids = frozenset(map(itemgetter(1), map(heads.__getitem__, self.positions("accept"))))
            self._accepted = (self.version, ids)
            if self.version == 0 and self._skeleton is not None:
                self._skeleton.accepted = ids
        return self._accepted[1]

    def head(self, index: int) -> Head | None:
        """The head of the line at `index` (see heads), read alone where the heads of all are not
        known: a check of the few live records reads theirs, not every line's."""
        if self._heads_version == self.version and self._heads is not None:
            return self._heads[index]
        line = self._lines[index]
        if line is not None and self._all_made():  # an eager document's: its record's
            return head_of(line.record)
        head: Head | None = self._head_of[self._raws[index]]
        return head

    def _find(self, kind: str) -> list[int]:
        """Where the records of type `kind` are: found in C (list.index), so that the few open tasks
        among 10,000 finished ones cost no pass of Python. Where no line's type is known yet and
        every line is in ralph's spelling, by the lines that start with that type, in one pass of C
        (a command that reads a long plan once asks for a few types: no type read per line).
        See _by_starts."""
        if (self._kinds_version != self.version or self._kinds is None) and self._by_starts():
            prefix = b'{"t": ' + _ENCODER.encode(kind).encode()  # quoted: "task" is not "tasks"
            return list(compress(range(len(self._raws)), map(bytes.startswith, self._raws, repeat(prefix))))
        kinds = self.kinds()
        many = kinds.count(kind)
        if many > 64:  # one pass of C then (operator.eq: None == kind is False, not NotImplemented)
            return list(compress(range(len(kinds)), map(eq, kinds, repeat(kind))))
        found, index = [], -1
        for _ in range(many):
            index = kinds.index(kind, index + 1)
            found.append(index)
        return found

    def _every_by_starts(self) -> dict[str, list[int]] | None:
        """The places of every type, where _find would read them off the lines' starts and nearly
        every line is an accept record (a long history's): one pass of C tells those from the rest,
        whose few types are read off their starts; None otherwise (then one pass per type asked)."""
        if (self._kinds_version == self.version and self._kinds is not None) or not self._by_starts():
            return None
        return places_by_starts(self._raws)

    def _all_made(self) -> bool:
        """Whether every line is made (an eager document's are; a lazy one's once each was asked
        for). Known once seen: no change makes a line unmade again. Asked per line by a check of
        every record, so not a pass over the lines each time (10,000 tasks took a second)."""
        if not self._every_made:
            self._every_made = None not in self._lines
        return self._every_made

    def _by_starts(self) -> bool:
        """Whether to read types and accepted ids off the lines' starts: where every line is in
        ralph's spelling and this process has not read the heads of half as many lines (a
        long-lived loop has, and its plan grows by a few lines at a time: a lookup of each known
        line, and the few new ones read, is cheaper than a pass per type)."""
        return 2 * len(self._kind_of) < len(self._raws) and self._is_spelled()

    def _is_spelled(self) -> bool:
        """Whether every record line is in ralph's spelling, as _spelled says, at this version (a
        lazy document's alone: an eager one's lines may not be records)."""
        if self._all_made():
            return False
        known = self._spelled
        if known is None or known[0] != self.version:
            known = self._spelled = (self.version, in_own_spelling(self._raws))
            if self.version == 0 and self._skeleton is not None:
                self._skeleton.spelled = known[1]
        return known[1]

    def _spelled_accepted_ids(self) -> frozenset[str] | None:
        """The accepted ids read off the accept lines' starts, where every line is in ralph's
        spelling and each accept line has its one id right after its type (counts over them all
        tell: one "t" per line, so a line holds that start only as its start); None otherwise."""
        if not self._by_starts():
            return None
        at = self.positions("accept")
        lines = b"".join(map(self._raws.__getitem__, at))
        if lines.count(ACCEPT_ID) != len(at) or lines.count(b'"id"') != len(at):
            return None
        return frozenset(map(bytes.decode, ACCEPT_IDS.findall(lines)))

    def with_ids(self, ids: Set[str]) -> list[int]:
        """Where the records whose id is one of `ids` are (from 0), in file order: found in passes
        of C over the heads."""
        heads: list[Any] = self.heads()
        with_none: Iterable[Any] = map(_NO_HEAD.get, heads, heads)  # a line with no head: no id
        of_each = map(itemgetter(1), with_none)
        return list(compress(range(len(heads)), map(ids.__contains__, of_each)))

    def ids(self) -> frozenset[str]:
        """Every id a record of the document has (found in passes of C over the heads, once per
        version of the document)."""
        if self._ids is None or self._ids[0] != self.version:
            heads: list[Any] = self.heads()
            found: set[Any] = set(map(itemgetter(1), filter(None, heads)))
            found.discard(None)  # a head with no id has None for it
            self._ids = (self.version, frozenset(found))
        return self._ids[1]

    def values_of(self, kind: str, key: str) -> list[Any]:
        """The value of `key` in each record of type `kind` (None where it has none), in file
        order: read off the raw lines (in C, each line once per process) where no line is made."""
        at = self.positions(kind)
        values = list(map(self._kind_of.field(key).__getitem__, map(self._raws.__getitem__, at)))
        lines = self._lines
        for number, index in enumerate(at):
            line = lines[index]
            if line is not None:
                values[number] = line.record.get(key)  # type: ignore[union-attr]  # a record's line
        return values

    def lines_of(self, *kinds: str) -> list[RecordLine]:
        """The lines of records of these types, in file order."""
        at = sorted(index for kind in kinds for index in self.positions(kind))
        return [self.record_line(index) for index in at]

    def records(self) -> list[RecordLine]:
        return [line for line in self.lines if isinstance(line, RecordLine)]

    def to_bytes(self) -> bytes:
        return b"".join(self._raws)

    def rewrite(self, line: RecordLine) -> None:
        """Serialize line.record again: call after changing the record in place. The line keeps
        its ending (a CRLF file stays CRLF)."""
        self._changeable()
        at = self._index_of(line)
        # Its type and id stay as they were (a change that makes them another is read again).
        kept = self._kept_if(at is not None and self._head_at(at) == head_of(line.record))
        line.raw = _ending_like(serialize(line.record), line.raw)
        self.touched.append(line)
        if at is None:
            at = -1  # no longer in the document: nothing of it to keep in step
        else:
            self._raws[at] = line.raw
        spelled = self._spelled_now()
        every = self._every == self.version and kept[0] is self._positions[1]  # kept whole: still every type
        self._changed(at, lambda found, of_record: found if found[at] == of_record(line.record) else None)
        self._keep(*kept)
        self._keep_spelled(spelled, line.raw)
        if every:
            self._every = self.version

    def append(self, record: Record) -> RecordLine:
        self._changeable()
        raws = self._raws
        index = self._after_last_record()
        previous = raws[index - 1] if index else b"\n"
        if not previous.endswith(b"\n"):
            self.line(index - 1).raw += b"\r\n" if b"\r\n" in raws[0] else b"\n"
            previous = raws[index - 1] = self.line(index - 1).raw
        line = RecordLine(_ending_like(serialize(record), previous), record, 0)
        self._moving()
        self._lines.insert(index, line)
        self._raws.insert(index, line.raw)
        self._numbers.insert(index, 0)  # type: ignore[union-attr]  # set by _moving
        self._made = [at + (at >= index) for at in self._made]
        bisect.insort(self._made, index)
        self._where = None  # lines moved
        self.touched.append(line)
        kept = self._kept_around(index, added=head_of(record))
        spelled = self._spelled_now()
        self._changed(index, lambda found, of_record: [*found[:index], of_record(record), *found[index:]])
        self._keep(*kept)
        self._keep_spelled(spelled, line.raw)
        return line

    def remove(self, line: Line) -> None:
        self._changeable()
        index = self._index_of(line)
        if index is None:
            raise ValueError("Document.remove(line): the line is not in the document")
        kept = self._kept_around(index, removed=head_of(line.record))
        self._moving()
        del self._lines[index], self._raws[index], self._numbers[index]  # type: ignore[index]
        self._made = [at - (at > index) for at in self._made if at != index]
        self._where = None  # lines moved
        spelled = self._spelled_now()
        self._changed(index, lambda found, of_record: [*found[:index], *found[index + 1 :]])
        self._keep(*kept)
        self._keep_spelled(spelled, b"")

    def freeze(self) -> None:
        """From now on this document is only read: it may be handed to many readers."""
        self.frozen = True

    def _index_of(self, line: Line) -> int | None:
        """The position of `line`, a line made (None when it is not in the document)."""
        if self._where is None:
            self._where = {id(self._lines[index]): index for index in self._made}
        return self._where.get(id(line))

    def _by_position(self, of_raw: dict[object, Any], of_record: Callable[[Record | None], Any]) -> list[Any]:
        """`of_raw` looked up for each line's bytes (in C): a made line's bytes are kept in step with
        its record by rewrite. Every line made: `of_record` for each (an eager document's lines may
        not be valid JSON)."""
        lines = self._lines
        if None not in lines:
            return [of_record(line.record) for line in lines]  # type: ignore[union-attr]
        self._kind_of.fill(self._raws)
        return list(map(of_raw.__getitem__, self._raws))

    def _moving(self) -> None:
        """Lines are about to move: keep the number each was loaded with."""
        if self._numbers is None:
            self._numbers = list(range(1, len(self._lines) + 1))

    def _changeable(self) -> None:
        if self.frozen:
            raise TypeError("a plan read to be shared was changed: change the plan in a transaction")

    def _changed(self, at: int | None = None, edit: Edit | None = None) -> None:
        """Count a change; `edit` makes the heads and types by position known before it those
        after it (None when they must be read again), so that a change of one line of 10,000 costs
        no pass over the rest. A change at no known position forgets them."""
        heads = self._heads if self._heads_version == self.version else None
        kinds = self._kinds if self._kinds_version == self.version else None
        self.changed = True
        self.version += 1
        if at is None or at < 0 or edit is None:
            return
        if heads is not None and (heads := edit(heads, head_of)) is not None:
            self._heads, self._heads_version = heads, self.version
        if kinds is not None and (kinds := edit(kinds, _kind)) is not None:
            self._kinds, self._kinds_version = kinds, self.version

    def _head_at(self, index: int) -> Head | None:
        """The head the line at `index` had at this version (its bytes are not rewritten yet)."""
        if self._heads_version == self.version and self._heads is not None:
            return self._heads[index]
        head: Head | None = self._head_of[self._raws[index]]
        return head

    def _kept_if(self, unmoved: bool) -> tuple[dict[str, list[int]], frozenset[str] | None]:
        """What is known of the records' places and the accepted ids, to keep across a change that
        moves no record (nothing, when it may)."""
        if not unmoved or self._positions[0] != self.version:
            return {}, None
        accepted = self._accepted[1] if self._accepted and self._accepted[0] == self.version else None
        return self._positions[1], accepted

    def _kept_around(
        self, index: int, added: Head | None = None, removed: Head | None = None
    ) -> tuple[dict[str, list[int]], frozenset[str] | None]:
        """What is known of the records' places and the accepted ids, to keep across a line added
        (`added`, its head) or removed (`removed`) at `index`: the places of a type wholly before it
        stay (a line is mostly added after the last record), the others are found again."""
        known, accepted = self._kept_if(True)
        kept: dict[str, list[int]] = {}
        for kind, found in known.items():
            if not found or found[-1] < index:
                kept[kind] = found
            elif removed is not None and kind == removed[0] and found[-1] == index:
                kept[kind] = found[:-1]
        if added is not None and added[0] in kept:
            kept[added[0]] = [*kept[added[0]], index]
        changed = added if added is not None else removed
        if accepted is not None and changed is not None and changed[0] == "accept":
            # One accepted id more; one less is found again (an id may be accepted twice).
            accepted = accepted | {changed[1]} if added is not None and changed[1] is not None else None
        return kept, accepted

    def _keep(self, positions: dict[str, list[int]], accepted: frozenset[str] | None) -> None:
        """What _kept_if or _kept_around kept, as known of this version of the document."""
        self._positions = (self.version, dict(positions))
        self._accepted = (self.version, accepted) if accepted is not None else None

    def _spelled_now(self) -> bool:
        """Whether _spelled is known to hold at this version (not found out here)."""
        return self._spelled is not None and self._spelled[0] == self.version and self._spelled[1]

    def _keep_spelled(self, spelled: bool, raw: bytes) -> None:
        """_spelled held before a change that wrote `raw` (b"": none): it holds after it when that
        line is spelled so too, with no pass over the others."""
        if spelled and in_own_spelling([raw]):
            self._spelled = (self.version, True)

    def _after_last_record(self) -> int:
        # New records go before trailing blank lines, so those stay at the end.
        raws, lines = self._raws, self._lines
        for index in range(len(raws) - 1, -1, -1):
            line = lines[index]
            if (line is not None and line.record is not None) or raws[index].strip():
                return index + 1
        return 0


def line_of_bytes(raw: bytes, number: int) -> Line:
    """The line of `raw`, known to be a valid record or blank (Document.lazy's default maker)."""
    stripped = raw.strip()
    return line_of(raw, json.loads(stripped) if stripped else None, number)


_NO_HEAD: dict[Any, Any] = {None: ("", None)}  # a line with no head, as one with no id


def _kind(record: Record | None) -> str | None:
    return None if record is None else record["t"]


def _ending_like(raw: bytes, model: bytes) -> bytes:
    """`raw` (ending in \\n) with the line ending `model` has: CRLF lines stay CRLF."""
    return raw[:-1] + b"\r\n" if model.endswith(b"\r\n") else raw
