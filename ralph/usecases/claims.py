"""Runners on several machines sharing one git remote: claiming an item by a plan commit,
publishing, releasing a claim. They coordinate through git alone: such a claim is a plan commit
that sets `claimed_by` and `claimed_at` on the item, and the push of that commit is the
compare-and-swap. The loop claims the spec (PLAN, CHECK, REVIEW) and single items (INVESTIGATE's
issues, DECOMPOSE's tasks) this way; BUILD's and VERIFY's tasks by a ref each
(ralph.usecases.claim_refs). `claim_next` claims a task by a plan commit still: the plain case of
a claim's rounds, which the tests of those rounds use. What claims there are, and how old,
for a person to read: ralph.usecases.claim_listing.

Each use case is a change to the plan that ralph.usecases.sync pushes in rounds (fetch, catch up,
commit, push). A push another runner beat is a lost race: the round starts again on the new head,
so a claim is replayed there: kept if the task is still free, dropped (and another task picked)
if it is now claimed by another runner, done or accepted. Nothing is ever force-pushed."""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path

from ralph.clock import now
from ralph.errors import RemoteError, RemoteOffline, RemoteRejected
from ralph.plan import schedule
from ralph.plan.claims import Ages
from ralph.plan.document import Record
from ralph.plan.plan import Plan
from ralph.plan.reading import claim_age_s
from ralph.plan.records import holds
from ralph.store.remote import Remote
from ralph.usecases.claim_refs import this_host
from ralph.usecases.names import named
from ralph.usecases.sync import ClaimChanges, on_remote_head, until_pushed


def default_runner() -> str:
    """host-pid: unique among the runners alive at once, and says where to look for one."""
    import os

    return f"{this_host()}-{os.getpid()}"


# --- the use cases ---------------------------------------------------------------------------


class NextTask:
    """Picks the first ready task of `spec` (all specs: None) no live claim holds, and claims it:
    one this runner claimed before (a restart under the same name) first, then, after a lost
    race, the task it picked before, if still free on the new head."""

    def __init__(
        self,
        spec: str | None,
        runner: str,
        ttl_s: float | None = None,
        ages: Ages = claim_age_s,
        skip: Collection[str] = (),
    ):
        self.spec, self.runner, self.ttl_s, self.ages, self.skip = spec, runner, ttl_s, ages, skip
        self.chosen: Record | None = None
        self._replay: str | None = None

    def __call__(self, plan: Plan) -> Record | None:
        stamp = now()
        ttl = plan.claim_ttl_s() if self.ttl_s is None else self.ttl_s
        _look_at_all(plan, self.runner, stamp, self.ages)
        free = [
            task
            for task in _claimable(plan, self.spec, self.runner, stamp, ttl, self.ages)
            if task["id"] not in self.skip
        ]
        chosen = next((task for task in free if task["id"] == self._replay), None) or (
            free[0] if free else None
        )
        if chosen is not None:
            plan.claim(chosen["id"], self.runner, stamp, ttl, self.ages, host=this_host())
        self.chosen = chosen
        return chosen

    def message(self, task: Record) -> str:
        return f"ralph: claim {named([task])} ({self.runner})"

    def lost(self) -> None:
        self._replay = self.chosen["id"] if self.chosen else None


def claim_next(
    root: Path,
    spec: str | None,
    runner: str,
    remote: Remote,
    ttl_s: float | None = None,
    skip: Collection[str] = (),
) -> Record | None:
    """Claim the first ready task of `spec` (all specs: None) no live claim holds, none of `skip`,
    and push the claim. Returns the task, or None when no task is free. A task this runner claimed
    before (a restart under the same name) comes first; one whose claim is older than the TTL is
    taken over."""
    pick = NextTask(spec, runner, ttl_s, remote.claim_clock.age_s, skip)
    until_pushed(root, remote, runner, pick, pick.message, idle_push=False, after_lost=pick.lost)
    return pick.chosen


