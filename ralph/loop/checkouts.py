"""The checkouts one VERIFY fork/join lends its verifiers: detached worktrees of HEAD, each made
once and lent to one verifier at a time, with a fresh copy of plan.jsonl each time.

A verifier runs the tests in a checkout of its own, never in the work tree or beside another
verifier. Making a worktree for every verifier cost a `git worktree add` and a removal per task
(a full checkout each, some 40 ms a task on a 200-file project); HEAD does not move while one
fork/join runs, so a checkout a verifier left as it found it serves the next. Between two
verifiers it is cleaned (`git clean -ffdx`: what the tests left, ignored files too, as a fresh
checkout would have none) and then checked: it is still this repository's worktree at the same
commit, detached, with nothing changed but its copy of the plan. Anything else (a violation, a
kill, a folder replaced or gone) and it is removed instead of lent again. Every checkout is
recorded as ralph's before it is made (ralph.store.owned) and removed when the fork/join ends,
whatever happened; a kill in between leaves the record, and the next start removes it."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ralph.loop.plan_access import PLAN_FILE
from ralph.store.git import Repo
from ralph.store.owned import Owned

if TYPE_CHECKING:
    from ralph.loop.work_tree import WorkTree


@dataclass
class Checkout:
    """One checkout: its repository, the commit it holds, and its record as ralph's."""

    repo: Repo
    head: str | None
    owned: Owned

    @property
    def path(self) -> Path:
        return self.repo.root


class Checkouts:
    """Lends checkouts of HEAD (see the module's text); `close` removes every one."""

    def __init__(self, tree: WorkTree):
        self.tree = tree
        self._free: list[Checkout] = []
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        self.made = 0  # how many were made (the rest of the loans reused one)

    @contextmanager
    def lend(self) -> Iterator[Repo]:
        """A checkout of HEAD holding plan.jsonl as the work tree has it now, for one verifier."""
        with self._lock:
            checkout = self._free.pop() if self._free else None
        if checkout is None:
            checkout = self.tree.make_checkout(f"verify-{next(self._numbers)}")
            self.made += 1
        reusable = False
        try:
            (checkout.path / PLAN_FILE).write_bytes((self.tree.root / PLAN_FILE).read_bytes())
            yield checkout.repo
            reusable = self._as_found(checkout)
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

    def _as_found(self, checkout: Checkout) -> bool:
        """Cleaned for the next verifier, and still fit for one: this repository's worktree at
        its commit, detached, nothing changed but plan.jsonl. Checked, not assumed: the folder
        could have been replaced by a link to somewhere that `git clean` must never touch."""
        path = checkout.path
        if path.is_symlink() or not path.is_dir() or not checkout.repo.links_here():
            return False
        if not self.tree.registered(path):
            return False
        checkout.repo.git("clean", "-ffdxq")
        head, branch, changed = checkout.repo.work_state()
        return head == checkout.head and branch is None and changed <= {PLAN_FILE}
