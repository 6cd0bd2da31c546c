"""A plan loaded from bytes proven valid keeps its lines as bytes and makes (decodes) one only when
it is asked for, reading what each record is (its type, its id, a field) off ralph's own spelling
of the line. Every write, every check and every reading must be exactly what a document of made
lines gives: the bytes written, the problems and their line numbers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ralph.errors import PlanInvalid
from ralph.plan import document, line_index, loader, proven
from ralph.plan.document import Document, RecordLine
from ralph.plan.integrity import integrity_problems
from ralph.plan.line_index import split_lines
from ralph.plan.loader import load, parse, parse_lines, touched_problems
from ralph.plan.plan import Plan

# Lines that ralph's spelling of a record must not be trusted for, beside the ones it must read.
TRICKY = [
    b'{"t": "task", "id": "t-aaaaaa", "name": "Plain", "spec": "specs/a.md"}\n',
    b'{"t": "accept", "id": "t-bbbbbb", "name": "say \\"id\\": \\"t-zzzzzz\\"", "spec": "s.md"}\n',
    b'{"t": "issue", "id": "i-cccccc", "text": "t", "x": {"id": "i-nested", "spec": "inner.md"}}\n',
    b'{"t": "accept", "name": "no id first", "id": "t-dddddd"}\n',
    b'{"id": "t-eeeeee", "t": "task", "name": "keys in another order"}\n',
    b'  {"t" : "task", "id" : "t-ffffff", "name": "spaced"}  \n',
    b'{"t": "accept", "id": "t-gggggg", "name": "\xc3\xa9t\xc3\xa9 \xe2\x9c\x93", "spec": "\xc3\xa9.md"}\r\n',
    b'{"t": "task", "\\u0074": "issue", "id": "i-hhhhhh", "text": "a key spelled with an escape"}\n',
    b'{"t": "task", "id": "t-iiiiii", "name": "x", "id": "t-jjjjjj"}\n',
    b'{"t": "spec", "path": "specs/a.md", "spec": null}\n',
    b'{"t": "accept", "id": "t-kkkkkk", "name": "a {brace} in text", "spec": "b.md"}\n',
    b'{"t": "state", "iteration": 3, "spend": {"spec": "not the record\'s"}}\n',
    b'{"t": "task", "id": "t-llllll", "name": "x", "t": "issue", "text": "t twice: the last wins"}\n',
    b'{"t": "accept", "id": "t-\\"quoted", "name": "an id with an escaped quote"}\n',
    b'{"t": "acc\\"ept", "id": "t-mmmmmm", "name": "a type with one"}\n',
    b'{"t": "accept", "id": "t-nnnnnn", "name": "x", "spec": "a\\"b.md"}\n',
    b"\n",
    b"   \n",
]


def decoded(raw: bytes) -> dict[str, Any] | None:
    return json.loads(raw) if raw.strip() else None


@pytest.mark.parametrize("raw", TRICKY)
def test_what_a_line_is_read_off_its_bytes_is_what_decoding_it_says(raw):
    record = decoded(raw)
    data = raw if raw.endswith(b"\n") else raw + b"\n"
    doc = load(data, trusted=True)
    assert doc.heads() == [None if record is None else (record["t"], record.get("id"))]
    assert doc.kinds() == [None if record is None else record["t"]]
    if record is not None:
        assert doc.values_of(record["t"], "spec") == [record.get("spec")]
        assert doc.values_of(record["t"], "name") == [record.get("name")]


def test_reading_a_long_plan_makes_only_the_lines_read(monkeypatch):
    history = b"".join(
        b'{"t": "accept", "id": "t-old%05d", "name": "Finished %d", "spec": "specs/a.md"}\n' % (n, n)
        for n in range(10_000)
    )
    work = b'{"t": "task", "id": "t-new001", "name": "New", "deps": ["t-old00007"], "spec": "specs/a.md"}\n'
    data = b'{"t": "config", "commit": false}\n' + history + work
    decodes: list[bytes] = []
    real = loader._trusted_record

    def counted(raw: bytes) -> dict[str, Any] | None:
        decodes.append(raw)
        return real(raw)

    monkeypatch.setattr(loader, "_trusted_record", counted)
    plan = Plan(load(data, trusted=True))
    assert [task["id"] for task in plan.tasks()] == ["t-new001"]
    assert len(plan.accepted()) == 10_000
    assert plan.doc.values_of("accept", "spec").count("specs/a.md") == 10_000
    plan.done("t-new001")
    assert touched_problems(plan.doc) == []
    assert len(decodes) <= 3  # the task and the config: not a line per finished task


def lazy_and_eager(data: bytes) -> tuple[Document, Document]:
    eager, problems = parse_lines(data)
    assert not problems
    raws = [line.raw for line in eager.lines]
    return Document.lazy("plan.jsonl", raws, loader._proven_line, loader._KINDS), eager


PLAN = (
    b'{"t":"config",   "commit" : false}\n'
    b"\n"
    b'{"t": "accept", "id": "t-aaaaaa", "name": "Old"}\n'
    b'  {"name": "First", "t": "task", "id": "t-bbbbbb", "s": "p"}  \n'
    b'{"t":"task","id":"t-cccccc","name":"Second","deps":["t-bbbbbb"]}\r\n'
    b'{"t": "issue", "id": "i-dddddd", "text": "why?"}\n'
    b"   \n"
    b'{"t": "task", "id": "t-eeeeee", "name": "No final newline", "s": "d"}'
)


def edits(doc: Document) -> None:
    plan = Plan(doc)
    line = plan.task_line("t-cccccc")
    line.record["name"] = "Second, renamed"
    doc.rewrite(line)
    doc.remove(plan.task_line("t-bbbbbb"))
    doc.append({"t": "task", "id": "t-ffffff", "name": "Added", "deps": ["t-aaaaaa"]})
    doc.append({"t": "task", "id": "t-cccccc", "name": "Duplicate"})
    doc.append({"t": "state", "iteration": 1})
    doc.append({"t": "state", "iteration": 2})


def test_a_lazy_document_writes_and_checks_exactly_as_one_of_made_lines():
    lazy, eager = lazy_and_eager(PLAN)
    assert lazy.to_bytes() == PLAN
    for doc in (lazy, eager):
        edits(doc)
    assert lazy.to_bytes() == eager.to_bytes()
    assert [(p.line, p.message) for p in touched_problems(lazy)] == [
        (p.line, p.message) for p in touched_problems(eager)
    ]
    assert [line.raw for line in lazy.records()] == [line.raw for line in eager.records()]
    assert [line.number for line in lazy.lines] == [line.number for line in eager.lines]


@pytest.mark.parametrize(
    "added",
    [
        {"t": "task", "id": "t-aaaaaa", "name": "Accepted already"},
        {"t": "task", "id": "t-gggggg", "name": "Unknown dep", "deps": ["t-zzzzzz"]},
        {"t": "task", "id": "t-gggggg", "name": "Self", "deps": ["t-gggggg"]},
        {"t": "issue", "id": "i-dddddd", "text": "Duplicate issue"},
        {"t": "config", "commit": True},
    ],
)
def test_integrity_problems_are_the_same_on_a_lazy_document(added):
    lazy, eager = lazy_and_eager(PLAN)
    for doc in (lazy, eager):
        doc.append(dict(added))
    found = integrity_problems(lazy)
    assert found
    assert [(p.line, p.message) for p in found] == [(p.line, p.message) for p in integrity_problems(eager)]


def test_a_cycle_is_found_on_a_lazy_document():
    lazy, eager = lazy_and_eager(PLAN)
    for doc in (lazy, eager):
        line = next(line for line in doc.records() if line.record.get("id") == "t-bbbbbb")
        assert isinstance(line, RecordLine)
        line.record["deps"] = ["t-cccccc"]
        doc.rewrite(line)
    assert [p.message for p in integrity_problems(lazy)] == [p.message for p in integrity_problems(eager)]
    assert "dependency cycle" in integrity_problems(lazy)[0].message


def test_proven_lines_that_break_a_rule_together_are_refused_as_a_fresh_parse_refuses_them():
    first = b'{"t": "task", "id": "t-lines1", "name": "One"}\n'
    second = b'{"t": "task", "id": "t-lines2", "name": "Two", "deps": ["t-lines1"]}\n'
    load(first + second)  # every line proven
    broken = second + first.replace(b"t-lines1", b"t-lines2")
    load(first.replace(b"t-lines1", b"t-lines2"))  # that line too
    with pytest.raises(PlanInvalid) as refused:
        load(broken)
    assert [(p.line, p.message) for p in refused.value.problems] == [
        (1, "task t-lines2 depends on unknown task t-lines1"),
        (2, "duplicate id t-lines2 (also on line 1)"),
    ]
    assert [(p.line, p.message) for p in refused.value.problems] == [
        (p.line, p.message) for p in parse(broken)[1]
    ]
    assert load(second + first).to_bytes() == second + first  # the same lines, another valid plan


def test_a_record_added_before_trailing_blank_lines_moves_the_lines_made_after_it():
    data = b'{"t": "task", "id": "t-aaaaaa", "name": "One"}\n\n  \n'
    lazy, eager = lazy_and_eager(data)
    for doc in (lazy, eager):
        assert len(doc.lines) == 3  # every line made, the blank ones too
        doc.append({"t": "task", "id": "t-bbbbbb", "name": "Two"})
        doc.append({"t": "task", "id": "t-cccccc", "name": "Three"})
    assert lazy.to_bytes() == eager.to_bytes()
    assert lazy.to_bytes().endswith(b'"Three"}\n\n  \n')


def test_the_heads_of_many_lines_are_read_at_once_as_one_by_one():
    # A command's first look at a long plan reads every line's head in passes of C (Kinds.fill):
    # it must read the same lines, and leave the same ones to decoding, as the reading of one.
    raws = [*TRICKY, *(raw.replace(b"\n", b"") for raw in TRICKY), b'{"t": "accept"}\n']
    at_once = dict(loader._scanned_heads(raws))
    one_by_one = {raw: head for raw in raws if (head := loader._scanned_head(raw)) is not None}
    assert at_once == one_by_one
    assert {raw: head for raw, head in at_once.items()} == {
        raw: (record["t"], record.get("id")) for raw in at_once if (record := decoded(raw))
    }
    assert len(at_once) >= 8


@pytest.mark.parametrize(
    "odd",
    [
        [],  # every line in ralph's spelling: told by one count over them all
        [b'{"t": "state", "spend": {"id": "not the record\'s"}}\n'],
        [b'{"t": "task", "name": "x", "id": "t-late00"}\n'],
        [b'{"t": "task", "id": "t-twice0", "x": {"t": "y"}}\n'],
        [b'{"t": "task", "id": "t-slash0", "name": "a \\\\ b"}\n'],
        [b'{"t": "accept", "id": "t-last00"}'],  # no newline: the file's last line
    ],
)
def test_the_heads_of_a_plan_of_ralphs_own_lines_are_read_as_one_by_one(odd):
    raws = [*split_lines(long_plan(50)), *odd]
    at_once = dict(loader._scanned_heads(raws))
    assert at_once == {raw: head for raw in raws if (head := loader._scanned_head(raw)) is not None}
    assert at_once == {raw: (record["t"], record.get("id")) for raw in at_once if (record := decoded(raw))}


def long_plan(finished: int = 300) -> bytes:
    history = b"".join(
        b'{"t": "accept", "id": "t-old%05d", "name": "Finished %d"}\n' % (n, n) for n in range(finished)
    )
    work = b"".join(
        b'{"t": "task", "id": "t-new%03d", "name": "New %d", "deps": ["t-old00007"]}\n' % (n, n)
        for n in range(5)
    )
    return (
        b'{"t": "config", "commit": false}\n'
        + history
        + work
        + b'{"t": "issue", "id": "i-aaaaaa", "text": "x"}\n\n'
    )


KINDS = ("config", "accept", "task", "issue", "state", "reject")


def known(doc: Document) -> tuple[Any, ...]:
    return (doc.heads(), doc.kinds(), {kind: doc.positions(kind) for kind in KINDS}, doc.accepted_ids())


def test_what_is_kept_across_changes_is_what_a_fresh_load_of_the_bytes_finds():
    doc = load(long_plan(), trusted=True)
    plan = Plan(doc)
    changes = [
        lambda: plan.done("t-new001"),  # a rewrite: no record moves
        lambda: plan.accept("t-new001"),  # a task's line removed, an accept added at the end
        lambda: doc.append({"t": "state", "iteration": 1}),
        lambda: doc.remove(doc.record_line(doc.positions("issue")[0])),  # before the state line
        lambda: doc.remove(doc.record_line(doc.positions("accept")[0])),  # one accepted id less
        lambda: doc.append({"t": "reject", "id": "t-new002", "reason": "no"}),
    ]
    for change in changes:
        known(doc)  # all known before each change: kept across it where it can be
        change()
        assert known(doc) == known(load(doc.to_bytes()))
    assert "t-new001" in doc.accepted_ids() and "t-old00000" not in doc.accepted_ids()


def test_a_change_of_one_line_keeps_where_the_records_of_each_type_are(monkeypatch):
    doc = load(long_plan(), trusted=True)
    plan = Plan(doc)
    known(doc)
    found: list[str] = []
    real = Document._find

    def counted(self: Document, kind: str) -> list[int]:
        found.append(kind)
        return real(self, kind)

    monkeypatch.setattr(Document, "_find", counted)
    plan.done("t-new001")
    plan.accept("t-new001")  # its task line goes: the tasks after it are found again
    assert doc.accepted_ids() == frozenset({f"t-old{n:05d}" for n in range(300)} | {"t-new001"})
    assert integrity_problems(doc) == []
    assert len(doc.positions("accept")) == 301
    assert "accept" not in found  # 300 accepted tasks before the change: their places stay known


def test_a_plan_loaded_again_or_written_is_not_split_nor_read_again(monkeypatch):
    data = long_plan()
    first = load(data, trusted=True)
    known(first)
    split, read = [], []
    real_split, real_by_position = split_lines, Document._by_position

    def counted_split(data: bytes) -> list[bytes]:
        split.append(data)
        return real_split(data)

    def counted_by_position(self: Document, *args: Any) -> list[Any]:
        read.append(self)
        return real_by_position(self, *args)

    monkeypatch.setattr(loader, "split_lines", counted_split)
    monkeypatch.setattr(proven, "split_lines", counted_split)
    monkeypatch.setattr(Document, "_by_position", counted_by_position)
    again = load(data)
    assert known(again) == known(first)
    Plan(again).done("t-new003")  # a change of its own: the first document is not changed
    assert known(first) == known(load(data))
    written = again.to_bytes()
    proven.proven(written, again)
    assert known(load(written)) == known(again)
    assert split == [] and read == []
    monkeypatch.undo()
    assert known(load(written)) == known(parse(written)[0])


@pytest.mark.parametrize(
    "data",
    [b"", b"\n", b"a", b"a\n\nb", b"a\nb\n", b"a\r\nb\r", b"a\rb\n", b"\x0b\x0c\x1c\n\x85", b"\r", b"x\n\r"],
)
def test_a_plan_is_cut_into_lines_at_each_newline_alone(data):
    parts = data.split(b"\n")
    expected = [part + b"\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    assert split_lines(data) == expected
    assert b"".join(split_lines(data)) == data


ODD_LINES = [  # each with whether the lines' starts still tell every type and accepted id
    ([], True),  # each record's type is the start of its line
    ([b'{"t": "tasks", "id": "t-plural", "name": "a type that starts as another does"}\n'], True),
    ([b'{"t": "accept", "id": "t-last00"}'], True),  # no newline: the file's last line
    ([b'{"t": "task", "id": "t-nested", "name": "x", "x-mine": {"t": "not the record\'s"}}\n'], False),
    ([b'{"id": "t-later0", "t": "task", "name": "type not first"}\n'], False),
    ([b'{"t": "accept", "name": "x", "id": "t-late00"}\n'], False),  # its type, not its id
    ([b'{"t": "accept", "id": "t-twice0", "name": "x", "id": "t-twice1"}\n'], False),  # the last id counts
    ([b'{"t": "accept", "id": "t-slash0", "name": "a \\\\ b"}\n'], False),
    ([b'  {"t": "task", "id": "t-indent", "name": "indented"}\n'], False),
]


def fresh_process() -> None:
    """What this process read of lines before is forgotten, as in a command's own process."""
    proven.PROVEN.forget()
    loader._KINDS.clear()
    loader._KINDS.heads.clear()


