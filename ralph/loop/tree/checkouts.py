"""The checkouts one VERIFY fork/join lends its verifiers: detached worktrees of HEAD, each made
once and lent to one verifier at a time, with a fresh copy of plan.jsonl each time.

A verifier runs the tests in a checkout of its own, never in the work tree or beside another
verifier. Making a worktree for every verifier cost a `git worktree add` and a removal per task
(a full checkout each, some 40 ms a task on a 200-file project); HEAD does not move while one
fork/join runs, so a checkout a verifier left as it found it serves the next. Whether it did is
VERIFY's finding from the checkout's state after the run (`Loan.unchanged`: same commit, still
detached, nothing changed but its copy of the plan). Such a checkout is cleaned (`git clean
-ffdx`: what the tests left, ignored files too, as a fresh checkout has none) once it is checked
to be still this repository's worktree at its path, and lent again; cleaning changes no tracked
file, so the next verifier starts from a state known without asking git. Any other checkout (a
violation, a folder replaced or gone, a loan ended by an exception) is removed instead. Every
checkout is recorded as ralph's before it is made (ralph.store.owned) and removed when the
fork/join ends, whatever happened; a kill in between leaves the record, and the next start
removes it."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ralph.errors import GitError
from ralph.loop.runs.permissions import Snapshot
from ralph.loop.tree.plan_access import PLAN_FILE
from ralph.store import reader
from ralph.store.git import Repo
from ralph.store.lock import RALPH_FILES
from ralph.store.owned import Owned

if TYPE_CHECKING:  # what the lender needs of the work tree (tree.work_tree, which uses this module)
    from typing import Protocol

    class WorkTree(Protocol):
        root: Path

        def make_checkout(self, label: str) -> Checkout: ...

        def remove_checkout(self, checkout: Checkout) -> None: ...

        def registered(self, path: Path) -> bool: ...


@dataclass
class Checkout:
    """One checkout: its repository, the commit it holds, and its record as ralph's."""

    repo: Repo
    head: str | None
    owned: Owned

    @property
    def path(self) -> Path:
        return self.repo.root


@dataclass
class Loan:
    """A checkout lent to one verifier. `start`: its state as lent, when known without asking git
    (a checkout lent before and cleaned since). The borrower sets `unchanged` once it has checked
    that the run left the checkout as it found it."""

    repo: Repo
    start: Snapshot | None = None
    unchanged: bool = False


class Checkouts:
    """Lends checkouts of HEAD (see the module's text); `close` removes every one."""

    def __init__(self, tree: WorkTree):
        self.tree = tree
        self._free: list[Checkout] = []
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)

    @contextmanager
    def lend(self) -> Iterator[Loan]:
        """A checkout of HEAD holding plan.jsonl as the work tree has it now, for one verifier."""
        with self._lock:
            checkout = self._free.pop() if self._free else None
        if checkout is not None:  # cleaned after its last loan: its state is known
            loan = Loan(checkout.repo, Snapshot(checkout.head, None, frozenset()))
        else:
            checkout = self.tree.make_checkout(f"verify-{next(self._numbers)}")
            loan = Loan(checkout.repo)
        reusable = False
        try:
            plan = (self.tree.root / PLAN_FILE).read_bytes()
            (checkout.path / PLAN_FILE).write_bytes(plan)
            reader.vouch(checkout.path, plan)  # its verifier's `ralph` commands need not check it again
            yield loan
            reusable = loan.unchanged and self._cleaned(checkout)
        finally:
            if reusable:
                with self._lock:
                    self._free.append(checkout)
            else:
                self.tree.remove_checkout(checkout)

    def close(self) -> None:
        """Every checkout not lent out is removed (each lent one goes when its loan ends)."""
        with self._lock:
            free, self._free = self._free, []
        for checkout in free:
            self.tree.remove_checkout(checkout)

    def _cleaned(self, checkout: Checkout) -> bool:
        """Cleaned for the next verifier, once checked to be still this repository's worktree at
        its path: the folder could have been replaced by a link to somewhere else, where `git
        clean` must never run."""
        path = checkout.path
        if path.is_symlink() or not path.is_dir() or not checkout.repo.worktrees.links_here():
            return False
        if not self.tree.registered(path):
            return False
        try:
            checkout.repo.git("clean", "-ffdxq")
        except GitError:  # removed instead, and the next verifier gets a new one
            return False
        return True


def replaced_or_removed(checkout: Repo) -> str | None:
    """Whether the agent lent the checkout removed it, or put something else in its place (a link
    to another folder, a repository of its own), where nothing may be read or run as its."""
    if checkout.root.is_symlink() or (checkout.root.is_dir() and not checkout.worktrees.links_here()):
        return "replaced its checkout"
    return None if checkout.root.is_dir() else "removed its checkout"


def snapshot(checkout: Repo) -> Snapshot:
    """A checkout's HEAD, branch and changed paths, ralph's own files (its lock, its temporary
    files, beside the plan copy) left out."""
    head, branch, changed = checkout.changes.work_state()
    dirty = {path for path in changed if not RALPH_FILES.fullmatch(path)}
    return Snapshot(head, branch, frozenset(dirty))
