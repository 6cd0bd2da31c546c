"""Claims by ref: how runners sharing a git remote split BUILD's and VERIFY's tasks without racing
on the shared branch. A claim is the ref `refs/ralph/claims/<task id>` on the remote, pushed
create-only (ralph.store.remote.Remote.push_claim): two runners that want one task race on that ref
alone, and runners that want different tasks never race at all. A claim older than the TTL is
taken over with a lease on the commit it replaces (the new claim commit's parent is the old one:
the ref's log tells the story). A claim goes in the push that publishes its task's outcome (a
verdict, a failed build given back), atomically with the branch: a task is never free on the
remote while its outcome is unpublished, and a runner that won a claim checks the branch fetched
after its win, so a task published meanwhile is never built again.

The branch carries what a person reads with `git log`: builds, verdicts, the runner that
published them, and takeovers (a `takeover` record in the plan, in the push that publishes the
task)."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Collection
from pathlib import Path

from ralph.clock import now
from ralph.plan import schedule
from ralph.plan.document import Record
from ralph.plan.loader import load
from ralph.plan.plan import Plan
from ralph.plan.records import is_done, is_pending
from ralph.store.reader import PLAN_NAME, read_plan
from ralph.store.remote import ClaimRef, Remote

WIDEST_PICK = 16  # after lost claim races, a runner picks among this many free tasks at most


@functools.cache
def this_host() -> str:
    """This machine's name, as claims record it (asked once: every round looks at every claim)."""
    import socket

    return socket.gethostname()


def held_by(claim: ClaimRef, runner: str) -> bool:
    """Whether the claim is `runner`'s on this host: its name, made here (by this run, or by a run
    before it that ended: one live run per name per host, ralph.loop.share.name_lock). A claim of
    that name made on another host is another runner's that shares the name; one with no host
    (made by a ralph before claims named theirs) is taken for this runner's, as then."""
    return claim.runner == runner and claim.host in (None, this_host())


def age_s(remote: Remote, claim: ClaimRef, stamp: str, remember: bool = True) -> float | None:
    """The claim's age by the rule every runner judges claims by (ralph.plan.reading.claim_age_s):
    the lesser of the age since its commit and since this clone first saw it."""
    return remote.claim_clock.judge(claim.record(), stamp, remember, committed_at=claim.committed_at).age_s


def live(remote: Remote, claim: ClaimRef, stamp: str, ttl: float) -> bool:
    age = age_s(remote, claim, stamp)
    return age is not None and age < ttl


def remote_plan(remote: Remote) -> Plan | None:
    """The plan on the remote head as last fetched (None: no such branch yet)."""
    data = remote.file_at_head(PLAN_NAME)
    return Plan(load(data, PLAN_NAME)) if data is not None else None


class Claimed:
    """What a runner won: the task, its claim commit, and the claim it took over (None: none)."""

    def __init__(self, task_id: str, commit: str, took_over: ClaimRef | None):
        self.task_id, self.commit, self.took_over = task_id, commit, took_over