def heads_read_alone(monkeypatch: pytest.MonkeyPatch) -> list[Document]:
    """The documents that read a line's head alone (Document._by_position), as they do it."""
    read: list[Document] = []
    real = Document._by_position

    def counted(self: Document, *args: Any) -> list[Any]:
        read.append(self)
        return real(self, *args)

    monkeypatch.setattr(Document, "_by_position", counted)
    return read


def eager_reading(data: bytes) -> tuple[Any, ...]:
    doc = parse_lines(data)[0]
    return {kind: doc.positions(kind) for kind in (*KINDS, "tasks")}, doc.accepted_ids()


@pytest.mark.parametrize(("odd", "spelled"), ODD_LINES)
def test_the_records_of_a_type_are_found_by_their_lines_starts_as_by_reading_each(odd, spelled, monkeypatch):
    data = long_plan() + b"".join(odd)
    fresh_process()
    doc = load(data, trusted=True)
    read = heads_read_alone(monkeypatch)
    found = {kind: doc.positions(kind) for kind in (*KINDS, "tasks")}, doc.accepted_ids()
    assert found == eager_reading(data)
    assert integrity_problems(doc) == []
    assert (doc not in read) is spelled  # told by the lines' starts: no line's head read alone


def test_a_change_that_spells_a_line_otherwise_finds_the_records_by_reading_each_again():
    fresh_process()
    doc = load(long_plan(), trusted=True)
    plan = Plan(doc)
    assert len(doc.positions("task")) == 5
    line = plan.task_line("t-new002")
    line.record["name"] = 'a "quoted" name'  # written with backslashes: starts no longer tell
    doc.rewrite(line)
    doc.append({"t": "reject", "id": "t-new002", "reason": "no"})
    doc.append({"id": "t-new009", "t": "task", "name": "its type second"})  # starts tell no more
    plan.done("t-new001")
    plan.accept("t-new001")
    assert eager_reading(doc.to_bytes()) == (
        {kind: doc.positions(kind) for kind in (*KINDS, "tasks")},
        doc.accepted_ids(),
    )
    assert known(doc) == known(load(doc.to_bytes()))


