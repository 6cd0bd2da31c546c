"""Intake: turning what a person or agent typed into new records, checked before anything is
written: ids, the fields a task may be given, Unicode text, dependency cycles among new tasks."""

from __future__ import annotations

import os

from ralph.errors import InvalidInput, Refused
from ralph.plan.declared import TASK_FIELDS_FROM_USER
from ralph.plan.document import Record
from ralph.plan.integrity import cycle_text
from ralph.plan.records import Status
from ralph.plan.validate import record_problems, unknown_fields

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
MAX_TEXT = 20_000  # characters in any one text a command takes (docs/plan-format.md)


def refuse_cycle(records: list[Record], batch: set[str]) -> None:
    from graphlib import CycleError, TopologicalSorter

    graph = {record["id"]: [dep for dep in record.get("deps", []) if dep in batch] for record in records}
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        raise InvalidInput(cycle_text(exc.args[1])) from None


def new_id(prefix: str, taken: set[str]) -> str:
    """prefix + 6 random base36 characters: safe to create on two branches at once. An operation
    being replayed gets the id it made the first time (ralph.plan.ops)."""
    from ralph.plan import ops

    given = ops.given_id(prefix, taken)
    if given is not None:
        return given
    while True:
        number = int.from_bytes(os.urandom(5), "big")
        chars = "".join(_BASE36[(number // 36**i) % 36] for i in range(6))
        candidate = f"{prefix}-{chars}"
        if candidate not in taken:
            ops.made_id(candidate)
            return candidate


def new_task_record(item: object, label: str, taken: set[str], spec: str | None) -> Record:
    """A pending task record from what a person or agent gave (JSON or --name), checked."""
    if isinstance(item, str):
        item = {"name": item}
    if not isinstance(item, dict):
        raise InvalidInput(f'{label} must be a JSON object with at least a "name", not {type(item).__name__}')
    unknown = sorted(set(item) - set(TASK_FIELDS_FROM_USER))
    if unknown:
        raise InvalidInput(unknown_fields(label, unknown, list(TASK_FIELDS_FROM_USER)))
    if isinstance(item.get("name"), str):
        item = {**item, "name": item["name"].strip()}
    if isinstance(item.get("deps"), str):
        item = {**item, "deps": [item["deps"]]}
    if isinstance(item.get("deps"), list) and all(isinstance(dep, str) for dep in item["deps"]):
        item = {**item, "deps": list(dict.fromkeys(item["deps"]))}  # "t-b,t-b" is one dependency
    record = {
        "t": "task",
        "id": item["id"] if "id" in item else new_id("t", taken),
        "name": item.get("name"),
        "s": Status.PENDING,
    }
    record.update(
        (key, item[key])
        for key in TASK_FIELDS_FROM_USER
        if key not in ("id", "name") and item.get(key) not in (None, [], "")
    )
    if spec and "spec" not in record:
        record["spec"] = spec
    if "name" not in item:
        raise InvalidInput(f'{label} needs a "name"')
    for key, value in record.items():
        require_text(value, f"{label} field '{key}'")
    problems = record_problems(record)
    if problems:
        raise InvalidInput(f"{label}: " + "; ".join(problems).removeprefix("task "))
    if record["id"] in taken:
        raise Refused(f"{label}: id {record['id']} is already in the plan")
    return record


def require_text(value: object, what: str) -> None:
    """Refuse text that is not Unicode (invalid UTF-8 from the command line arrives as lone
    surrogates, which no file, commit message or terminal can hold) or longer than MAX_TEXT (it
    ends up in prompts, which some agent CLIs take as one argument)."""
    values = value if isinstance(value, list) else [value]
    for one in values:
        if isinstance(one, str) and len(one) > MAX_TEXT:
            raise InvalidInput(f"{what} is {len(one):,} characters long; the limit is {MAX_TEXT:,}")
        if isinstance(one, str) and not one.isascii():
            try:
                one.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidInput(f"{what} is not valid UTF-8 text") from None
