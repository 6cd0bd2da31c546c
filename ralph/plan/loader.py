"""Reading plan.jsonl strictly: every line parsed and validated, the cross-record rules checked,
each problem located by line. Nothing is written while any problem remains."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import compress, repeat
from operator import add, and_, contains, eq, getitem, itemgetter, not_
from typing import Any

from ralph.errors import PlanInvalid, Problem
from ralph.plan.document import Document, Line, RecordLine
from ralph.plan.integrity import integrity_problems
from ralph.plan.line_index import Head, Heads, Kinds, Record, split_lines
from ralph.plan.proven import PROVEN as _PROVEN
from ralph.plan.proven import copied
from ralph.plan.validate import record_problems

CONFLICT_MARKERS = (b"<<<<<<<", b"=======", b">>>>>>>", b"|||||||")
BOM = b"\xef\xbb\xbf"
MAX_NESTING = 64  # far below Python's recursion limit, so every command reads what `check` accepts


def _refuse_constant(name: str) -> float:
    # Python's json reads NaN and Infinity, which are not JSON: written back, no other tool reads them.
    raise ValueError(f"{name} is not JSON (use null or a number)")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def parse_lines(
    data: bytes, name: str = "plan.jsonl", known: dict[bytes, Record] | None = None
) -> tuple[Document, list[Problem]]:
    """Parse and validate each line on its own (not the rules across records): the document, and
    the lines that are not a valid record (their `record` is None).

    `known` maps lines already proven valid to their records (shared, not copied: for readers of
    several versions of one file, whose lines are mostly the same bytes); valid lines are added."""
    lines: list[Line] = []
    problems: list[Problem] = []
    for number, raw in enumerate(split_lines(data), start=1):
        if known is None and raw in _PROVEN.lines and not (number == 1 and raw.startswith(BOM)):
            lines.append(_proven_line(raw, number))  # a line's validity is its bytes' alone
            continue
        record = known.get(raw) if known is not None else None
        if record is None:
            record, problem = (
                _parse_line(raw) if not (number == 1 and raw.startswith(BOM)) else (None, _BOM_TEXT)
            )
            if problem:
                problems.append(Problem(name, number, problem))
            elif known is not None and record is not None:
                known[raw] = record
        lines.append(RecordLine(raw, record, number) if record is not None else Line(raw, number))
    return Document(name, lines), problems


def parse(data: bytes, name: str = "plan.jsonl") -> tuple[Document, list[Problem]]:
    """Parse every line; return the document and every problem found (empty when valid)."""
    doc, problems = parse_lines(data, name)
    found = integrity_problems(doc)
    if problems:
        # A dependency may be "unknown" only because its own line is the broken one.
        found = [p for p in found if "depends on unknown task" not in p.message]
        problems = sorted(problems + found, key=lambda p: p.line)
    else:
        problems = found
    return doc, problems


def load(data: bytes, name: str = "plan.jsonl", trusted: bool = False) -> Document:
    """Parse strictly: any problem stops here, before anything could be written.

    `trusted`: these exact bytes were already proven valid (see validcache); only parse them.
    Bytes this process proved valid before are not validated again (ralph.plan.proven)."""
    if trusted or _PROVEN.holds(data):
        skeleton = _PROVEN.skeletons.get(data)
        if skeleton is None:
            skeleton = _PROVEN.beside_a_neighbour(split_lines(data), _KINDS)
            if trusted:
                _PROVEN.add(data, lines=skeleton.raws)
            _PROVEN.keep_skeleton(data, skeleton)
        # Its lines' bytes of its own (a change rewrites them in place); what is known of them shared.
        return Document.lazy(name, list(skeleton.raws), _proven_line, _KINDS, skeleton)
    raws = split_lines(data)
    if not (raws and raws[0].startswith(BOM)) and _PROVEN.valid_lines().issuperset(raws):
        # Every line was valid in a plan proven before (a commit's plan, a version or two back):
        # only the rules across records are left to check. Any problem: the full parse says which.
        doc = Document.lazy(name, raws, _proven_line, _KINDS)
        if not integrity_problems(doc):
            _PROVEN.add(data)
            return doc
    doc, problems = parse(data, name)
    if problems:
        raise PlanInvalid(problems)
    _PROVEN.add(data, doc)
    # Lazy as a proven load is (a document whose every line is made walks them all in Python), its
    # lines made from those the parse made (by their number as loaded), not decoded again.
    parsed = doc.lines
    raws = [line.raw for line in parsed]
    _KINDS.seed(raws, doc.heads(), doc.kinds())  # read in the check across records: not again
    return Document.lazy(name, raws, lambda _, number: parsed[number - 1], _KINDS)


def _proven_line(raw: bytes, number: int) -> Line:
    """The line of a plan proven valid: its record copied from the one decoded before, or decoded."""
    known = _PROVEN.lines.get(raw)
    if known is None:
        record = _trusted_record(raw)
        _PROVEN.remember_line(raw, record)
    else:
        template, flat = known
        record = None if template is None else dict(template) if flat else copied(template)
    return RecordLine(raw, record, number) if record is not None else Line(raw, number)


_HEAD_START = b'{"t": "'
_ID_NEXT = b', "id": "'


def _head_of(raw: bytes) -> Head | None:
    """What the record of `raw`, a line proven valid, is (type and id): read off its start where
    ralph wrote it (`{"t": "task", "id": "t-abc123", ...`), without decoding it; decoded otherwise."""
    head = _scanned_head(raw)
    if head is None:  # decoded, not remembered as proven: a line rewritten since may be asked for
        record = _trusted_record(raw)
        head = None if record is None else (record["t"], record.get("id"))
    return head


def _scanned_head(raw: bytes) -> Head | None:
    """The head of a line in ralph's own spelling, or None when it must be decoded. Without a
    backslash no string in the line holds a quote, so each `"t"` and `"id"` in it is a whole string:
    one of each means no other key of the record, nor of a value inside it, has that name."""
    if not raw.startswith(_HEAD_START) or b"\\" in raw or raw.count(b'"t"') != 1:
        return None
    end = raw.find(b'"', 7)
    kind = raw[7:end].decode("utf-8")
    ids = raw.count(b'"id"')
    if ids == 0:
        return (kind, None)
    if ids == 1 and raw.startswith(_ID_NEXT, end + 1):
        start = end + 1 + len(_ID_NEXT)
        return (kind, raw[start : raw.find(b'"', start)].decode("utf-8"))
    return None


def json_limit(exc: ValueError | RecursionError) -> str:
    """What a JSON text that is valid but beyond Python's limits is, in words."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc).split(":", 1)[0]  # "Exceeds the limit (4300 digits) for integer string conversion"