@pytest.mark.parametrize(
    ("line", "now"),
    [
        (b'{"t": "task", "id": "t-new001"', b'{"t": "task", "id": "t-new001", "name": "New 1", "s": "d"}\n'),
        (b'{"t": "task", "id": "t-new002"', b'{"t": "accept", "id": "t-new002", "name": "New 2"}\n'),
        (b'{"t": "accept", "id": "t-old00003"', b'{"t": "reject", "id": "t-new003", "reason": "no"}\n'),
        (b'{"t": "issue", "id": "i-aaaaaa"', b"\n"),
    ],
)
def test_a_plan_a_few_lines_from_one_read_before_is_known_as_a_fresh_load_knows_it(line, now, monkeypatch):
    fresh_process()
    data = long_plan()
    known(load(data, trusted=True))  # what an agent's plan is read beside: the loop's own
    raws = split_lines(data)
    changed = b"".join(now if raw.startswith(line) else raw for raw in raws)
    read = heads_read_alone(monkeypatch)
    doc = load(changed, trusted=True)
    assert known(doc) == known(parse(changed)[0])
    assert doc not in read  # the one line changed read alone: no pass over the others


def test_a_plan_written_more_versions_ago_than_are_kept_loads_again_without_a_parse(monkeypatch):
    fresh_process()
    data = load_and_write = long_plan()
    versions = []
    for iteration in range(proven.Proven.CONTENTS + 4):  # as a loop writes its plan, step by step
        plan = Plan(load(load_and_write, trusted=iteration == 0))
        plan.update_state(iteration=iteration)
        load_and_write = plan.doc.to_bytes()
        proven.proven(load_and_write, plan.doc)
        versions.append(load_and_write)
    parsed: list[bytes] = []
    real = loader.parse

    def counted(data: bytes, name: str = "plan.jsonl") -> Any:
        parsed.append(data)
        return real(data, name)

    monkeypatch.setattr(loader, "parse", counted)
    assert not proven.is_proven(versions[0])  # let go of: its lines are still known valid
    assert known(load(versions[0])) == known(parse(versions[0])[0])
    assert parsed == []  # checked across records only
    assert data != versions[0]


