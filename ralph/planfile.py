"""plan.jsonl as a document of lines: parsed strictly, rewritten line by line.

A command changes only the lines of the records it touches and appends new records after the last
record; every other byte (a hand editor's spacing and key order, unknown keys and record types,
trailing blank lines) is written back exactly as it was read.
"""

from __future__ import annotations

import json

from ralph.errors import PlanInvalid, Problem
from ralph.validate import record_problems

CONFLICT_MARKERS = (b"<<<<<<<", b"=======", b">>>>>>>", b"|||||||")
_DECODER = json.JSONDecoder()
_ENCODER = json.JSONEncoder(ensure_ascii=False)  # json.dumps(..., ensure_ascii=False) builds one per call


class Line:
    """One line of the file: its bytes as read (with the newline) and the record it holds."""

    __slots__ = ("raw", "record", "number")

    def __init__(self, raw: bytes, record: dict | None, number: int):
        self.raw = raw
        self.record = record
        self.number = number


def serialize(record: dict) -> bytes:
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

    def records(self) -> list[Line]:
        return [line for line in self.lines if line.record is not None]

    def to_bytes(self) -> bytes:
        return b"".join(line.raw for line in self.lines)

    def rewrite(self, line: Line) -> None:
        """Serialize line.record again: call after changing the record in place."""
        line.raw = serialize(line.record)
        self.touched.append(line)
        self._changed()

    def append(self, record: dict) -> Line:
        index = self._after_last_record()
        if index and not self.lines[index - 1].raw.endswith(b"\n"):
            self.lines[index - 1].raw += b"\n"
        line = Line(serialize(record), record, 0)
        self.lines.insert(index, line)
        self.touched.append(line)
        self._changed()
        return line

    def remove(self, line: Line) -> None:
        self.lines.remove(line)
        self._changed()

    def _changed(self) -> None:
        self.changed = True
        self.version += 1

    def _after_last_record(self) -> int:
        # New records go before trailing blank lines, so those stay at the end.
        for index in range(len(self.lines) - 1, -1, -1):
            if self.lines[index].record is not None or self.lines[index].raw.strip():
                return index + 1
        return 0


def parse(data: bytes, name: str = "plan.jsonl") -> tuple[Document, list[Problem]]:
    """Parse every line; return the document and every problem found (empty when valid)."""
    lines: list[Line] = []
    problems: list[Problem] = []
    for number, raw in enumerate(data.splitlines(keepends=True), start=1):
        record, problem = _parse_line(raw)
        if problem:
            problems.append(Problem(name, number, problem))
        lines.append(Line(raw, record, number))
    doc = Document(name, lines)
    from ralph.integrity import integrity_problems

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

    `trusted`: these exact bytes were already proven valid (see validcache); only parse them."""
    if trusted:
        return Document(
            name, [Line(raw, _trusted_record(raw), n) for n, raw in enumerate(data.splitlines(True), 1)]
        )
    doc, problems = parse(data, name)
    if problems:
        raise PlanInvalid(problems)
    return doc


def json_limit(exc: ValueError | RecursionError) -> str:
    """What a JSON text that is valid but beyond Python's limits is, in words."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc).split(":", 1)[0]  # "Exceeds the limit (4300 digits) for integer string conversion"


def _trusted_record(raw: bytes) -> dict | None:
    stripped = raw.strip()
    return _DECODER.raw_decode(stripped.decode("utf-8"))[0] if stripped else None


def touched_problems(doc: Document) -> list[Problem]:
    """The problems a change could have introduced: in the lines it wrote, and across records."""
    from ralph.integrity import integrity_problems

    position = {id(line): number for number, line in enumerate(doc.lines, start=1)}
    problems = [
        Problem(doc.name, position[id(line)], "; ".join(found))
        for line in doc.touched
        if id(line) in position and (found := record_problems(line.record))
    ]
    return problems + integrity_problems(doc)


def _indent(raw: bytes) -> int:
    """Bytes of white space before the line's content: positions count from the line's start."""
    return len(raw) - len(raw.lstrip())


def _parse_line(raw: bytes) -> tuple[dict | None, str | None]:
    stripped = raw.strip()
    if not stripped:
        return None, None
    if stripped.startswith(CONFLICT_MARKERS):
        return None, "unresolved git merge conflict marker; resolve the conflict, then run 'ralph check'"
    try:
        text = stripped.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8 (byte {exc.start + 1 + _indent(raw)})"
    try:
        record, end = _DECODER.raw_decode(text)  # json.loads without its per-call overhead
        if end != len(text):
            json.loads(text)  # raises json's own "Extra data" error
    except json.JSONDecodeError as exc:
        column = exc.colno + len(raw[: _indent(raw)].decode("utf-8", "replace"))
        return None, f"invalid JSON: {exc.msg} (column {column})"
    except (ValueError, RecursionError) as exc:  # an int of over 4300 digits; nesting too deep
        return None, f"invalid JSON: {json_limit(exc)}"
    problems = record_problems(record)
    if problems:
        return None, "; ".join(problems)
    return record, None
