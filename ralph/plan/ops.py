"""A plan's transitions as operations: each call of one of Plan's transitions is recorded with its
arguments as plain JSON, so that a runner whose push lost the race can make the same calls again
on the remote's head (ralph.plan.replay) instead of merging text or records.

The operations of a commit travel in its message, one `Ralph-Op:` trailer each: they are part of
the commit they explain (no second file to keep in step with it, nothing to lose between a write
and a commit), they survive a clone and a restart, and `git log` shows them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import fields as dataclass_fields
from dataclasses import is_dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ralph.plan.reading import PlanReader

TRAILER = "Ralph-Op"
REPLAYED_TRAILER = "Ralph-Replayed"  # on a runner's catch-up merge: its own operations were replayed
# ralph.plan.records' dataclasses a transition takes
TYPED_ARGUMENTS = frozenset({"AttemptRecord", "VerifyRecord", "DecomposeRecord", "CheckRecord"})

Op = dict[str, Any]  # {"op": transition name, "args": [...], "kw": {...}, "ids": [ids it made]}
F = TypeVar("F", bound=Callable[..., Any])

# The ids an operation generated (a question's, an issue's): a replay hands out the same ones,
# which later operations (an answer, a resolution) name.
_made_ids: ContextVar[list[str] | None] = ContextVar("made_ids", default=None)
_given_ids: ContextVar[list[str] | None] = ContextVar("given_ids", default=None)


def given_id(prefix: str, taken: set[str]) -> str | None:
    """The id the operation being replayed made, when it is still free (ralph.plan.intake.new_id)."""
    given = _given_ids.get()
    if given and given[0].startswith(f"{prefix}-") and given[0] not in taken:
        return given.pop(0)
    return None


def made_id(made: str) -> None:
    found = _made_ids.get()
    if found is not None:
        found.append(made)


@contextmanager
def handing_out(ids: list[str]) -> Iterator[None]:
    token = _given_ids.set(list(ids))
    try:
        yield
    finally:
        _given_ids.reset(token)


class Recording:
    """The operations made on one plan since it was loaded, and how many of the document's
    changes they account for: a change made past them (a record edited by hand) makes the
    plan's change no sequence of operations."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.changes = 0  # document changes made inside operations
        self.opaque = False  # an operation whose arguments are not plain JSON (plans, say)
        self.depth = 0


def recording(plan: PlanReader) -> Recording:
    found: Recording | None = plan.__dict__.get("_recording")
    if found is None:
        found = plan.__dict__["_recording"] = Recording()
    return found


def recorded(method: F) -> F:
    """The transition, recorded as an operation when it changes the plan. A transition that
    another calls is part of the outer one's operation, not one of its own."""
    name = method.__name__

    def transition(plan: PlanReader, *args: Any, **kw: Any) -> Any:
        record = recording(plan)
        if record.depth:
            return method(plan, *args, **kw)
        before = plan.doc.version
        record.depth += 1
        made: list[str] = []
        token = _made_ids.set(made)
        try:
            result = method(plan, *args, **kw)
        finally:
            record.depth -= 1
            _made_ids.reset(token)
        if plan.doc.version != before:
            record.changes += plan.doc.version - before
            op = _op(name, args, kw, result)
            if op is None:
                record.opaque = True
            else:
                if made and name != "add_tasks":  # add_tasks records its tasks with their ids
                    op["ids"] = made
                record.ops.append(op)
        return result

    transition.__name__ = name
    transition.__doc__ = method.__doc__
    transition.__wrapped__ = method  # type: ignore[attr-defined]
    return transition  # type: ignore[return-value]


def made_by_ops(plan: PlanReader) -> list[Op] | None:
    """The operations that made every change to the plan since it was loaded; None when some
    change was made past them (or by one that cannot be written down): replaying them would
    not give this plan."""
    record = recording(plan)
    if record.opaque or not record.ops or record.changes != plan.doc.version:
        return None
    return record.ops


def trailers(ops: list[Op]) -> str:
    return "\n".join(f"{TRAILER}: {encode(op)}" for op in ops)