def _trusted_record(raw: bytes) -> Record | None:
    stripped = raw.strip()
    return _DECODER.raw_decode(stripped.decode("utf-8"))[0] if stripped else None


def _scanned_heads(raws: list[bytes]) -> Iterator[tuple[bytes, Head]]:
    """(raw, head) for each of `raws` whose head _scanned_head reads off its start, found as it
    finds them but in passes of C over all the lines at once; the others are left out."""
    read, heads, _ = _scanned_columns(raws)
    return zip(read, heads, strict=True)


_HEAD = re.compile(r'\{"t": "([^"]*)"(?:, "id": "([^"]*)")?')  # _scanned_head's spelling, in one match


def _scanned_columns(raws: list[bytes]) -> tuple[list[bytes], list[Head], list[str]]:
    """Those of `raws` whose head _scanned_head reads off its start, their heads and their types,
    by column (no pair made per line). What holds of every line is told by one count over them all
    where it can be (a plan of ralph's own lines: no backslash, one "t" in each, one "id" in each
    that has one after its type)."""
    joined = b"".join(raws)
    if b"\\" not in joined:
        found = _matched_columns(raws, joined)
        if found is not None:
            return found
    starts = list(map(bytes.startswith, raws, repeat(_HEAD_START)))
    simple: list[Any] = starts
    if b"\\" in joined or joined.count(b'"t"') != sum(starts):
        simple = list(
            map(
                all,
                zip(
                    starts,
                    map(not_, map(contains, raws, repeat(b"\\"))),
                    map(eq, map(bytes.count, raws, repeat(b'"t"')), repeat(1)),
                    strict=True,
                ),
            )
        )
    ends = list(map(bytes.find, raws, repeat(b'"'), repeat(7)))  # the type's closing quote
    kinds: list[Any] = list(map(getitem, raws, map(slice, repeat(7), ends)))
    kinds = list(map(bytes.decode, kinds))
    after = list(map(and_, simple, map(bytes.startswith, raws, repeat(_ID_NEXT), map(add, ends, repeat(1)))))
    if joined.count(b'"id"') == sum(after):  # each line has its one "id" after its type, or none
        one_id, no_id = after, list(map(and_, simple, map(not_, after)))
    else:
        ids = list(map(bytes.count, raws, repeat(b'"id"')))
        no_id = list(map(and_, simple, map(eq, ids, repeat(0))))
        one_id = list(map(and_, after, map(eq, ids, repeat(1))))
    with_id = list(compress(raws, one_id))
    starts_at = list(compress(map(add, ends, repeat(1 + len(_ID_NEXT))), one_id))
    stops = map(bytes.find, with_id, repeat(b'"'), starts_at)
    values: list[Any] = list(map(getitem, with_id, map(slice, starts_at, stops)))
    values = list(map(bytes.decode, values))
    without = list(compress(kinds, no_id))
    typed = list(compress(kinds, one_id))
    heads: list[Head] = [*zip(without, repeat(None)), *zip(typed, values, strict=True)]
    return [*compress(raws, no_id), *with_id], heads, [*without, *typed]


