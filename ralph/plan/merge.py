"""Three versions of plan.jsonl merged by record, for git's merge driver (`ralph merge-driver`).

git merges lines, which is wrong for this file: two branches that each append a task conflict at
the end of it, and a task one branch accepted (its line removed) and the other rejected comes back.
This merges records, pure (bytes in, bytes out):

- task and issue records by id, spec records by path (the loop marks a spec whose PLAN run was
  stopped), the config and state singletons by type: a record added or changed on one side takes
  that side's version; changed on both, it merges field by field (`_merge_field`), and so does a
  spec or singleton added on both (two runners starting on one spec each add its record, and one
  may already have claimed it); a task or an issue added on both with different content (one
  random id drawn twice), or a record deleted on one side and changed on the other, is a
  conflict. A task with an accept tombstone on either side is accepted, whatever the other side
  did to it. A task deleted (or decomposed) on one side goes when the other side only changed what
  ralph changes on its own (a computed priority, a claim): runners would drop such a change
  replayed on a head without the task.
- A dependency on a task one side decomposed (deleted, leaving subtasks that name it as parent)
  moves to those subtasks, as `ralph task delete` moves it.
- accept, reject and resolve records are appended facts: the union, each once. Records of types ralph does
  not know are kept, each once, unless one side removed them.
- The order is ours, with theirs' new records appended in theirs' order (before ours' trailing blank
  lines). Every line the merge did not change is written back byte for byte, in ours' line endings.
- A conflicting record is written between conflict markers, ours' version then theirs' (each with
  everything that did merge), the opening marker naming it, so that `ralph check` reports it by line.
  A result that breaks a rule across records (a dependency on a task the other side deleted, a cycle
  made of one dependency from each side) is a conflict too, left unmarked: `ralph check` names it.
"""

from __future__ import annotations

import json
from typing import Any

from ralph.errors import InvalidInput, Problem
from ralph.plan.document import Document, Line, Record, RecordLine, line_of, serialize
from ralph.plan.integrity import SINGLETONS, integrity_problems, record_key
from ralph.plan.loader import parse_lines
from ralph.plan.records import Status, holds
from ralph.plan.validate import record_problems
from ralph.text import plural

BY_ID = ("task", "issue")
UNION_FACTS = (
    "accept",
    "reject",
    "resolve",
    "takeover",
)  # never removed by ralph: a side without one has not seen it yet
# A status moves forward only (accepted, the tombstone, is further); blocked merges with none.
STATUS_ORDER = {Status.PENDING: 0, Status.DONE: 1}
PRIORITY_RANK = {"low": 0, "medium": 1, "high": 2}
COUNTERS = frozenset({"attempts", "rebuilds", "tokens", "iteration"})
ID_LISTS = frozenset({"deps"})
CLAIM = ("claimed_by", "claimed_at", "claimed_on")  # one value: who holds the task, since when, where
# Fields ralph sets on its own (`task prioritize` with auto_priority, claims): a deletion beats them.
AUTOMATIC = frozenset({"priority", "auto_priority", *CLAIM})

_MISSING = object()  # a field the record does not have
_CONFLICT = object()


class Merged:
    """The merged file, and its conflicts located by line in it (none: a clean merge)."""

    __slots__ = ("data", "conflicts")

    def __init__(self, data: bytes, conflicts: list[Problem]):
        self.data, self.conflicts = data, conflicts


def merge_bytes(
    base: bytes, ours: bytes, theirs: bytes, name: str = "plan.jsonl", published_wins: bool = False
) -> Merged:
    """Parse the three versions and merge them. A line that is not a valid record, or two records
    with one id, in any of them raises InvalidInput naming the version and the line: a merge by
    record cannot place it, and must not drop it."""
    known: dict[bytes, Record] = {}  # the three versions share most lines: each is parsed once
    base_doc, ours_doc, theirs_doc = (
        _parse_side(data, f"{name} ({side})", known)
        for data, side in ((base, "base"), (ours, "ours"), (theirs, "theirs"))
    )
    return merge(base_doc, ours_doc, theirs_doc, name=name, published_wins=published_wins)