def claim_item(
    root: Path,
    runner: str,
    remote: Remote,
    items: Callable[[Plan], list[Record]],
    what: str,
    ttl_s: float | None = None,
    skip: Collection[str] = (),
) -> str | None:
    """Claim the first of a stage's `items` in the plan (INVESTIGATE's open issues, DECOMPOSE's
    killed tasks; not one of `skip`) and push the claim, its commit saying `what` it is for
    ("to investigate"); None when none is free."""
    return _claim_first(
        root,
        runner,
        remote,
        lambda plan: [item for item in items(plan) if item["id"] not in skip],
        what,
        ttl_s,
    )


def claim_plan(
    root: Path, spec: str, runner: str, remote: Remote, ttl_s: float | None = None, fetched: bool = False
) -> bool:
    """Claim the spec record for PLAN while the spec has no work yet, and push the claim: the
    runner that wins plans, the others wait for its tasks. False when it is planned (or another
    runner holds a live claim on it). `fetched`: as until_pushed's."""

    def unplanned(plan: Plan) -> list[Record]:
        if plan.planned(spec):
            return []
        return [{**line.record, "id": spec} for line in plan.doc.records() if _is_spec(line.record, spec)]

    return _claim_first(root, runner, remote, unplanned, "to plan", ttl_s, fetched) is not None


def claim_check(
    root: Path,
    spec: str,
    runner: str,
    remote: Remote,
    met: Callable[[Plan], bool],
    ttl_s: float | None = None,
    fetched: bool = False,
) -> bool:
    """Claim the spec record for its spec check while the spec has no open task or issue, no
    runner holds a claim on anything of it, and no check found it met as it is (`met`); push the
    claim. False when another runner won it, or there is work (or nothing) to check. `fetched`:
    as until_pushed's."""

    def unchecked(plan: Plan) -> list[Record]:
        if plan.task_views(spec) or plan.issues(spec) or met(plan):
            return []
        if any(not _mine(item, runner) for item in plan.claims() if _claimed_in(item, spec)):
            return []  # another runner still holds something of the spec (its check, or work)
        return [{**line.record, "id": spec} for line in plan.doc.records() if _is_spec(line.record, spec)]

    return _claim_first(root, runner, remote, unchecked, "to check", ttl_s, fetched) is not None


def _claimed_in(item: Record, spec: str) -> bool:
    return (item.get("path") if item.get("t") == "spec" else item.get("spec")) in (None, spec)


def _is_spec(record: Record, spec: str) -> bool:
    return record.get("t") == "spec" and record.get("path") == spec


def _claim_first(
    root: Path,
    runner: str,
    remote: Remote,
    candidates: Callable[[Plan], list[Record]],
    what: str,
    ttl_s: float | None,
    fetched: bool = False,
) -> str | None:
    """Claim the first of `candidates` (this runner's own claim first, then a free one) and push;
    a lost race replays on the new head. Returns its id, None when none is free."""

    def pick(plan: Plan) -> str | None:
        stamp = now()
        ttl = plan.claim_ttl_s() if ttl_s is None else ttl_s
        ages = remote.claim_clock.age_s
        _look_at_all(plan, runner, stamp, ages)
        items = candidates(plan)
        own = [item for item in items if _mine(item, runner)]
        free = [item for item in items if not _mine(item, runner) and _free(item, stamp, ttl, ages)]
        if not own + free:
            return None
        chosen: str = (own + free)[0]["id"]
        plan.claim(chosen, runner, stamp, ttl, ages, host=this_host())
        return chosen

    return until_pushed(
        root,
        remote,
        runner,
        pick,
        lambda item: f"ralph: claim {item} {what} ({runner})",
        idle_push=False,
        fetched=fetched,
    )


def publish(root: Path, task_id: str, runner: str, remote: Remote, then: NextTask | None = None) -> None:
    """After a build commit: bring in the remote branch, free the task (when the build commit did
    not already: `task done` frees it) and push; with `then`, claim the next task in the same push
    (a commit of its own), which saves a round of fetch and push per task."""
    message = f"ralph: publish {task_id} ({runner})"
    until_pushed(
        root, remote, runner, lambda plan: _release_own(plan, task_id, runner), lambda _: message, then=then
    )