@pytest.mark.parametrize(
    "data",
    [
        long_plan(),
        long_plan(finished=0),  # no accept line at all
        long_plan().replace(b'"}\n{"t": "task"', b'"}\n\n  \n{"t": "task"'),  # blank lines among the others
        long_plan()
        + b"".join(b'{"t": "reject", "id": "t-new001", "reason": "%d"}\n' % n for n in range(600)),
    ],
)
def test_the_places_of_every_type_are_found_together_as_by_reading_each(data, monkeypatch):
    fresh_process()
    doc = load(data, trusted=True)
    found = {kind: doc.positions(kind) for kind in (*KINDS, "tasks")}, doc.accepted_ids()
    assert found == eager_reading(data)


def test_a_fresh_long_plan_finds_each_types_places_in_one_pass_kept_across_a_rewrite(monkeypatch):
    fresh_process()
    doc = load(long_plan(), trusted=True)
    passes: list[str] = []
    every = Document._every_by_starts

    def find(self: Document, kind: str) -> list[int]:
        passes.append(kind)
        return []

    def every_type(self: Document) -> dict[str, list[int]] | None:
        passes.append("every")
        return every(self)

    monkeypatch.setattr(Document, "_find", find)
    monkeypatch.setattr(Document, "_every_by_starts", every_type)
    plan = Plan(doc)
    plan.done("t-new001")  # a task's line rewritten in place: the places stay
    assert [doc.positions(kind) for kind in ("config", "state", "issue", "accept")][:3] == [[0], [], [306]]
    assert len(doc.positions("accept")) == 300
    assert passes == ["every"]  # one pass for every type asked, before the change and after