def merge(
    base: Document, ours: Document, theirs: Document, name: str = "plan.jsonl", published_wins: bool = False
) -> Merged:
    fact_keys: dict[bytes, tuple[str, str]] = {}
    b, o, t = _Side(base, fact_keys), _Side(ours, fact_keys), _Side(theirs, fact_keys)
    accepted = o.accepted | t.accepted
    outcomes = {
        key: _outcome(b.keyed.get(key), o.keyed.get(key), t.keyed.get(key), accepted)
        for key in {**o.keyed, **t.keyed}
    }
    _move_deps_to_subtasks(outcomes, b.keyed, accepted)
    wanted = {fact: _copies(fact, b, o, t) for fact in {**o.facts, **t.facts}}
    out = _Writer(name, _line_ending(ours, theirs, base), published_wins)
    tail = _trailing_blank_lines(ours)
    for line, key, fact in o.slots[: len(o.slots) - tail]:
        if key is not None:
            out.put(outcomes[key], replacing=line)
        elif fact is not None:
            out.fact(line, fact, wanted[fact])
        else:
            out.keep(line)
    for line, key, fact in t.slots:  # theirs' new records, in theirs' order
        if key is not None and key not in o.keyed:
            out.put(outcomes[key])
        elif fact is not None:
            out.fact(line, fact, wanted[fact], appended=True)
    for line, _, _ in o.slots[len(o.slots) - tail :]:
        out.keep(line)
    return out.result()


# --- one record, three versions --------------------------------------------------------------


class _Conflict:
    """A record the merge cannot decide: both versions go between markers for a person to choose."""

    __slots__ = ("reason", "what", "ours", "theirs")

    def __init__(self, reason: str, what: str, ours: bytes | None, theirs: bytes | None):
        self.reason, self.what, self.ours, self.theirs = reason, what, ours, theirs


def _outcome(
    base: RecordLine | None, ours: RecordLine | None, theirs: RecordLine | None, accepted: set[str]
) -> RecordLine | _Conflict | None:
    """The merged record: a line to write (from ours, from theirs, or a new one), None (gone), or a
    _Conflict."""
    one = ours or theirs
    assert one is not None  # the record's key came from ours or theirs
    record = one.record
    if record["t"] == "task" and record["id"] in accepted:
        return None  # the tombstone wins over a change or a deletion on the other side
    if ours is not None and theirs is not None:
        if _same_line(ours, theirs) and not _spent_on_both(base, ours):
            return ours
        if base is not None and _same_line(base, ours):
            return theirs  # changed on their side only
        if base is not None and _same_line(base, theirs):
            return ours
        what = _what(record)
        if base is None and record["t"] in BY_ID:  # one random id drawn twice: two different records
            return _Conflict(
                f"{what} was added on both sides with different content", what, ours.raw, theirs.raw
            )
        return _merge_fields(base.record if base is not None else {}, ours.record, theirs.record, what)
    if base is None:
        return one  # added on one side
    if _same_line(base, one):
        return None  # deleted on the other side, unchanged on this one
    if record["t"] == "task" and only_automatic(base.record, one.record):
        return None  # decomposed or deleted beats a priority or a claim ralph set on its own
    what = _what(record)
    if ours is None:
        return _Conflict(f"{what} was deleted on our side and changed on theirs", what, None, one.raw)
    return _Conflict(f"{what} was changed on our side and deleted on theirs", what, ours.raw, None)


def _spent_on_both(base: RecordLine | None, ours: RecordLine) -> bool:
    """Both sides' state records alike, their spending changed since the base: each side's own
    runs (which happened to cost the same), to be summed, not taken once."""
    return base is not None and ours.record.get("spent") != base.record.get("spent")


def _computed_on_both(ours: Record, theirs: Record) -> bool:
    """Both sides' priorities are `task prioritize`'s (a known value, auto_priority set)."""
    return all(
        side.get("auto_priority") is True and side.get("priority") in PRIORITY_RANK for side in (ours, theirs)
    )


def only_automatic(base: Record, changed: Record) -> bool:
    """Whether `changed` differs from `base` only in fields ralph sets on its own: a priority
    `task prioritize` computed (auto_priority set), a claim."""
    names = {
        name
        for name in {**base, **changed}
        if not _same(base.get(name, _MISSING), changed.get(name, _MISSING))
    }
    if not names <= AUTOMATIC:
        return False
    return "priority" not in names or changed.get("auto_priority") is True


def _move_deps_to_subtasks(
    outcomes: dict[str, RecordLine | _Conflict | None], base: dict[str, RecordLine], accepted: set[str]
) -> None:
    """A dependency on a task that is gone from the result, not accepted, and has subtasks there
    (records naming it as parent: it was decomposed) moves to those subtasks, in place."""
    kept = [line for line in outcomes.values() if isinstance(line, RecordLine) and line.record["t"] == "task"]
    gone = {key for key, line in outcomes.items() if line is None and key in base and key not in accepted}
    children: dict[str, list[str]] = {}
    for child in kept:
        if child.record.get("parent") in gone:
            children.setdefault(child.record["parent"], []).append(child.record["id"])
    if not children:
        return
    for key, outcome in list(outcomes.items()):
        if not isinstance(outcome, RecordLine) or outcome.record["t"] != "task":
            continue
        line = outcome
        deps = line.record.get("deps")
        if not isinstance(deps, list) or not any(dep in children for dep in deps):
            continue
        moved: list[str] = []
        for dep in deps:
            for new in children.get(dep, [dep]):
                if new not in moved and new != line.record["id"]:
                    moved.append(new)
        record = {**line.record, "deps": moved}
        outcomes[key] = RecordLine(serialize(record), record, 0)