def release(root: Path, task_id: str, runner: str, remote: Remote) -> None:
    """Give the task back: drop this runner's claim on the remote."""
    message = f"ralph: release {task_id} ({runner})"
    until_pushed(root, remote, runner, lambda plan: _release_own(plan, task_id, runner), lambda _: message)


def release_all(root: Path, runner: str, remote: Remote, refs: dict[str, str] | None = None) -> list[str]:
    """Drop every claim of this runner on the remote (a run that ends), and push its commits;
    returns the task ids. `refs`: its claim refs (item -> claim commit), deleted in the same push.
    When its commits cannot be published (their code conflicts with the remote's), the claims are
    given back on the remote's head alone: a run's claims never outlive it, whatever ended it."""
    released: list[str] = []
    refs = dict(refs or {})

    def drop(plan: Plan) -> object:
        released[:] = [task["id"] for task in plan.claims() if _mine(task, runner)]
        for task_id in released:
            plan.release(task_id, runner, this_host())
        return released or None

    message = f"ralph: release the claims of {runner}"
    try:
        until_pushed(
            root,
            remote,
            runner,
            drop,
            lambda _: message,
            claims=ClaimChanges(drop=lambda _: still_held(remote, refs)),
            bookkeeping_waits=not refs,
        )
    except RemoteError as exc:
        if isinstance(exc, RemoteOffline | RemoteRejected):
            raise  # the remote itself failed: nothing can be given back now
        on_remote_head(remote, runner, drop, lambda _: message)
        remote.drop_claims(still_held(remote, refs))
        raise
    return released


def still_held(remote: Remote, refs: dict[str, str]) -> dict[str, str]:
    """Those of `refs` (item -> claim commit) the remote still has as they are (as last fetched):
    a claim taken over meanwhile is the taker's."""
    now_there = remote.claim_refs()
    return {
        item: commit
        for item, commit in refs.items()
        if getattr(now_there.get(item), "commit", None) == commit
    }


# --- one round -------------------------------------------------------------------------------


def _claimable(plan: Plan, spec: str | None, runner: str, stamp: str, ttl: float, ages: Ages) -> list[Record]:
    ready = [task for task in schedule.buildable(plan.tasks(), plan.accepted()) if _in_spec(task, spec)]
    own = [task for task in ready if _mine(task, runner)]
    free = [task for task in ready if not _mine(task, runner) and _free(task, stamp, ttl, ages)]
    return own + free


def _look_at_all(plan: Plan, runner: str, stamp: str, ages: Ages) -> None:
    """Judge every other runner's claim on the plan, not only those on the items wanted now: a
    clone notes when it first saw each (ralph.store.claim_clock), so a claim it comes to want
    later is as old as it has been in sight, and a dead runner's claim is taken over a TTL after
    it was pushed."""
    for item in plan.claims():
        if not _mine(item, runner):
            ages(item, stamp)


def _mine(item: Record, runner: str) -> bool:
    """Whether the item's plan claim is this runner's: its name on this host (a namesake's on
    another host is another runner's, taken over only once stale)."""
    return holds(item, runner, this_host())


def _in_spec(task: Record, spec: str | None) -> bool:
    return spec is None or task.get("spec") in (None, spec)


def _free(task: Record, stamp: str, ttl: float, ages: Ages) -> bool:
    """No claim holds the task, or only one older than the TTL."""
    if not task.get("claimed_by"):
        return True
    age = ages(task, stamp)
    return age is None or age >= ttl


def _release_own(plan: Plan, task_id: str, runner: str) -> Record | None:
    """Drop the claim if it is still ours: another runner may have taken the task over meanwhile
    (ours had expired), and its claim is not ours to drop."""
    task = plan.find_claimable(task_id)
    if task is None or not _mine(task, runner):
        return None
    return plan.release(task_id, runner, this_host())