def test_a_plan_a_few_lines_from_one_read_before_shares_its_unchanged_lines_bytes():
    fresh_process()
    data = long_plan()
    before = load(data, trusted=True)
    known(before)  # its heads and types read, as the loop's plan has them
    changed = data.replace(b'"name": "New 1"', b'"name": "New 1", "s": "d"')
    after = load(changed, trusted=True)
    kept = [at for at, (old, new) in enumerate(zip(before.raws(), after.raws(), strict=True)) if old is new]
    # One object per unchanged line: looked up by its bytes, its hash is not computed again.
    assert len(kept) == len(before.raws()) - 1
    assert after.to_bytes() == changed


def test_a_line_that_does_not_start_with_its_type_sends_each_type_to_be_looked_for_alone():
    # Only a valid plan is loaded so (trusted: its bytes were proven); a line with no type at all
    # still reads as no type, not as a crash, and the places of the others are found one by one.
    fresh_process()
    doc = load(long_plan() + b'{"n": 12}\n', trusted=True)
    assert [len(doc.positions(kind)) for kind in ("task", "accept", "issue")] == [5, 300, 1]


def test_a_process_that_read_its_plans_heads_reads_a_plan_grown_by_a_few_lines_by_looking_them_up(
    monkeypatch,
):
    # A construct loop reads every head of its plan once; a plan the agents then grew by a line or
    # two is not read off its lines' starts again (a pass per type over 10,000 finished tasks).
    fresh_process()
    data = long_plan()
    load(data, trusted=True).heads()
    grown = data + b'{"t": "task", "id": "t-new009", "name": "New 9"}\n{"t": "accept", "id": "t-new008"}\n'
    passes: list[str] = []
    spelled_ids, every = Document._spelled_accepted_ids, line_index.places_by_starts

    def accepted_off_the_starts(self: Document) -> frozenset[str] | None:
        found = spelled_ids(self)
        passes.extend(["accepted"] if found is not None else [])
        return found

    def places_off_the_starts(raws: list[bytes]) -> dict[str, list[int]] | None:
        passes.append("every")
        return every(raws)

    monkeypatch.setattr(Document, "_spelled_accepted_ids", accepted_off_the_starts)
    monkeypatch.setattr(document, "places_by_starts", places_off_the_starts)
    doc = load(grown, trusted=True)
    places = {kind: doc.positions(kind) for kind in (*KINDS, "tasks")}
    assert (places, doc.accepted_ids()) == eager_reading(grown)
    assert passes == []
    fresh_process()  # a command's own process, which reads its plan once: off the starts
    cold = load(grown, trusted=True)
    assert (cold.accepted_ids(), cold.positions("task")) == (doc.accepted_ids(), doc.positions("task"))
    assert "accepted" in passes