def _merge_fields(base: Record, ours: Record, theirs: Record, what: str) -> RecordLine | _Conflict:
    """A record changed on both sides, field by field; a field changed on both to different values
    follows _merge_field, else the record conflicts (both versions keep every field that merged)."""
    ours_pick: Record = {}
    theirs_pick: Record = {}
    conflicting = []
    claim = _merge_claim(base, ours, theirs) if ours.get("t") in ("task", "issue", "spec") else _MISSING
    for name in {**ours, **theirs}:  # ours' field order, then theirs' new fields
        b, o, t = base.get(name, _MISSING), ours.get(name, _MISSING), theirs.get(name, _MISSING)
        if name in CLAIM and claim is not _MISSING:
            if claim is _CONFLICT:
                conflicting.append(name)
                ours_pick[name], theirs_pick[name] = o, t
            else:
                assert isinstance(claim, dict)  # neither sentinel: the merged claim's fields
                ours_pick[name] = theirs_pick[name] = claim.get(name, _MISSING)
            continue
        if name == "spent" and not (_same(o, b) or _same(t, b)):
            value = _merge_field(name, b, o, t)  # each side's runs, even the same amounts: summed
            if value is _CONFLICT:
                conflicting.append(name)
                ours_pick[name], theirs_pick[name] = o, t
                continue
        elif _same(o, t) or _same(t, b):
            value = o
        elif _same(o, b):
            value = t
        elif ours.get("t") == "state" and name == "stage":
            value = o  # each runner's loop says where it is; the work tree merged into keeps its own
        elif name == "priority" and _computed_on_both(ours, theirs):
            value = max(o, t, key=PRIORITY_RANK.__getitem__)  # the next `task prioritize` recomputes it
        else:
            value = _merge_field(name, b, o, t)
            if value is _CONFLICT:
                conflicting.append(name)
                ours_pick[name], theirs_pick[name] = o, t
                continue
        ours_pick[name] = theirs_pick[name] = value
    ours_pick = {key: value for key, value in ours_pick.items() if value is not _MISSING}
    theirs_pick = {key: value for key, value in theirs_pick.items() if value is not _MISSING}
    if conflicting:
        fields = ", ".join(f"'{name}'" for name in conflicting)
        reason = f"{what}: {fields} changed on both sides"
        return _Conflict(reason, what, serialize(ours_pick), serialize(theirs_pick))
    return RecordLine(serialize(ours_pick), ours_pick, 0)


def _merge_claim(base: Record, ours: Record, theirs: Record) -> Record | object:
    """A task's claim (claimed_by with claimed_at), one value: changed on one side, that side's;
    on both, a live claim wins over a release (a release frees only the claim it knew, not a newer
    one), one runner's two claims give the later, and two runners' claims conflict: the runner
    whose claim did not reach the remote first drops its own (ralph.usecases.claims does)."""
    b, o, t = ({key: side[key] for key in CLAIM if key in side} for side in (base, ours, theirs))
    if _same(o, t) or _same(t, b):
        return o
    if _same(o, b):
        return t
    if not o.get("claimed_by") or not t.get("claimed_by"):
        return o if o.get("claimed_by") else t
    if holds(t, o["claimed_by"], o.get("claimed_on")) and holds(o, t["claimed_by"], t.get("claimed_on")):
        return max(o, t, key=lambda claim: str(claim.get("claimed_at", "")))
    return _CONFLICT


SPEC_CHECKED = ("checked_commit", "checked_spec")  # a spec's last passing check (ralph.loop.stages.check)


