"""The construct loop's side of runners on several machines sharing one git remote
(`ralph construct --remote origin`): the loop asks for a task before each build, hands the build
back after it, and gives back what it still holds when the run ends. BUILD's and VERIFY's tasks
are claimed by ref (ralph.usecases.claim_refs: one create-only ref per task, beside the branch);
the spec (PLAN, CHECK) and single items (INVESTIGATE, DECOMPOSE) by a pushed plan commit
(ralph.usecases.claims). Until a push of this runner's loses a race, each build goes out as
soon as it is committed; once one lost (others push too), builds are published in batches: a
build nobody waits for stays a local commit until its verdict (or PUBLISH_AFTER builds) goes out
with it, one push of the branch for the lot; a failed build, and a build other tasks depend on,
go out at once. While other runners
hold the work that is left, a runner polls the remote instead of ending its run, and takes a
task over once its claim goes stale."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from ralph import clock
from ralph.errors import GitError, RemoteError
from ralph.loop.share.coordinator import never
from ralph.plan import schedule
from ralph.plan.document import Record
from ralph.plan.plan import Plan
from ralph.plan.records import is_done, is_pending
from ralph.plan.stage_declarations import Place, StageDeclaration
from ralph.store.git import Repo
from ralph.store.reader import PLAN_NAME as PLAN_FILE
from ralph.store.reader import read_plan
from ralph.store.remote import ClaimRef, Remote
from ralph.usecases import batch_withdrawal, claim_refs, claims

if TYPE_CHECKING:
    from ralph.loop.observe.journal import Journal
    from ralph.loop.share.name_lock import NameLock

T = TypeVar("T")
# The first wait for other runners' work, and the longest (it doubles). A poll is a fetch: 16
# runners waiting on one 2-core machine spent 1.46 CPU-s per task with 2 s at most, 1.10 with 4 s.
# The longest wait is also how late a waiting runner sees the end others made, so where agent
# runs are short it shrinks to their pace (the median run of this run), never under FASTEST_POLL_S
# (a fetch costs some 10 ms of CPU: 1% of a core per waiting runner).
POLL_S = (0.25, 4.0)
FASTEST_POLL_S = 1.0
# While nothing moves on the remote (its branch, its claims), a waiting runner only fetches; it
# looks at the plan again after this long all the same, for the claims that went stale meanwhile.
REJUDGE_S = 30.0
# Builds held here unpublished at most: then they go out, verdicts or not. More in a push means
# fewer pushes of the one shared branch (the serial section of many runners), but a runner that
# dies loses more to a rebuild, and its builds meet others' changes later.
PUBLISH_AFTER = 8


class _TakenOver(Exception):
    """A claim of the batch being published was taken over by another runner meanwhile."""


class _WaitsForBatch(Exception):
    """A push of builds nobody waits for lost a race: they wait for the next batch."""


class Held(NamedTuple):
    """A task whose build was given back: the remote head then, and the tasks other runners were
    building then (it waits for them)."""

    at: str
    waits_for: frozenset[str]


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
        self.remote.with_claims = True  # every fetch brings the claim refs (claim_refs)
        self._held: dict[str, Held] = {}  # the tasks whose builds were given back
        # task -> (its claim commit, the held claim commit replacing it: ClaimRef.held): the push
        # that gives a held task back leaves its claim on the remote marked held, so that no other
        # runner builds it before the work it waits for is published; made once per claim.
        self._hold_marks: dict[str, tuple[str, str]] = {}
        self._marking: dict[str, tuple[str, str]] = {}  # the marks of the round being pushed
        self._tried_as_is: set[tuple[str, str]] = set()  # (task, code) built as it was (_held_as_it_is)
        self._mine: dict[str, str] = {}  # task -> this runner's claim commit on its claim ref
        self._took_over: dict[str, ClaimRef] = {}  # task -> the stale claim this runner replaced
        self._recorded_takeovers: list[str] = []  # those the round being pushed records
        self._unpublished: list[str] = []  # built and committed here, not pushed yet
        # A look at the remote just made and not yet built on by a claim (join's; a spec claim's
        # that found nothing to claim): the next claim builds on it instead of fetching again.
        self._looked = False
        # Whether a push of the branch lost a race in this run: from then on builds wait to go out
        # in batches, one push of the contended branch for many. Until then (a runner alone) each
        # goes out as it is committed: on the remote, safe from this machine, for others to use.
        # (Batching from the start measured 0.41x/0.59x of one runner's wall at 8/16 runners;
        # going back to publishing at once after a clean push, 0.48x/0.72x.)
        self._contended = False
        self._max_attempts = 3  # BUILD's, as the last build handed back said
        self._name: NameLock | None = None

    def hold_name(self) -> None:
        """This runner's name, held on this host for the run (ralph.loop.share.name_lock): Busy when
        another live run holds it against the same remote branch."""
        from ralph.loop.share.name_lock import NameLock

        code, url, _ = self.remote.repo.attempt("remote", "get-url", self.remote.name)
        self._name = NameLock(url.strip() if code == 0 else self.remote.name, self.remote.branch, self.runner)

    def join(self) -> None:
        """Bring this clone up to the remote before the run records its start (its review base):
        a runner that starts after others finished the spec then starts where they left it, and
        never reviews their change again (a stale clone's start was the base of a second review,
        every aspect paid again, by each runner started late). The first claim builds on this look."""
        self._catch_up()
        self._looked = True

    # --- the stages' coordinator (ralph.loop.share.coordinator.Coordinator) ---------------------------
    def claims_spec(self, stage: StageDeclaration, met: Callable[[Plan], bool] = never) -> bool:
        """The spec record is claimed by a pushed plan commit: before the iterations while it is
        unplanned, after them while nothing of it is open or held. Right after a look (the run's
        first, or the spec check's claim that found another runner had checked), the claim builds
        on it: a runner ending after others fetched once for the check and once for the review."""
        fetched, self._looked = self._looked, False
        if stage.place is Place.BEFORE:
            return self.before_plan(fetched)
        return self.before_check(met, fetched)

    def spec_done(self) -> None:
        """Bring in the remote, free the spec record, push."""
        claims.publish(self.root, self.spec or "", self.runner, self.remote)

    def each(
        self,
        stage: str,
        found: list[T],
        fresh: Callable[[str], T | None],
        items: Callable[[Plan], list[Record]],
    ) -> Iterator[T]:
        """Each item by one runner only: claimed, run, published, then the next."""
        self._looked = False
        return self._each(lambda skip: self.before_item(stage, items, skip), self.after_item, fresh)

    def batches(self, limit: int) -> Iterator[list[str] | None]:
        """Up to `limit` done tasks at a time: first those this runner built (it holds their
        claims), their builds and verdicts published in one push once all are judged; then
        published done tasks no live claim holds, claimed by ref, each batch's verdicts pushed
        before the next is claimed. A task verified here once (no verdict) waits for the next
        stage."""
        self._looked = False
        seen: set[str] = set()
        self._adopt_own()
        while True:
            own = self._own_done(seen)
            batch = own[:limit] or self._claim_to_verify(limit, seen)
            if not batch:
                return
            seen.update(batch)
            yield batch
            if not self._own_done(seen):
                self._publish()

    def next_items(self, ready: Callable[[], list[str]]) -> list[str]:
        """One task at a time, claimed first: the claim ref's push decides who builds it. `ready`
        (the build stage's, on this clone's plan) is asked before each claim: a task a person must
        answer for first (a failure that survived a split), or one VERIFY keeps rejecting, is
        dealt with there and never claimed (one runner built such a task 195 times a minute)."""
        task_id = self.before_build(ready)
        return [task_id] if task_id else []

    def finished(self, task_ids: list[str], max_attempts: int) -> dict[str, list[str]]:
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
            if self._name is not None:  # the claims are given back: the name may be used again
                self._name.release()
            if self.journal is not None:
                self.journal.event(
                    "remote_pushes",
                    won=self.remote.won,
                    lost=self.remote.lost,
                    claims_won=self.remote.claims_won,
                    claims_lost=self.remote.claims_lost,
                    fetches=self.remote.fetches,
                )

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

    def before_build(self, ready: Callable[[], list[str]] | None = None) -> str | None:
        """The task this runner builds next, claimed on the remote; None when no task is left to
        build now (the rest is done, claimed by others, waits for VERIFY, DECOMPOSE or a person,
        or for this runner's own builds to be published). `ready`: the tasks the build stage
        would build, in its order, as this clone's plan has them once caught up."""
        if len(self._unpublished) >= PUBLISH_AFTER:
            self._publish()
        wait, fetched = POLL_S[0], False
        self._adopt_own()
        while True:
            held = self._held_back()
            task_id = self._claim_build(skip=held, fetched=fetched, ready=ready)
            if task_id is not None:
                return task_id
            if self._unpublished:
                return None  # VERIFY them, publish them, then look again
            if not self._others_hold_work():
                return self._held_as_it_is(held, ready)
            wait, fetched = self._wait_for_change(wait), True

    def _claim_build(
        self,
        skip: Collection[str] = frozenset(),
        fetched: bool = False,
        as_is: bool = False,
        ready: Callable[[], list[str]] | None = None,
        last: Collection[str] = frozenset(),
    ) -> str | None:
        """Claim a task to build by ref, after bringing in the remote (when nothing of this
        runner's waits to be published, whose code could conflict: then only a fetch; none when
        the wait for a change just `fetched`: sixteen waiting runners fetched twice per wake).
        `last`: tasks tried after the others. A held claim is free once its wait is over
        (`_lifted`), or `as_is`: nothing can end it;
        never while builds of this runner's wait to be published, as this clone has not caught
        up with the code its wait was for (built here, it failed again on the same code, and
        that failure counted)."""
        if not fetched and not self._looked:
            self.remote.fetch()
        self._looked = False
        if not self._unpublished:
            if not self._free_on_remote(skip, as_is):
                return None  # nothing to claim: no catch-up (a merge) for nothing
            self._catch_up(fetched=True)
        candidates = claim_refs.buildable(self.root, self.spec, self.remote, skip)
        if ready is not None:
            order = {task_id: n for n, task_id in enumerate(ready())}
            candidates = sorted(
                (task for task in candidates if task["id"] in order), key=lambda t: order[t["id"]]
            )
        candidates.sort(key=lambda task: task["id"] in last)  # stable: the order as it was otherwise
        won = claim_refs.claim_task(
            candidates,
            self.runner,
            self.remote,
            self._ttl(),
            claim_refs.to_build,
            alone=not self._contended,
            lifted=self._lifted_here(as_is),
        )
        return self._won(won)

    def _free_on_remote(self, skip: Collection[str], as_is: bool = False) -> bool:
        """Whether the remote's plan (as just fetched) has a task ready to build that no other
        runner's live claim holds, none of `skip` (a held claim holds its task until its wait is
        over, or `as_is`). Waiting runners look here on every change others publish, and only
        catch up when there is something to claim."""
        plan = self._remote_plan()
        if plan is None:
            return True
        refs = self.remote.claim_refs()
        lifted = self._lifted_here(as_is)
        taken = {
            item for item in self._others_live_refs(plan) if not (refs[item].held and lifted(refs[item]))
        }
        held = taken | {claim["id"] for claim in self._others_live_claims(plan)}
        return any(
            task["id"] not in held and task["id"] not in skip
            for task in schedule.buildable(plan.tasks(), plan.accepted())
            if self._in_spec(task)
        )

    def _claim_to_verify(self, limit: int, skip: Collection[str]) -> list[str]:
        """Claim up to `limit` done tasks others published, none of `skip`, by ref."""
        if self._unpublished:
            return []
        self._catch_up()
        chosen: list[str] = []
        while len(chosen) < limit:
            candidates = claim_refs.done_to_verify(self.root, self.spec, {*skip, *chosen})
            won = self._won(
                claim_refs.claim_task(candidates, self.runner, self.remote, self._ttl(), claim_refs.to_verify)
            )
            if won is None:
                break
            chosen.append(won)
        return chosen

    def _won(self, claimed: claim_refs.Claimed | None) -> str | None:
        if claimed is None:
            return None
        self._mine[claimed.task_id] = claimed.commit
        if claimed.took_over is not None:
            self._took_over[claimed.task_id] = claimed.took_over
        return claimed.task_id

    def _adopt_own(self) -> None:
        """Claims this runner's name holds on the remote from a run before on this host (a
        restart): its own. Another host's claims under the same name are not (claim_refs.held_by)."""
        for item, claim in self.remote.claim_refs().items():
            if claim_refs.held_by(claim, self.runner):
                self._mine.setdefault(item, claim.commit)

    def _own_done(self, skip: Collection[str]) -> list[str]:
        """Done tasks here this runner holds the claim of (it built them), none of `skip`."""
        return [
            task["id"]
            for task in claim_refs.done_to_verify(self.root, self.spec, skip)
            if task["id"] in self._mine
        ]

    def _catch_up(self, fetched: bool = False) -> None:
        """Fetch (unless the caller just `fetched`), and bring this clone up to the remote head:
        nothing is pushed."""
        from ralph.usecases.sync import until_pushed

        until_pushed(
            self.root, self.remote, self.runner, lambda plan: None, str, idle_push=False, fetched=fetched
        )

    def _ttl(self) -> float:
        return read_plan(self.root).claim_ttl_s() if self.ttl_s is None else self.ttl_s

    def _drops(self, plan: Plan) -> dict[str, str]:
        """The claims this runner gives up in a push of `plan`: those on tasks it no longer has
        to do anything about there (accepted, gone, or back to pending: a failed build, a
        rejection). A done task's stays: this runner verifies it; so does a held one's (`_marks`).
        One another runner has replaced since (a held claim whose wait ended) is theirs."""
        done = {task["id"] for task in plan.tasks() if is_done(task)}
        return {
            item: commit
            for item, commit in claims.still_held(self.remote, self._mine).items()
            if item not in done and not (item in self._held and _pending(plan, item))
        }

    def _marks(self, plan: Plan) -> dict[str, tuple[str, str]]:
        """The claims a push of `plan` marks held (task -> (its claim commit, the held one)): those
        of this runner's tasks given back there to wait for others' work, not yet marked. Other
        runners see them held and leave the tasks until that work is published (three runners
        replaying a history built a task needing another's change up to three times, once each)."""
        marks: dict[str, tuple[str, str]] = {}
        refs = self.remote.claim_refs()
        for item, held in self._held.items():
            claim = refs.get(item)
            if (
                claim is None
                or claim.held
                or self._mine.get(item) != claim.commit
                or not _pending(plan, item)
            ):
                continue  # not this runner's claim as last fetched, marked already, or not given back
            if self._hold_marks.get(item, ("", ""))[0] != claim.commit:
                at, host = clock.now(), claim_refs.this_host()
                marked = self.remote.make_claim(item, self.runner, at, claim, host, (held.at, held.waits_for))
                self._hold_marks[item] = (claim.commit, marked)
            marks[item] = self._hold_marks[item]
        self._marking = marks
        return marks

    def _publish(
        self, extra: Collection[str] = (), may_wait: bool = False, ending: bool = False
    ) -> dict[str, list[str]]:
        """Push what this clone has (the builds waiting here, verdicts) with the claims it gives up,
        in one atomic push. A build whose claim another runner took over meanwhile yields: the
        unpublished builds are undone here, kept as a patch, and their tasks go back. A build whose
        code conflicts with what others pushed meanwhile: the same, the conflict recorded on the
        tasks whose builds changed those files. Returns those conflicts (task -> files).
        `may_wait`: nobody waits for these builds; when the push loses a race they stay here, to go
        out with a later batch, rather than race again (sixteen runners publishing their first
        builds at once lost 127 races in a row for 51 pushes won). `ending`: the run ends, and
        every claim this runner still holds goes in the same push."""
        from ralph.errors import CodeConflict
        from ralph.usecases.sync import ClaimChanges, until_pushed

        batch = [*self._unpublished, *(task for task in extra if task not in self._unpublished)]
        looked = self._contended
        if looked:
            self.remote.fetch()
        # else alone on the branch so far (no push of this run lost a race): the push goes out on
        # the head as last fetched and wins without a fetch first (on a hosted remote a round trip
        # of about a second per build). Its lease on each claim of the batch turns it away if
        # another runner took one over; a lost push looks then, as the look first would have.
        if self._taken_over(batch):
            return self._withdraw(batch, [])
        message = f"ralph: publish {', '.join(batch) or 'verdicts'} ({self.runner})"
        lost_before = self.remote.lost

        def drops(plan: Plan) -> dict[str, str]:
            # Each round's fetch brings the claims: one taken over since the last is a lost race
            # the branch's head does not show (the push's lease on it fails), not a refusal.
            if self._taken_over(batch):
                raise _TakenOver
            return claims.still_held(self.remote, self._mine) if ending else self._drops(plan)

        def lost() -> None:
            nonlocal looked
            if not looked:  # pushed without a look first: look now, as the look first would have
                looked = True
                self.remote.fetch()
                if self._taken_over(batch):
                    raise _TakenOver
            if may_wait:
                raise _WaitsForBatch

        try:
            until_pushed(
                self.root,
                self.remote,
                self.runner,
                self._record_takeovers,
                lambda _: message,
                after_lost=lost,
                fetched=True,  # just above, or alone on the branch so far
                claims=ClaimChanges(
                    drop=drops,
                    keep={task: self._mine[task] for task in batch if task in self._mine},
                    mark=None if ending else self._marks,
                ),
            )
        except CodeConflict as exc:
            return self._withdraw(batch, exc.files)
        except _TakenOver:
            return self._withdraw(batch, [])
        except _WaitsForBatch:
            self._unpublished = batch  # committed here, claims held: they go with the next push
            return {}
        finally:
            self._contended = self._contended or self.remote.lost > lost_before
        self._published()
        if ending:
            self._mine = {}
        return {}

    def _taken_over(self, batch: list[str]) -> bool:
        """Whether another runner took the claim of a task of `batch` over, as last fetched."""
        refs = self.remote.claim_refs()
        return any(
            task in self._mine and getattr(refs.get(task), "commit", None) != self._mine[task]
            for task in batch
        )

    def _published(self) -> None:
        # The claims as the push that just won left them here: those it dropped gone, those it
        # marked held moved, and those another runner replaced since are theirs.
        self._mine |= {item: marked for item, (_, marked) in self._marking.items()}
        self._mine, self._marking = claims.still_held(self.remote, self._mine), {}
        published = set(self._recorded_takeovers)  # the won push recorded them
        self._took_over = {
            item: claim
            for item, claim in self._took_over.items()
            if item in self._mine and item not in published
        }
        self._recorded_takeovers = []
        self._unpublished.clear()

    def _record_takeovers(self, plan: Plan) -> list[str] | None:
        """The takeovers of the tasks this push publishes, as the plan records them (`takeover`):
        the branch's history says who took which task over from whom."""
        stamp = clock.now()
        recorded = []
        for item, claim in self._took_over.items():
            if plan.find_task(item) is None and item not in plan.accepted():
                continue
            takeover = {
                "t": "takeover",
                "id": item,
                "by": self.runner,
                "at": stamp,
                "was_claimed_by": claim.runner,
            }
            if claim.claimed_at:
                takeover["was_claimed_at"] = claim.claimed_at
            plan.doc.append(takeover)
            recorded.append(item)
        self._recorded_takeovers = recorded  # this round's: a lost round records them again
        return recorded or None

    def _withdraw(self, batch: list[str], files: list[str]) -> dict[str, list[str]]:
        """The batch cannot be published: undone here (kept as a patch), its tasks back to be
        built; this runner's claims on them given up."""
        conflicting = batch_withdrawal.withdraw_batch(
            self.root, batch, self.runner, self.remote, files, self._max_attempts, dict(self._mine)
        )
        for task in batch:
            self._mine.pop(task, None)
            self._took_over.pop(task, None)
        self._unpublished.clear()
        return {task: files for task in conflicting}

    def _wait_for_change(self, wait: float) -> float:
        """Wait for other runners' work: poll the remote (a fetch: the branch and the claims) until
        either moved, or REJUDGE_S passed. Returns the next first wait. A poll that finds nothing
        new costs one fetch, not a catch-up and a look through the plan: sixteen runners waiting
        for the last builds spent more CPU looking than building."""
        before, slept = self._remote_state(), 0.0
        while True:
            self.check()
            self.sleep(wait)
            slept += wait
            wait = min(wait * 2, self._longest_wait())
            self.remote.fetch()
            if slept >= REJUDGE_S or self._remote_state() != before:
                return wait

    def _longest_wait(self) -> float:
        """POLL_S's longest wait, or this run's agent pace where that is shorter (FASTEST_POLL_S
        at least): others' work ends about as often as agent runs do."""
        pace = self.journal.agent_pace_s() if self.journal is not None else None
        return POLL_S[1] if pace is None else min(POLL_S[1], max(FASTEST_POLL_S, pace))

    def _remote_state(self) -> tuple[str | None, frozenset[tuple[str, str]]]:
        """The remote's branch head and claim refs as last fetched."""
        claims = frozenset((item, claim.commit) for item, claim in self.remote.claim_refs().items())
        return self.remote.head(), claims

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

    def shared_head(self) -> str | None:
        return self.remote.head()

    def others_building(self) -> bool:
        """Work a build here may lack is under way or waits to be (`_others_work`), as the remote
        head last fetched has it (others_published fetched it just now)."""
        return bool(self._others_work())

    def _others_work(self) -> set[str]:
        """The tasks of the spec claimed and not published whose change a build here may lack:
        other runners' (being built, or held to wait in turn) and this runner's own held ones (a
        task held for want of another's change fails again until that is in; counted, it was
        split after two builds for nothing)."""
        refs = self.remote.claim_refs()
        return {
            task
            for task in self._claimed()
            if task not in refs or refs[task].held or not claim_refs.held_by(refs[task], self.runner)
        }

    def _claimed(self) -> set[str]:
        """The tasks of the spec claimed and not published yet, as last fetched: by a live claim
        ref (anyone's, held or not) or by another runner's live claim in the plan."""
        plan = self._remote_plan()
        if plan is None:
            return set()
        by_ref = (plan.find_task(item) for item in self._live_refs(plan, mine=True))
        claimed = {task["id"] for task in by_ref if task is not None and not is_done(task)}
        live = self._others_live_claims(plan)
        return claimed | {claim["id"] for claim in live if claim.get("t") == "task" and not is_done(claim)}

    def hold(self, task_id: str) -> None:
        waits_for = self._others_work() - {task_id}
        self._held[task_id] = Held(self.remote.head() or "", frozenset(waits_for))

    def _held_back(self) -> set[str]:
        """The tasks given back while others' work was in flight, until their wait is over
        (`_waited`). Each stays claimed on the remote, marked held (`_marks`), until then."""
        head = self.remote.head()
        if head:
            waiting = any(held.waits_for for held in self._held.values())
            claimed = self._claimed() if waiting else set()
            self._held = {
                task_id: held
                for task_id, held in self._held.items()
                if not self._waited(held.at, held.waits_for, head, claimed)
            }
        return set(self._held)

    def _lifted_here(self, as_is: bool) -> Callable[[ClaimRef], bool]:
        """Whether a held claim may be taken here now (`_claim_build`)."""
        if self._unpublished:
            return lambda claim: False
        return (lambda claim: True) if as_is else self._lifted

    def _lifted(self, claim: ClaimRef) -> bool:
        """Whether a held claim's wait is over (`_waited`), as the remote was last fetched. A
        commit this clone cannot read (nothing ralph made) ends the wait rather than keep it."""
        head = self.remote.head()
        if claim.held_at is None or head is None:
            return False
        try:
            return self._waited(claim.held_at, claim.waits_for, head, self._claimed())
        except GitError:
            return True

    def _waited(self, at: str, waits_for: frozenset[str], head: str, claimed: set[str]) -> bool:
        """Whether a build given back at remote head `at` while `waits_for` were being built has
        waited enough: code was published since (claims and verdicts change plan.jsonl alone:
        they free no one), and none of those is claimed still, built or held (the change it
        failed for want of is most likely one of theirs, and another runner's publish of other
        code would not bring it; one of them given back to wait in turn has not brought it yet)."""
        return not (waits_for & claimed) and self._code_moved(at, head)

    def _code_moved(self, since: str, head: str) -> bool:
        return bool(since) and self.remote.repo.objects.code_differs(since, head)  # trees cached by commit

    def _remote_plan(self) -> Plan | None:
        return claim_refs.remote_plan(self.remote)

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

    def before_plan(self, fetched: bool = False) -> bool:
        """Whether this runner runs PLAN: it won the claim on the spec record. The others wait
        until the tasks it made are on the remote (False), or until its claim goes stale.
        `fetched`: the remote was fetched just before."""
        wait = POLL_S[0]
        while True:
            if claims.claim_plan(self.root, self.spec or "", self.runner, self.remote, self.ttl_s, fetched):
                return True
            if read_plan(self.root).planned(self.spec or ""):
                self._looked = True  # the claim's round just brought the remote in
                return False
            wait = self._wait_for_change(wait)
            fetched = True  # the wait's last poll: the claim builds on it instead of fetching again

    def before_check(self, met: Callable[[Plan], bool], fetched: bool = False) -> bool:
        """Whether this runner runs the spec check: only a runner holding nothing, and only one,
        the one that claims the spec record for it. The others wait while it (or any runner)
        holds something of the spec, then go on with what the check added, or end COMPLETE when
        it found the spec met (`met`: a check found nothing with this code and spec). `fetched`:
        the remote was fetched just before."""
        wait = POLL_S[0]
        while True:
            if claims.claim_check(
                self.root, self.spec or "", self.runner, self.remote, met, self.ttl_s, fetched
            ):
                return True
            plan = read_plan(self.root)  # as the remote has it: the claim brought it in
            if (
                plan.task_views(self.spec)
                or plan.issues(self.spec)
                or met(plan)
                or not self._others_hold_work()
            ):
                self._looked = True  # the claim's round just brought the remote in
                return False
            wait = self._wait_for_change(wait)
            fetched = True  # the wait's last poll: the claim builds on it instead of fetching again

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

    def after_build(self, task_id: str, max_attempts: int = 3) -> list[str]:
        """The build is committed (passed or not). Once others push too (a push of this run's
        lost a race), a passed build nobody waits for stays here until its verdict (or
        PUBLISH_AFTER builds) goes out with it. Else it is published now, with every build waiting
        here, as are a failed one (its task goes back for whichever runner comes next) and one
        other tasks depend on. Returns the files its changes conflict in with what
        another runner pushed meanwhile (none: published, or waiting); then the builds were undone
        here and their tasks go back to be built again. A task another runner took over meanwhile
        is theirs: this build is kept as a patch and undone."""
        self._max_attempts = max_attempts
        plan = read_plan(self.root)
        task = plan.find_task(task_id)
        waits = task is not None and is_done(task) and not _needed(plan, task_id)
        if self._contended and waits:
            self._unpublished.append(task_id)
            return []
        return self._publish(extra=[task_id], may_wait=waits).get(task_id, [])

    def release_all(self) -> list[str]:
        """The run ends: every claim of this runner goes back, and its commits are pushed (builds
        not yet verified go out done, for any runner to verify)."""
        if self._unpublished:  # a build whose task was taken over, or that conflicts, yields first
            self._publish(ending=True)  # with the claims: one push, not one more to give them back
        mine = dict(self._mine)
        released = claims.release_all(self.root, self.runner, self.remote, refs=mine)
        self._mine, self._took_over, self._unpublished = {}, {}, []
        return released + [task for task in mine if task not in released]

    def _held_as_it_is(self, held: set[str], ready: Callable[[], list[str]] | None = None) -> str | None:
        """Nobody else's work can move the code now, and no VERIFY waits: a task held for code to
        come (here, or by another runner's held claim) is built on the code as it is rather than
        left unbuilt; first each that was not built so on this code yet (the others held may be
        what it lacks, and one of them may pass and move the code: a failure beside them is
        waived once per code, as serial builds are deferred), then again, its failure counted."""
        refs = self.remote.claim_refs()
        head = self.remote.head()
        if head is None or not (held or any(claim.held for claim in refs.values())):
            return None
        if self._verify_waits(read_plan(self.root)):
            return None
        code = self.remote.repo.objects.code_tree(head)
        tried = {task for task, on in self._tried_as_is if on == code}
        task_id = self._claim_build(
            fetched=True, as_is=True, ready=ready, last=tried
        )  # fetched: before_build's claim
        if task_id is not None:
            self._tried_as_is.add((task_id, code))
        return task_id

    def _verify_waits(self, plan: Plan) -> bool:
        """A done task of the spec nobody has claimed to verify (or this runner has)."""
        done = [task for task in plan.tasks() if self._in_spec(task) and is_done(task)]
        others = self._others_live_refs()
        return any(not task.get("claimed_by") and task["id"] not in others for task in done)

    def _others_hold_work(self) -> bool:
        """Whether another runner holds a live claim on a task of the spec (its build may free the
        tasks that depend on it; its VERIFY may reject it) while no done task waits for a VERIFY
        of this runner's."""
        plan = self._remote_plan() or read_plan(self.root)  # as just fetched: no catch-up to look
        if self._verify_waits(plan):
            return False  # VERIFY has work: go on to it
        refs = self.remote.claim_refs()  # a held claim is nobody's work under way (_held_as_it_is)
        return any(True for _ in self._others_live_claims(plan)) or any(
            not refs[item].held for item in self._others_live_refs(plan)
        )

    def _others_live_refs(self, plan: Plan | None = None) -> set[str]:
        """The tasks other runners hold live claim refs on (when `plan` is given: its tasks of the
        spec), as last fetched."""
        return self._live_refs(plan, mine=False)

    def _live_refs(self, plan: Plan | None, mine: bool) -> set[str]:
        """The tasks live claim refs are on (this runner's among them with `mine`; when `plan` is
        given, its tasks of the spec), as last fetched."""
        stamp, ttl = clock.now(), self._ttl()
        held = {
            item
            for item, claim in self.remote.claim_refs().items()
            if (mine or not claim_refs.held_by(claim, self.runner))
            and claim_refs.live(self.remote, claim, stamp, ttl)
        }
        if plan is None:
            return held
        return {item for item in held if (task := plan.find_task(item)) is not None and self._in_spec(task)}

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


def _pending(plan: Plan, task_id: str) -> bool:
    task = plan.find_task(task_id)
    return task is not None and is_pending(task)


def _needed(plan: Plan, task_id: str) -> bool:
    """Whether a task of the plan not yet done depends on `task_id`: its build goes out at once."""
    return any(task_id in task.get("deps", []) and not is_done(task) for task in plan.tasks())


def _code_differs(repo: Repo, *revisions: str) -> bool:
    """Whether the diff of `revisions` changes any file but plan.jsonl (claims and verdicts change
    plan.jsonl alone). Listed and filtered here: ralph's git runs with literal pathspecs, in which
    `:(exclude)plan.jsonl` names a file of that name and excludes nothing."""
    return bool(set(repo.paths("diff", "--name-only", "-z", *revisions)) - {PLAN_FILE})