def claim_task(
    candidates: list[Record],
    runner: str,
    remote: Remote,
    ttl: float,
    still: Callable[[Plan | None, str], bool],
    alone: bool = False,
    lifted: Callable[[ClaimRef], bool] = lambda claim: False,
) -> Claimed | None:
    """Claim one of `candidates` (tasks in their order of preference) by ref: one this runner holds
    already first (a restart under the same name), then a free one (no claim, or a stale one).
    The first try takes the first free task; after each lost race the pick is random among twice
    as many of the first free ones (up to WIDEST_PICK), so that runners that lost together spread
    over the tasks instead of racing for the next one in step. `still`: whether the task is still
    to do by the remote head's plan fetched after the win (None: no branch yet); when not
    (published meanwhile), the claim is given back and another picked. None: nothing free. The claim refs
    are as the last fetch brought them. `alone` (no push of the run lost a race yet): the claim is
    pushed with the branch held where it was last fetched, and won that way it needs no fetch
    after it (nothing can have been published meanwhile); turned away, the runner looks and tries
    again as usual (on a hosted remote a fetch is a round trip of about a second). A claim push
    that lost needs no look either: that ref is another runner's now, so the next pick is among
    the other free tasks of the last look, and a look comes only when none is left (sixteen runners
    started at once made a fetch per lost race, most of their claims' cost). A held claim (its
    build given back to wait for others' work: ClaimRef.held) is free once `lifted` says its
    wait is over, or once it is stale; whoever claims it then (its holder too) replaces it under
    a lease, and no takeover is recorded: its holder gave the task back."""
    losses, lost = 0, set[str]()  # lost: the tasks whose claim ref went to another since the look
    while True:
        stamp = now()
        refs = remote.claim_refs()
        for claim in refs.values():  # every claim in sight is noted: its age counts from now at most
            if not held_by(claim, runner):
                age_s(remote, claim, stamp)
        own = [
            task
            for task in candidates
            if (mine := refs.get(task["id"])) and held_by(mine, runner) and not mine.held
        ]
        if own:
            mine = refs[own[0]["id"]]
            return Claimed(mine.item, mine.commit, None)
        free = [
            task
            for task in candidates
            if task["id"] not in lost and _free(remote, refs.get(task["id"]), stamp, ttl, lifted)
        ]
        if not free and lost:
            remote.fetch()  # the claims as they are now: some of those lost may be free again
            lost.clear()
            continue
        if not free:
            return None
        pick = free[0] if not losses else random.choice(free[: min(WIDEST_PICK, 2**losses)])
        old = refs.get(pick["id"])
        commit = remote.make_claim(pick["id"], runner, stamp, replaces=old, host=this_host())
        branch_at = remote.head() if alone else None
        won = remote.push_claim(pick["id"], commit, old.commit if old else None, branch_at=branch_at)
        took_over = old if old is not None and not old.held else None
        if won and branch_at is not None:
            return Claimed(pick["id"], commit, took_over)  # the branch held: nothing published meanwhile
        if not won and branch_at is None:  # the ref alone was turned away: another runner's now
            losses += 1
            lost.add(pick["id"])
            continue
        remote.fetch()  # the claims as they are now, and the branch (a task published meanwhile)
        lost.clear()
        if branch_at is not None:
            alone = False  # the claim or the branch moved: try again as others do
        else:  # won, the branch not held: still to do, by the branch as it is now?
            if still(remote_plan(remote), pick["id"]):
                return Claimed(pick["id"], commit, took_over)
            remote.drop_claims({pick["id"]: commit})  # its outcome is published: not ours to do
            candidates = [task for task in candidates if task["id"] != pick["id"]]


def to_build(plan: Plan | None, task_id: str) -> bool:
    """Whether a BUILD claim on the task is still wanted by the remote head's plan: the task is
    pending there, or not there and never accepted (not published yet). An accepted task has no
    task record any more: a claim won just after its verdict went out must not build it again."""
    if plan is None:
        return True
    task = plan.find_task(task_id)
    return is_pending(task) if task is not None else task_id not in plan.accepted()


def to_verify(plan: Plan | None, task_id: str) -> bool:
    """Whether a VERIFY claim on the task is still wanted by the remote head's plan: done there
    (published, not judged)."""
    task = plan.find_task(task_id) if plan is not None else None
    return task is not None and is_done(task)


def _free(
    remote: Remote, claim: ClaimRef | None, stamp: str, ttl: float, lifted: Callable[[ClaimRef], bool]
) -> bool:
    if claim is None:
        return True
    return (claim.held and lifted(claim)) or not live(remote, claim, stamp, ttl)


def buildable(root: Path, spec: str | None, remote: Remote, skip: Collection[str]) -> list[Record]:
    """The tasks of `spec` this clone may build now, best first: ready in its plan, and not
    done, accepted or gone on the remote head (another runner published them)."""
    plan = read_plan(root)
    theirs = remote_plan(remote)
    ready = [
        task
        for task in schedule.buildable(plan.tasks(), plan.accepted())
        if _in_spec(task, spec) and task["id"] not in skip
    ]
    if theirs is None:
        return ready
    their_tasks = {task["id"]: task for task in theirs.tasks()}
    published = theirs.accepted()
    return [
        task
        for task in ready
        if task["id"] not in published
        and (task["id"] not in their_tasks or is_pending(their_tasks[task["id"]]))
    ]


def done_to_verify(root: Path, spec: str | None, skip: Collection[str]) -> list[Record]:
    """The done tasks of `spec` in this clone's plan, none of `skip`."""
    plan = read_plan(root)
    return [
        task for task in plan.tasks() if is_done(task) and _in_spec(task, spec) and task["id"] not in skip
    ]


def _in_spec(task: Record, spec: str | None) -> bool:
    return spec is None or task.get("spec") in (None, spec)