def with_trailers(message: str, lines: str) -> str:
    return f"{message.rstrip()}\n\n{lines}" if lines else message


def ops_in(message: str) -> list[Op] | None:
    """The operations a commit message records (None: none, or one that does not read)."""
    prefix = f"{TRAILER}: "
    found = [line[len(prefix) :] for line in message.splitlines() if line.startswith(prefix)]
    if not found:
        return None
    try:
        ops = [decode(text) for text in found]
    except ValueError:
        return None
    return ops if all(well_formed(op) for op in ops) else None


def replayed_merge(message: str) -> bool:
    return any(line.startswith(f"{REPLAYED_TRAILER}: ") for line in message.splitlines())


def encode(op: Op) -> str:
    return json.dumps(_marked(op), ensure_ascii=False, separators=(",", ":"), default=_not_plain)


def decode(text: str) -> Op:
    value: Op = json.loads(text, object_hook=_enum_back)
    return value


def _op(name: str, args: tuple[Any, ...], kw: dict[str, Any], result: Any) -> Op | None:
    if name == "add_tasks" and args:
        args = (_with_ids(args[0], result), *args[1:])
    elif name == "add_tasks" and "items" in kw:
        kw = {**kw, "items": _with_ids(kw["items"], result)}
    op: Op = {"op": name, "args": list(args)}
    if kw:
        op["kw"] = kw
    try:
        return decode(encode(op))  # a copy: the records the caller holds change on
    except (TypeError, ValueError):
        return None


def _with_ids(items: Any, added: Any) -> Any:
    """The items as given, each with the id it was given: a replay makes the same tasks, which
    the operations after it (a decomposition, a dependency) name."""
    if not isinstance(items, list) or not isinstance(added, list) or len(items) != len(added):
        return items
    out = []
    for item, record in zip(items, added, strict=True):
        item = {"name": item} if isinstance(item, str) else item
        out.append({**item, "id": record["id"]} if isinstance(item, dict) else item)
    return out


def well_formed(op: object) -> bool:
    return (
        isinstance(op, dict)
        and isinstance(op.get("op"), str)
        and isinstance(op.get("args", []), list)
        and isinstance(op.get("kw", {}), dict)
        and isinstance(op.get("ids", []), list)
        and all(isinstance(made, str) for made in op.get("ids", []))
    )


def _marked(value: Any) -> Any:
    """Enums marked with their kind (json would write a StrEnum as its bare string, and a
    transition may want the enum back), and a transition's typed argument (a dataclass of plain
    fields, run_records.AttemptRecord) with its class."""
    if isinstance(value, Enum):
        return {"$enum": type(value).__name__, "value": value.value}
    if is_dataclass(value) and not isinstance(value, type):
        fields = {field.name: _marked(getattr(value, field.name)) for field in dataclass_fields(value)}
        return {"$record": type(value).__name__, "fields": fields}
    if isinstance(value, dict):
        return {key: _marked(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_marked(item) for item in value]
    return value


def _not_plain(value: object) -> object:
    raise TypeError(f"{type(value).__name__} is not plain JSON")


def _enum_back(value: dict[str, Any]) -> Any:
    from ralph.plan import records

    if set(value) == {"$enum", "value"}:
        kind = getattr(records, str(value["$enum"]), None)
        if isinstance(kind, type) and issubclass(kind, Enum):
            return kind(value["value"])
        raise ValueError(f"unknown enum {value['$enum']}")
    if set(value) == {"$record", "fields"} and isinstance(value["fields"], dict):
        # Read back from text an agent's fenced run may have written (ralph.store.pending_ops): only
        # a transition's own argument type is made, and fields it does not have refuse the text.
        from ralph.plan import run_records  # the loop's: only a stage's transition takes one

        name = str(value["$record"])
        kind = getattr(run_records, name, None) if name in TYPED_ARGUMENTS else None
        if not (isinstance(kind, type) and is_dataclass(kind)):
            raise ValueError(f"unknown record {name}")
        try:
            return kind(**value["fields"])
        except TypeError as exc:
            raise ValueError(f"{name} does not read: {exc}") from exc
    return value
