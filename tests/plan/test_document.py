"""plan.jsonl as lines: every byte read is written back unless the command changed that record. How
the loader reports a broken line is in test_loader.py."""

from __future__ import annotations

import json

import pytest

from ralph.plan.document import Document, serialize
from ralph.plan.loader import load
from ralph.plan.plan import Plan

HAND_EDITED = (
    b'{"t":"config",   "commit" : false, "x-mine": [1, 2]}\n'
    b"\n"
    b'  {"name": "First", "t": "task", "id": "t-aaaaaa", "s": "p", "x-note": {"keep": true}}  \n'
    b'{"t": "milestone", "id": "m-1", "title": "unknown record type"}\r\n'
    b'{"t":"task","id":"t-bbbbbb","name":"Second \xc3\xa9t\xc3\xa9","deps":["t-aaaaaa"]}\r\n'
    b'{"t": "issue", "id": "i-cccccc", "text": "why?"}\n'
    b"   \n"
    b'{"t": "task", "id": "t-dddddd", "name": "No final newline", "s": "d"}'
)


def lines_of(doc: Document) -> list[bytes]:
    return [line.raw for line in doc.lines]


@pytest.mark.parametrize(
    "data",
    [
        HAND_EDITED,
        b"",
        b"\n\n\n",
        b'{"t":"task","id":"t-a","name":"x"}',
        b'{"t":"task","id":"t-a","name":"x"}\r\n\r\n',
        b'\t{"t" : "spec" , "path" : "specs/a.md"}\t\n',
        b'{"t": "someday", "nested": {"deep": [1, {"x": null}]}, "n": 1e400}\n',
    ],
)
def test_parse_then_write_back_is_byte_for_byte(data):
    doc = load(data)
    assert doc.to_bytes() == data
    assert not doc.changed


def test_records_keep_unknown_keys_and_record_types():
    doc = load(HAND_EDITED)
    records = [line.record for line in doc.records()]
    assert [r["t"] for r in records] == ["config", "task", "milestone", "task", "issue", "task"]
    assert records[0]["x-mine"] == [1, 2]
    assert records[1]["x-note"] == {"keep": True}
    assert records[2] == {"t": "milestone", "id": "m-1", "title": "unknown record type"}
    assert records[3]["name"] == "Second \u00e9t\u00e9"
    # line numbers count every line, blank ones included
    assert [line.number for line in doc.records()] == [1, 3, 4, 5, 6, 8]


def test_rewrite_changes_only_that_line():
    doc = load(HAND_EDITED)
    before = lines_of(doc)
    line = doc.records()[1]
    line.record["s"] = "d"
    doc.rewrite(line)
    after = lines_of(doc)
    assert doc.changed
    assert after[2] == serialize(line.record)
    assert json.loads(after[2]) == {
        "name": "First",
        "t": "task",
        "id": "t-aaaaaa",
        "s": "d",
        "x-note": {"keep": True},
    }
    assert list(json.loads(after[2])) == ["name", "t", "id", "s", "x-note"]  # key order kept
    assert after[:2] == before[:2] and after[3:] == before[3:]


def test_crlf_lines_survive_a_rewrite_of_another_line():
    doc = load(HAND_EDITED)
    doc.rewrite(doc.records()[0])
    data = doc.to_bytes()
    assert b'{"t": "milestone", "id": "m-1", "title": "unknown record type"}\r\n' in data
    assert b'"deps":["t-aaaaaa"]}\r\n' in data


def test_append_adds_a_newline_to_a_last_line_without_one():
    doc = load(b'{"t":"spec","path":"a.md"}')
    doc.append({"t": "spec", "path": "b.md"})
    assert doc.to_bytes() == b'{"t":"spec","path":"a.md"}\n{"t": "spec", "path": "b.md"}\n'


def test_append_keeps_trailing_blank_lines_at_the_end():
    data = b'{"t":"spec","path":"a.md"}\n\n  \n\r\n'
    doc = load(data)
    doc.append({"t": "spec", "path": "b.md"})
    doc.append({"t": "spec", "path": "c.md"})
    assert doc.to_bytes() == (
        b'{"t":"spec","path":"a.md"}\n{"t": "spec", "path": "b.md"}\n{"t": "spec", "path": "c.md"}\n'
        b"\n  \n\r\n"
    )


def test_append_to_an_empty_or_blank_file():
    doc = load(b"")
    doc.append({"t": "spec", "path": "a.md"})
    assert doc.to_bytes() == b'{"t": "spec", "path": "a.md"}\n'
    doc = load(b"\n\n")
    doc.append({"t": "spec", "path": "a.md"})
    assert doc.to_bytes() == b'{"t": "spec", "path": "a.md"}\n\n\n'


def test_remove_drops_exactly_one_line():
    doc = load(HAND_EDITED)
    before = lines_of(doc)
    doc.remove(doc.records()[4])  # the issue, line 6
    assert lines_of(doc) == before[:5] + before[6:]
    assert doc.changed


def test_serialize_is_one_line_of_unescaped_utf8():
    record = {"t": "task", "id": "t-a", "name": "caf\u00e9 \u2603 \U0001f600", "notes": "two\nlines"}
    raw = serialize(record)
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    assert "caf\u00e9 \u2603 \U0001f600".encode() in raw
    assert json.loads(raw) == record


def test_serialize_escapes_a_lone_surrogate_instead_of_crashing():
    record = {"t": "task", "id": "t-a", "name": "x", "x-odd": "\ud800"}
    raw = serialize(record)
    assert b"\\ud800" in raw
    assert json.loads(raw) == record
    raw.decode("utf-8")  # valid UTF-8


def test_a_lone_surrogate_in_an_unknown_key_survives_a_command():
    data = b'{"t":"task","id":"t-aaaaaa","name":"x","x-odd":"\\ud800"}\n'
    plan = Plan(load(data))
    plan.done("t-aaaaaa")
    written = plan.doc.to_bytes()
    assert load(written).records()[0].record == {
        "t": "task",
        "id": "t-aaaaaa",
        "name": "x",
        "x-odd": "\ud800",
        "s": "d",
    }
