"""Reading plan.jsonl: a consistent snapshot without the lock (writers replace the file
atomically), loaded strictly unless these exact bytes were proven valid before. The read commands
import only this, not the lock or the writer."""

from __future__ import annotations

from pathlib import Path

from ralph.errors import RalphError
from ralph.plan.document import Document
from ralph.plan.loader import load
from ralph.plan.plan import Plan

PLAN_NAME = "plan.jsonl"


def plan_path(root: Path) -> Path:
    return root / PLAN_NAME


def read_bytes(root: Path) -> bytes:
    try:
        return plan_path(root).read_bytes()
    except FileNotFoundError:
        raise RalphError(f"no {PLAN_NAME} in {root} (run 'ralph init' first)") from None


def read_plan(root: Path) -> Plan:
    """A consistent snapshot without the lock: writers replace the file atomically."""
    return Plan(load_checked(root, read_bytes(root)))


def load_checked(root: Path, data: bytes) -> Document:
    """Load strictly, unless these exact bytes were proven valid before (then only parse)."""
    from ralph.store import validcache

    if validcache.known_valid(root, data):
        return load(data, PLAN_NAME, trusted=True)
    doc = load(data, PLAN_NAME)
    validcache.remember(root, data)
    return doc