def _merge_field(name: str, base: Any, ours: Any, theirs: Any) -> object:
    """A field both sides changed to different values: a status moves forward only, a counter takes
    the larger, a list of ids the union (in order, without what either side removed); any other
    field conflicts. Symmetric: which side is ours changes nothing but field and list order."""
    if name == "s":
        our_rank, their_rank = (
            STATUS_ORDER.get(Status.PENDING if value is _MISSING else value) for value in (ours, theirs)
        )
        if our_rank is None or their_rank is None:
            return _CONFLICT
        return _larger(ours, our_rank, theirs, their_rank)
    if name in COUNTERS:
        counts = [0 if value is _MISSING else value for value in (ours, theirs)]
        if not all(type(count) is int for count in counts):
            return _CONFLICT
        return _larger(ours, counts[0], theirs, counts[1])
    if name == "spent":
        return merge_spent(*({} if value is _MISSING else value for value in (base, ours, theirs)))
    if name in SPEC_CHECKED:  # each side checked its own code: the merged code is checked again
        return _MISSING
    if name in ID_LISTS:
        lists = [[] if value is _MISSING else value for value in (base, ours, theirs)]
        if not all(isinstance(ids, list) and all(type(i) is str for i in ids) for ids in lists):
            return _CONFLICT
        return _merge_ids(*lists)
    return _CONFLICT


def merge_spent(base: Any, ours: Any, theirs: Any) -> object:
    """The state record's spending totals ({stage: {runs, tokens, cost_usd, unknown_runs}}): each
    side added its own runs (runners sharing a remote), so the result is the base plus both sides'
    additions."""
    sides = (base, ours, theirs)
    if not all(isinstance(side, dict) and all(isinstance(r, dict) for r in side.values()) for side in sides):
        return _CONFLICT
    merged: dict[str, dict[str, Any]] = {}
    for stage in {**ours, **theirs}:
        rows = [side.get(stage, {}) for side in sides]
        total: dict[str, Any] = {}
        for key in {**rows[1], **rows[2]}:
            values = [row.get(key, 0) for row in rows]
            if not all(type(value) in (int, float) for value in values):
                return _CONFLICT
            value = values[1] + values[2] - values[0]
            total[key] = round(value, 6) if isinstance(value, float) else value
        merged[stage] = total
    return merged


def _larger(ours: object, our_rank: int, theirs: object, their_rank: int) -> object:
    # On a tie (a missing field against its default) the value written out wins: still symmetric.
    return ours if (our_rank, ours is not _MISSING) >= (their_rank, theirs is not _MISSING) else theirs


def _merge_ids(base: list[str], ours: list[str], theirs: list[str]) -> list[str]:
    removed_by_ours = set(base) - set(ours)
    removed_by_theirs = set(base) - set(theirs)
    merged = list(dict.fromkeys(i for i in ours if i not in removed_by_theirs))
    seen = set(merged)
    return merged + list(dict.fromkeys(i for i in theirs if i not in seen and i not in removed_by_ours))


def _copies(fact: tuple[str, str], base: _Side, ours: _Side, theirs: _Side) -> int:
    """How many copies of a fact the result has: accept and reject records are the union (each
    once: the larger count); others as the side that changed their count has it."""
    b, o, t = base.count(fact), ours.count(fact), theirs.count(fact)
    if fact[0] in UNION_FACTS or (o != b and t != b):
        return max(o, t)
    return o if t == b else t


