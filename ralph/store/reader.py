"""Reading plan.jsonl: a consistent snapshot without the lock (writers replace the file
atomically), loaded strictly unless these exact bytes were proven valid before. The read commands
import only this, not the lock or the writer."""

from __future__ import annotations

from pathlib import Path

from ralph.errors import RalphError
from ralph.plan.document import Document
from ralph.plan.loader import load
from ralph.plan.plan import Plan
from ralph.store.root import PLAN_NAME as PLAN_NAME  # where the store's other modules find it


def plan_path(root: Path) -> Path:
    return root / PLAN_NAME


def read_bytes(root: Path) -> bytes:
    try:
        return plan_path(root).read_bytes()
    except FileNotFoundError:
        raise RalphError(f"no {PLAN_NAME} in {root} (run 'ralph init' first)") from None


def read_plan(root: Path) -> Plan:
    """A consistent snapshot without the lock: writers replace the file atomically. Only to read
    (it may be shared with other readers): a change goes through a transaction, which loads its own."""
    return shared_plan(root, read_bytes(root))


def scratch_plan(root: Path) -> Plan:
    """The plan as read_plan reads it, but the caller's own: changing it writes nothing."""
    return Plan(load_checked(root, read_bytes(root)))


def shared_plan(root: Path, data: bytes) -> Plan:
    """The plan `data` (root's plan.jsonl's bytes) loaded, to read only, as read_plan."""
    shared = _READ.get(data)
    if shared is None:
        doc = load_checked(root, data)
        doc.freeze()
        shared = _READ.keep(data, Plan(doc))
    return shared


def written(data: bytes, plan: Plan) -> None:
    """`plan` was just written as `data` under the lock: readers of those bytes get it, without
    loading them again. It is only read from now on (frozen: a later change would be lost)."""
    from ralph.plan.proven import proven

    plan.doc.freeze()
    proven(data, plan.doc)
    _READ.keep(data, plan)


class _Shared:
    """The plans read lately in this process, by their exact bytes (not the file's mtime: a plan
    rewritten within one clock tick is still seen). A loop reads its plan many times per step: with
    10,000 finished tasks beside the work, loading it each time was most of the loop's own CPU."""

    SIZE = 4  # one plan per worktree the loop reads, and a few versions of it

    def __init__(self) -> None:
        import threading

        self.plans: dict[bytes, Plan] = {}
        self.lock = threading.Lock()  # VERIFY's threads read too

    def get(self, data: bytes) -> Plan | None:
        # Compared with the few kept, not looked up: each read's bytes are a new object, whose
        # hash is a pass over a long plan (10,000 finished tasks) three times a compare's.
        with self.lock:
            kept = list(self.plans.items())
        return next((plan for known, plan in reversed(kept) if known == data), None)

    def keep(self, data: bytes, plan: Plan) -> Plan:
        with self.lock:
            self.plans[data] = plan
            while len(self.plans) > self.SIZE:
                del self.plans[next(iter(self.plans))]  # the oldest
        return plan


_READ = _Shared()


def vouch(root: Path, data: bytes) -> None:
    """`data`, now root's plan.jsonl, was proven valid in this process (or read here, which proved
    it, though the proven contents kept may have let it go since): root's own commands (a
    verifier's, in a checkout the loop made) then need not validate it again (ralph.store.validcache)."""
    from ralph.plan.proven import is_proven
    from ralph.store import validcache

    if is_proven(data) or _READ.get(data) is not None:  # a plan read here was loaded strictly
        validcache.remember(root, data)


def load_checked(root: Path, data: bytes) -> Document:
    """Load strictly, unless these exact bytes were proven valid before (then only parse)."""
    from ralph.plan.proven import is_proven
    from ralph.store import validcache

    if is_proven(data):  # this process proved it: no digest of a long plan to compare
        return load(data, PLAN_NAME)
    if _READ.get(data) is not None:  # read here, so proven here, though let go of since
        return load(data, PLAN_NAME, trusted=True)
    if validcache.known_valid(root, data):
        return load(data, PLAN_NAME, trusted=True)
    doc = load(data, PLAN_NAME)
    validcache.remember(root, data)
    return doc
