"""The construct loop's side of runners on several machines sharing one git remote
(`ralph construct --remote origin`): the loop asks for a task before each build, hands the build
back after it, and gives back what it still holds when the run ends. The work itself is in
ralph.usecases.claims (fetch, claim by a pushed plan commit, publish, release); this only adds the
waiting: while other runners hold the work that is left, a runner polls the remote instead of
ending its run, and takes a task over once its claim goes stale."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ralph import clock
from ralph.errors import RemoteError
from ralph.plan.document import Record
from ralph.plan.loader import load
from ralph.plan.plan import Plan
from ralph.plan.records import is_done
from ralph.store.git import Repo
from ralph.store.reader import PLAN_NAME as PLAN_FILE
from ralph.store.reader import read_plan
from ralph.store.remote import Remote
from ralph.usecases import claims

if TYPE_CHECKING:
    from ralph.loop.observe.journal import Journal

T = TypeVar("T")
POLL_S = (0.25, 2.0)  # the first wait for other runners' work, and the longest (it doubles)


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
        journal: Journal | None = None,
    ):
        """`check` raises when the run must stop waiting (its time budget); `journal` is told, when
        the run ends, how many pushes of the shared branch the remote took and how many lost a race."""
        self.root, self.spec, self.ttl_s = root, spec, ttl_s
        self.runner = runner or claims.default_runner()
        self.remote = Remote(Repo(root), remote)
        self.check, self.sleep, self.journal = check, sleep, journal
        self._claimed_next: str | None = None  # claimed in the push that published the last build
        self._held: dict[str, str] = {}  # task -> the remote head when its build was given back

    # --- the stages' coordinator (ralph.loop.share.coordinator.Coordinator) ---------------------------
    def plans(self) -> bool:
        return self.before_plan()

    def planned(self) -> None:
        self.after_plan()

    def checks(self, met: Callable[[Plan], bool]) -> bool:
        return self.before_check(met)

    def checked(self) -> None:
        self.after_check()

    def each(
        self,
        stage: str,
        found: list[T],
        fresh: Callable[[str], T | None],
        items: Callable[[Plan], list[Record]],
    ) -> Iterator[T]:
        """Each item by one runner only: claimed, run, published, then the next."""
        return self._each(lambda skip: self.before_item(stage, items, skip), self.after_item, fresh)

    def verify_batches(self, limit: int) -> Iterator[list[str] | None]:
        """Up to `limit` done tasks claimed at a time, and claiming goes on while any is free: a new
        iteration per batch would cost a fetch for every other stage's claim first. A task
        verified here once (no verdict) waits for the next stage."""
        seen: set[str] = set()
        claimed = self.before_verify(limit, skip=seen)
        while claimed:
            seen.update(claimed)
            yield claimed
            claimed = self.after_verify(claimed, limit, skip=seen)  # the next batch, in the same push

    def next_builds(self, ready: Callable[[], list[str]]) -> list[str]:
        """One task at a time, claimed first: the claim's push decides who builds it."""
        task_id = self.before_build()
        return [task_id] if task_id else []

    def built(self, task_ids: list[str], max_attempts: int) -> dict[str, list[str]]:
        conflicts = {task_id: self.after_build(task_id, max_attempts) for task_id in task_ids}
        return {task_id: files for task_id, files in conflicts.items() if files}

    def release(self, quietly: bool = False) -> None:
        try:
            if not quietly:
                self.release_all()
                return
            self.remote.retries = 0  # a remote that just failed every retry is tried once more only
            with contextlib.suppress(RemoteError):
                self.release_all()
        finally:
            if self.journal is not None:
                self.journal.event("remote_pushes", won=self.remote.won, lost=self.remote.lost)

    def _each(
        self,
        claim: Callable[[Collection[str]], str | None],
        publish: Callable[[str], None],
        fresh: Callable[[str], T | None],
    ) -> Iterator[T]:
        seen: set[str] = set()
        while item_id := claim(seen):
            seen.add(item_id)
            item = fresh(item_id)  # as the claim's fetch brought it in
            if item is not None:
                yield item
            publish(item_id)

    def before_build(self) -> str | None:
        """The task this runner builds next, claimed on the remote; None when no task is left to
        build (the rest is done, or waits for VERIFY, DECOMPOSE or a person)."""
        if self._claimed_next is not None:
            task_id, self._claimed_next = self._claimed_next, None
            return task_id
        wait = POLL_S[0]
        while True:
            held = self._held_back()
            task = claims.claim_next(self.root, self.spec, self.runner, self.remote, self.ttl_s, skip=held)
            if task is not None:
                claimed: str = task["id"]
                return claimed
            if not self._others_hold_work():
                return self._held_as_it_is(held)
            self.check()
            self.sleep(wait)
            wait = min(wait * 2, POLL_S[1])

    def others_published(self) -> bool:
        """The remote's head (fetched now) has changes to code HEAD lacks: another runner published
        a build since this one last caught up (claims and verdicts change plan.jsonl alone)."""
        remote_head = self.remote.fetch()
        repo = self.remote.repo
        head = repo.head()
        if remote_head is None or head is None or remote_head == head:
            return False
        code, _, _ = repo.attempt("merge-base", "--is-ancestor", remote_head, head)
        if code == 0:
            return False
        return _code_differs(repo, f"{head}...{remote_head}")

    def others_building(self) -> bool:
        """Another runner holds a live claim on a task of the spec it has not yet built, as the
        remote head last fetched has it (others_published fetched it just now)."""
        plan = self._remote_plan()
        return plan is not None and any(
            claim.get("t") == "task" and not is_done(claim) for claim in self._others_live_claims(plan)
        )

    def hold(self, task_id: str) -> None:
        self._held[task_id] = self._fetched_head() or ""

    def _held_back(self) -> set[str]:
        """The tasks given back while others' work was in flight, as long as nobody has published
        code since (claims and verdicts change plan.jsonl alone: they free no one)."""
        head = self._fetched_head()
        if head:
            self._held = {task_id: at for task_id, at in self._held.items() if not self._code_moved(at, head)}
        return set(self._held)

    def _code_moved(self, since: str, head: str) -> bool:
        return bool(since) and self.remote.repo.code_differs(since, head)  # trees cached by commit

    def _fetched_head(self) -> str | None:
        return self.remote.repo.commit_of(self.remote.tracking_ref)

    def _remote_plan(self) -> Plan | None:
        head = self._fetched_head()
        data = self.remote.repo.file_at(head, PLAN_FILE) if head else None
        return Plan(load(data, PLAN_FILE)) if data is not None else None

    def draft_kept(self, branch: str) -> None:
        """A draft (ralph.store.drafts) goes to the remote as well, for whoever builds its task next;
        a push the remote does not take loses nothing kept here."""
        self.remote.push_branch(branch)

    def fetch_draft(self, branch: str) -> str | None:
        """A draft another runner kept and pushed, fetched from the remote; its ref, or None."""
        return self.remote.fetch_branch(branch)

    def draft_dropped(self, branch: str, commit: str) -> None:
        """The remote's copy of a deleted draft goes too, while it is the commit this runner
        pushed (a lease): a commit someone pushed on it keeps it."""
        if commit:
            self.remote.delete_branch(branch, commit)

    def before_plan(self) -> bool:
        """Whether this runner runs PLAN: it won the claim on the spec record. The others wait
        until the tasks it made are on the remote (False), or until its claim goes stale."""
        wait = POLL_S[0]
        while True:
            if claims.claim_plan(self.root, self.spec or "", self.runner, self.remote, self.ttl_s):
                return True
            if read_plan(self.root).planned(self.spec or ""):
                return False
            self.check()
            self.sleep(wait)
            wait = min(wait * 2, POLL_S[1])

    def after_plan(self) -> None:
        """PLAN's tasks are committed: bring in the remote, free the spec record, push."""
        claims.publish(self.root, self.spec or "", self.runner, self.remote)

    def before_check(self, met: Callable[[Plan], bool]) -> bool:
        """Whether this runner runs the spec check: only a runner holding nothing, and only one,
        the one that claims the spec record for it. The others wait while it (or any runner)
        holds something of the spec, then go on with what the check added, or end COMPLETE when
        it found the spec met (`met`: a check found nothing with this code and spec)."""
        wait = POLL_S[0]
        while True:
            if claims.claim_check(self.root, self.spec or "", self.runner, self.remote, met, self.ttl_s):
                return True
            plan = read_plan(self.root)  # as the remote has it: the claim brought it in
            if (
                plan.task_views(self.spec)
                or plan.issues(self.spec)
                or met(plan)
                or not self._others_hold_work()
            ):
                return False
            self.check()
            self.sleep(wait)
            wait = min(wait * 2, POLL_S[1])

    def after_check(self) -> None:
        """The check is committed: bring in the remote, free the spec record, push."""
        claims.publish(self.root, self.spec or "", self.runner, self.remote)

    def before_item(
        self, stage: str, items: Callable[[Plan], list[Record]], skip: Collection[str] = frozenset()
    ) -> str | None:
        """The item of `stage` this runner runs next (one of `items`, not one of `skip`: those it
        already ran in this stage), claimed on the remote; None: none free."""
        what = f"to {stage.lower()}"  # "to investigate", "to decompose"
        return claims.claim_item(self.root, self.runner, self.remote, items, what, self.ttl_s, skip)

    def after_item(self, item_id: str) -> None:
        """The item's run is committed: bring in the remote, free what is left claimed, push."""
        claims.publish(self.root, item_id, self.runner, self.remote)

    def before_verify(self, limit: int, skip: Collection[str] = frozenset()) -> list[str]:
        """The done tasks this runner verifies now (at most `limit`, none of `skip`: those it
        verified already in this stage), claimed on the remote."""
        return claims.claim_to_verify(self.root, self.spec, self.runner, self.remote, limit, self.ttl_s, skip)

    def after_verify(self, task_ids: list[str], limit: int, skip: Collection[str] = frozenset()) -> list[str]:
        """VERIFY's verdicts are committed: bring in the remote, free what is left claimed, and
        claim the next batch (at most `limit`, none of `skip`) in the same push; returns it."""
        then = claims.NextToVerify(
            self.spec, self.runner, limit, self.ttl_s, skip, self.remote.claim_clock.age_s
        )
        claims.publish_all(self.root, task_ids, self.runner, self.remote, then=then)
        return then.chosen

    def after_build(self, task_id: str, max_attempts: int = 3) -> list[str]:
        """The build is committed (passed or not): bring in the remote, free the task, claim the
        next one in the same push (before_build hands it out), push. Returns the files its changes
        conflict in with what another runner pushed meanwhile (none: published); then the build
        is undone here and the task goes back to be built again, on the remote too. A task
        another runner took over meanwhile is theirs: this build is kept as a patch and undone."""
        from ralph.errors import CodeConflict

        if claims.taken_over(self.root, task_id, self.runner, self.remote):
            # Another runner took the task over meanwhile (this one looked dead): its build stands,
            # this one's is kept as a patch and undone here.
            claims.withdraw_conflicting(self.root, task_id, self.runner, self.remote, [], max_attempts)
            return []
        ages, held = self.remote.claim_clock.age_s, self._held_back()
        then = claims.NextTask(self.spec, self.runner, self.ttl_s, ages, skip=held)
        try:
            claims.publish(self.root, task_id, self.runner, self.remote, then=then)
            self._claimed_next = then.chosen["id"] if then.chosen else None
        except CodeConflict as exc:
            claims.withdraw_conflicting(self.root, task_id, self.runner, self.remote, exc.files, max_attempts)
            return exc.files
        return []

    def release_all(self) -> list[str]:
        """The run ends: every claim of this runner goes back, and its commits are pushed."""
        return claims.release_all(self.root, self.runner, self.remote)

    def _held_as_it_is(self, held: set[str]) -> str | None:
        """Nobody else's work can move the code now, and no VERIFY waits: a task held for code to
        come is built on the code as it is (its failure counts), rather than left unbuilt."""
        if not held or self._verify_waits(read_plan(self.root)):
            return None
        again = claims.claim_next(self.root, self.spec, self.runner, self.remote, self.ttl_s)
        return again["id"] if again is not None else None

    def _verify_waits(self, plan: Plan) -> bool:
        """A done task of the spec nobody has claimed to verify."""
        done = [task for task in plan.tasks() if self._in_spec(task) and is_done(task)]
        return any(not task.get("claimed_by") for task in done)

    def _others_hold_work(self) -> bool:
        """Whether another runner holds a live claim on a task of the spec (its build may free the
        tasks that depend on it; its VERIFY may reject it) while no done task waits for a VERIFY
        of this runner's."""
        plan = read_plan(self.root)
        if self._verify_waits(plan):
            return False  # VERIFY has work: go on to it
        return any(True for _ in self._others_live_claims(plan))

    def _others_live_claims(self, plan: Plan) -> Iterator[Record]:
        """Other runners' claims in the spec younger than the TTL: a task, an issue (its tasks to
        come) or the spec (its PLAN)."""
        ttl = plan.claim_ttl_s() if self.ttl_s is None else self.ttl_s
        stamp = clock.now()
        for claim in plan.claims():
            if claim["claimed_by"] == self.runner or not self._in_spec(claim):
                continue
            age = self.remote.claim_clock.age_s(claim, stamp)
            if age is not None and age < ttl:
                yield claim

    def _in_spec(self, task: Record) -> bool:
        spec = task.get("path") if task.get("t") == "spec" else task.get("spec")
        return self.spec is None or spec in (None, self.spec)


def _code_differs(repo: Repo, *revisions: str) -> bool:
    """Whether the diff of `revisions` changes any file but plan.jsonl (claims and verdicts change
    plan.jsonl alone). Listed and filtered here: ralph's git runs with literal pathspecs, in which
    `:(exclude)plan.jsonl` names a file of that name and excludes nothing."""
    return bool(set(repo.paths("diff", "--name-only", "-z", *revisions)) - {PLAN_FILE})