def _same_line(a: Line, b: Line) -> bool:
    return a.raw == b.raw or a.raw.strip() == b.raw.strip() or _same(a.record, b.record)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values: key order does not count, types do (1, 1.0 and true differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(value, b[key]) for key, value in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    return a is b or a == b


def _what(record: Record) -> str:
    if record["t"] == "spec":
        return f"spec {record['path']}"
    return f"the {record['t']} record" if record["t"] in SINGLETONS else f"{record['t']} {record['id']}"


# --- the three versions ----------------------------------------------------------------------


def _parse_side(data: bytes, name: str, known: dict[bytes, Record]) -> Document:
    doc, problems = parse_lines(data, name, known)
    if problems:
        more = f" (and {plural(len(problems) - 1, 'more problem')})" if len(problems) > 1 else ""
        raise InvalidInput(f"{problems[0]}{more}; cannot merge it by record")
    return doc


class _Side:
    """One version, its records indexed: task, issue, config and state records by key, every
    other record (a fact) by its content. `slots` holds each line with its key or its fact."""

    def __init__(self, doc: Document, fact_keys: dict[bytes, tuple[str, str]]):
        """`fact_keys`: the fact each line holds, shared by the three versions (most lines recur)."""
        self.keyed: dict[str, RecordLine] = {}
        self.facts: dict[tuple[str, str], int] = {}  # (type, content) -> copies
        self.accepted: set[str] = set()
        self.slots: list[tuple[Line, str | None, tuple[str, str] | None]] = []
        for line in doc.lines:
            if not isinstance(line, RecordLine):
                self.slots.append((line, None, None))
                continue
            record = line.record
            if record["t"] in BY_ID or record["t"] in SINGLETONS or record["t"] == "spec":
                key = _key(record)
                if key in self.keyed:
                    first = self.keyed[key].number
                    problem = Problem(
                        doc.name, line.number, f"a second record for {key} (the first is on line {first})"
                    )
                    raise InvalidInput(f"{problem}; cannot merge it by record")
                self.keyed[key] = line
                self.slots.append((line, key, None))
            else:
                fact = fact_keys.get(line.raw)
                if fact is None:
                    fact = fact_keys[line.raw] = (record["t"], json.dumps(record, sort_keys=True))
                self.facts[fact] = self.facts.get(fact, 0) + 1
                if record["t"] == "accept":
                    self.accepted.add(record["id"])
                self.slots.append((line, None, fact))

    def count(self, fact: tuple[str, str]) -> int:
        return self.facts.get(fact, 0)


def _key(record: Record) -> str:
    """A task or issue by id, a spec by path (the loop marks a spec whose PLAN run was stopped),
    config and state by type."""
    return record_key(record)


def _trailing_blank_lines(doc: Document) -> int:
    count = 0
    for line in reversed(doc.lines):
        if line.record is not None:
            break
        count += 1
    return count


def _line_ending(*docs: Document) -> bytes:
    """The line ending new lines get: ours' (its first line's), else theirs', else base's."""
    for doc in docs:
        for line in doc.lines:
            if line.raw.endswith(b"\n"):
                return b"\r\n" if line.raw.endswith(b"\r\n") else b"\n"
    return b"\n"


def _content(raw: bytes) -> bytes:
    return raw[:-2] if raw.endswith(b"\r\n") else raw[:-1] if raw.endswith(b"\n") else raw


# --- the result ------------------------------------------------------------------------------


class _Writer:
    def __init__(self, name: str, eol: bytes, published_wins: bool = False):
        self.name, self.eol, self.published_wins = name, eol, published_wins
        self.lines: list[Line] = []
        self.conflicts: list[Problem] = []
        self.new_records: list[Line] = []  # merged field by field: validated before they count as clean
        self.written: dict[tuple[str, str], int] = {}

    def add(self, raw: bytes, record: Record | None) -> Line:
        if self.lines and not self.lines[-1].raw.endswith(b"\n"):
            self.lines[-1].raw += self.eol  # ours' last line had no newline; something follows it now
        line = line_of(raw, record, len(self.lines) + 1)
        self.lines.append(line)
        return line

    def keep(self, line: Line) -> None:
        self.add(line.raw, line.record)

    def put(self, outcome: Line | _Conflict | None, replacing: Line | None = None) -> None:
        if outcome is None:
            return
        if isinstance(outcome, _Conflict) and self.published_wins:
            if outcome.theirs is not None:
                line = self.add(_content(outcome.theirs) + self.eol, json.loads(outcome.theirs))
                self.new_records.append(line)
        elif isinstance(outcome, _Conflict):
            self.conflict(outcome)
        elif outcome is replacing:
            self.keep(outcome)
        else:
            ending = replacing.raw[len(_content(replacing.raw)) :] if replacing is not None else self.eol
            line = self.add(_content(outcome.raw) + ending, outcome.record)
            if outcome.number == 0:
                self.new_records.append(line)

    def fact(self, line: Line, fact: tuple[str, str], wanted: int, appended: bool = False) -> None:
        """This copy of a fact, unless the result has as many copies as it wants already."""
        written = self.written.get(fact, 0)
        if written < wanted:
            self.written[fact] = written + 1
            self.add(_content(line.raw) + self.eol, line.record) if appended else self.keep(line)

    def conflict(self, conflict: _Conflict) -> None:
        opening = self.add(b"<<<<<<< ours, " + conflict.reason.encode("utf-8", "replace") + self.eol, None)
        self.conflicts.append(Problem(self.name, opening.number, f"merge conflict: {conflict.reason}"))
        if conflict.ours is not None:
            self.add(_content(conflict.ours) + self.eol, None)
        self.add(b"=======" + self.eol, None)
        if conflict.theirs is not None:
            self.add(_content(conflict.theirs) + self.eol, None)
        self.add(b">>>>>>> theirs, " + conflict.what.encode("utf-8", "replace") + self.eol, None)

    def result(self) -> Merged:
        conflicts = self.conflicts
        if not conflicts:  # clean only if `ralph check` would pass it
            merged = [
                Problem(self.name, line.number, "; ".join(found))
                for line in self.new_records
                if (found := record_problems(line.record))
            ]
            conflicts = merged + integrity_problems(Document(self.name, self.lines))
        return Merged(b"".join(line.raw for line in self.lines), sorted(conflicts, key=lambda p: p.line))
