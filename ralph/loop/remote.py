"""The construct loop's side of runners on several machines sharing one git remote
(`ralph construct --remote origin`): the loop asks for a task before each build, hands the build
back after it, and gives back what it still holds when the run ends. The work itself is in
ralph.ops.claims (fetch, claim by a pushed plan commit, publish, release); this only adds the
waiting: while other runners hold the work that is left, a runner polls the remote instead of
ending its run, and takes a task over once its claim goes stale."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from ralph.ops import claims
from ralph.plan.plan import claim_age_s
from ralph.plan.records import is_pending
from ralph.store.git import Repo
from ralph.store.reader import read_plan
from ralph.store.remote import Remote

POLL_S = (0.5, 8.0)  # the first wait for other runners' work, and the longest (it doubles)


class RemoteCoordinator:
    def __init__(
        self,
        root: Path,
        spec: str | None,
        remote: str,
        runner: str | None = None,
        ttl_s: float | None = None,
        check: Callable[[], None] = lambda: None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        """`check` raises when the run must stop waiting (its time budget)."""
        self.root, self.spec, self.ttl_s = root, spec, ttl_s
        self.runner = runner or claims.default_runner()
        self.remote = Remote(Repo(root), remote)
        self.check, self.sleep = check, sleep

    def before_build(self) -> str | None:
        """The task this runner builds next, claimed on the remote; None when no task is left to
        build (the rest is done, or waits for VERIFY, DECOMPOSE or a person)."""
        wait = POLL_S[0]
        while True:
            task = claims.claim_next(self.root, self.spec, self.runner, self.remote, self.ttl_s)
            if task is not None:
                return task["id"]
            if not self._others_hold_work():
                return None
            self.check()
            self.sleep(wait)
            wait = min(wait * 2, POLL_S[1])

    def after_build(self, task_id: str) -> None:
        """The build is committed (passed or not): bring in the remote, free the task, push."""
        claims.publish(self.root, task_id, self.runner, self.remote)

    def release_all(self) -> list[str]:
        """The run ends: every claim of this runner goes back, and its commits are pushed."""
        return claims.release_all(self.root, self.runner, self.remote)

    def _others_hold_work(self) -> bool:
        """Whether a pending task of the spec is claimed by another runner, and that claim is live:
        its build may free the tasks that depend on it, or fail and free the task again."""
        plan = read_plan(self.root)
        ttl = plan.claim_ttl_s() if self.ttl_s is None else self.ttl_s
        stamp = claims.now()
        for task in plan.claims():
            if task["claimed_by"] == self.runner or not is_pending(task):
                continue
            if self.spec is not None and task.get("spec") not in (None, self.spec):
                continue
            age = claim_age_s(task, stamp)
            if age is not None and age < ttl:
                return True
        return False
