"""A plan with some of its records taken from another version, by record: what a person changed
beside a run laid on the plan as it was (ralph.loop.tree.beside_changes, ralph.store.settle)."""

from __future__ import annotations

from ralph.plan.document import Document, Record
from ralph.plan.integrity import record_key
from ralph.plan.loader import load


def records_by_key(doc: Document, keys: frozenset[str]) -> dict[str, Record | None]:
    """The records of `doc` that `keys` name (ralph.plan.integrity.record_key); None: not in it."""
    found = {record_key(line.record): line.record for line in doc.records()}
    return {key: found.get(key) for key in keys}


def with_records_of(old: Document, records: dict[str, Record | None]) -> Document:
    """A copy of `old` with each record of `records` (by its key) as given: added, changed, or
    gone (None). What a person changed beside a run, put on the plan as it was."""
    doc = load(old.to_bytes(), old.name)
    lines = {record_key(line.record): line for line in doc.records()}
    for key in sorted(records):
        line, record = lines.get(key), records[key]
        if record is None:
            if line is not None:
                doc.remove(line)
        elif line is None:
            doc.append(dict(record))
        elif line.record != record:
            line.record.clear()
            line.record.update(record)
            doc.rewrite(line)
    return doc