def _matched_columns(raws: list[bytes], joined: bytes) -> tuple[list[bytes], list[Head], list[str]] | None:
    """_scanned_columns where every line that starts in ralph's spelling holds its only "t", and
    its only "id" right after it or none (one count of each over all the lines tells): each head is
    then one match's groups, made in C. None otherwise (then each line is looked at)."""
    matches = list(map(_HEAD.match, map(bytes.decode, raws)))
    heads: list[Any] = list(map(re.Match.groups, filter(None, matches)))
    if joined.count(b'"t"') != len(heads):
        return None
    if joined.count(b'"id"') != len(heads) - list(map(itemgetter(1), heads)).count(None):
        return None
    return list(compress(raws, matches)), heads, list(map(itemgetter(0), heads))


_KINDS = Kinds(
    Heads(_head_of, limit=200_000), _trusted_record, _scanned_columns
)  # the lines this process read


def touched_problems(doc: Document) -> list[Problem]:
    """The problems a change could have introduced: in the lines it wrote, and across records."""
    problems = []
    for line in doc.touched:  # where a line is, looked up only for one with a problem: rarely
        found = record_problems(line.record)
        if found and (number := doc.position(line)):
            problems.append(Problem(doc.name, number, "; ".join(found)))
    return problems + integrity_problems(doc)


def _indent(raw: bytes) -> int:
    """Bytes of white space before the line's content: positions count from the line's start."""
    return len(raw) - len(raw.lstrip())


_BOM_TEXT = "the file starts with a UTF-8 byte order mark (BOM); save it as UTF-8 without one"


def _nesting(text: str) -> int:
    """How deep arrays and objects nest in a JSON text (brackets inside strings do not count)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _parse_line(raw: bytes) -> tuple[Record | None, str | None]:
    stripped = raw.strip()
    if not stripped:
        return None, None
    if stripped.startswith(CONFLICT_MARKERS):
        # An opening marker's label says what conflicts: ralph's merge driver names the record there.
        label = stripped[:160].decode("utf-8", "replace") if stripped.startswith(b"<<<<<<< ") else ""
        shown = f" ({label})" if label else ""
        return (
            None,
            f"unresolved git merge conflict marker{shown}; resolve the conflict, then run 'ralph check'",
        )
    try:
        text = stripped.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8 (byte {exc.start + 1 + _indent(raw)})"
    if text.count("[") + text.count("{") > MAX_NESTING and _nesting(text) > MAX_NESTING:
        return None, f"invalid JSON: nested deeper than {MAX_NESTING} levels"
    try:
        record, end = _DECODER.raw_decode(text)  # json.loads without its per-call overhead
        if end != len(text):
            _DECODER.decode(text)  # raises json's own "Extra data" error
    except json.JSONDecodeError as exc:
        column = exc.colno + len(raw[: _indent(raw)].decode("utf-8", "replace"))
        return None, f"invalid JSON: {exc.msg} (column {column})"
    except (ValueError, RecursionError) as exc:  # an int of over 4300 digits; nesting too deep
        return None, f"invalid JSON: {json_limit(exc)}"
    problems = record_problems(record)
    if problems:
        return None, "; ".join(problems)
    return record, None
