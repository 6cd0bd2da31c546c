"""What claims runners sharing a git remote hold, and how old they are, for a person to read:
`ralph status --remote` (fetched now) and `ralph doctor` (as last fetched, nothing written). Both
judge a claim's age by the rule runners judge it by (ralph.store.claim_clock); claiming, publishing
and giving back are ralph.usecases.claims and ralph.usecases.claim_refs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from ralph.clock import now
from ralph.errors import RalphError
from ralph.plan.document import Record
from ralph.plan.loader import load
from ralph.plan.plan import Plan
from ralph.store.claim_clock import ClaimClock
from ralph.store.git import Repo
from ralph.store.reader import PLAN_NAME
from ralph.store.remote import ClaimRef, Remote
from ralph.usecases.claim_refs import remote_plan


class RemoteClaim(NamedTuple):
    """A claim on the remote's head: its task, runner and claimed_at; its age by the rule, and the
    two ages it is the lesser of (since committed_at, and since this clone first saw it)."""

    task: str
    name: str
    runner: str
    host: str | None  # the host the runner runs on (None: a claim written before claims named one)
    since: str | None
    committed_at: str | None
    seen_at: str
    age_s: float | None  # None: unknown
    stale: bool  # older than the claim TTL (or of unknown age): another runner may take it over
    # A held claim (ralph.store.remote.ClaimRef.held): the tasks it waits for to be published
    # (its build was given back while they were built); None: the claim is being worked on.
    waits_for: tuple[str, ...] | None = None


class RemoteTurn(NamedTuple):
    """The turn to publish on the remote branch (ralph.usecases.sync): the runner holding it (None:
    a commit ralph did not make), its host, its commit, when that was committed, and whether it
    is older than TURN_STALE_S by that time (the next runner that loses a race takes it over)."""

    runner: str | None
    host: str | None
    commit: str
    committed_at: str
    age_s: float
    stale: bool


class RemoteClaims(NamedTuple):
    """What `ralph status --remote` says: the claims on the remote branch's head (None: no such
    branch yet), judged at `at` against the claim TTL, and who has the turn to publish (None:
    nobody)."""

    remote: str
    branch: str
    head: str | None
    claim_ttl_s: float
    at: str
    claims: tuple[RemoteClaim, ...]
    turn: RemoteTurn | None = None

    def to_json(self) -> dict[str, Any]:
        turn = self.turn._asdict() if self.turn is not None else None
        return {**self._asdict(), "claims": [claim._asdict() for claim in self.claims], "turn": turn}


def remote_status(root: Path, name: str) -> RemoteClaims:
    """The claims of the runners sharing the remote `name`, fetched now."""
    return remote_claims(root, Remote(Repo(root), name, retries=2))


def remote_claims(
    root: Path, remote: Remote, ttl_s: float | None = None, at: str | None = None
) -> RemoteClaims:
    """The claims on the remote branch's head: each with its runner, its claimed_at, its age by the
    rule runners judge claims by (ralph.plan.reading.claim_age_s: since its commit on the remote's
    history, and since this clone first saw it; this look counts as a sighting) and whether it is
    live or stale (older than the claim TTL)."""
    head = remote.fetch(claims=True)
    plan = remote_plan(remote)
    ttl = (plan.claim_ttl_s() if plan else 1800.0) if ttl_s is None else ttl_s
    stamp = at or now()
    _note_all(remote.claim_clock, plan, remote)
    claims = [_ref_claim(remote, claim, plan, stamp, ttl) for claim in remote.claim_refs().values()]
    for task in plan.claims() if plan else []:
        judged = remote.claim_clock.judge(task, stamp)
        claims.append(
            RemoteClaim(
                task=task["id"],
                name=task.get("name") or task.get("text") or task["id"],
                runner=task["claimed_by"],
                host=task.get("claimed_on"),
                since=task.get("claimed_at"),
                committed_at=judged.committed_at,
                seen_at=judged.seen_at or stamp,
                age_s=judged.age_s,
                stale=judged.age_s is None or judged.age_s >= ttl,
            )
        )
    return RemoteClaims(remote.name, remote.branch, head, ttl, stamp, tuple(claims), _turn(remote, stamp))


def _turn(remote: Remote, stamp: str) -> RemoteTurn | None:
    from datetime import datetime

    from ralph.store.remote import TURN_STALE_S

    turn = remote.turn_now()
    if turn is None:
        return None
    age = max(
        0.0, (datetime.fromisoformat(stamp) - datetime.fromisoformat(turn.committed_at)).total_seconds()
    )
    return RemoteTurn(turn.runner, turn.host, turn.commit, turn.committed_at, age, age >= TURN_STALE_S)


def _ref_claim(remote: Remote, claim: ClaimRef, plan: Plan | None, stamp: str, ttl: float) -> RemoteClaim:
    """A claim ref (BUILD's and VERIFY's claims, beside the branch) as status shows claims."""
    judged = remote.claim_clock.judge(claim.record(), stamp, committed_at=claim.committed_at)
    task = plan.find_task(claim.item) if plan is not None else None
    return RemoteClaim(
        task=claim.item,
        name=(task.get("name") if task else None) or claim.item,
        runner=claim.runner,
        host=claim.host,
        since=claim.claimed_at,
        committed_at=judged.committed_at,
        seen_at=judged.seen_at or stamp,
        age_s=judged.age_s,
        stale=judged.age_s is None or judged.age_s >= ttl,
        waits_for=tuple(sorted(claim.waits_for)) if claim.held else None,
    )


def stale_claims(root: Path) -> list[tuple[str, Record, float | None]]:
    """The claims older than the claim TTL on the remote branches this clone last fetched, by the
    rule runners judge them by (no fetch, and nothing written down: a look that changes nothing),
    each with its remote-tracking branch and age: a runner that died or is stuck holds them, and
    others wait until they take them over."""
    repo = Repo(root)
    branch = repo.branch() or "main"
    refs = repo.git("for-each-ref", "--format=%(refname:short)", "refs/remotes").split()
    stamp = now()
    found: list[tuple[str, Record, float | None]] = []
    for ref in (ref for ref in refs if ref.endswith(f"/{branch}")):
        data = repo.objects.file_at(ref, PLAN_NAME)
        if data is None:
            continue
        try:
            plan = Plan(load(data, PLAN_NAME))
        except RalphError:  # a plan that does not load is not ours to judge here
            continue
        remote = Remote(repo, ref.removesuffix(f"/{branch}"), branch)
        clock = remote.claim_clock
        _note_all(clock, plan, remote)
        for item in plan.claims():
            age = clock.age_s(item, stamp, remember=False)
            if age is None or age >= plan.claim_ttl_s():
                found.append((ref, item, age))
        for claim in remote.claim_refs().values():  # BUILD's and VERIFY's, beside the branch
            age = clock.judge(claim.record(), stamp, remember=False, committed_at=claim.committed_at).age_s
            if age is None or age >= plan.claim_ttl_s():
                found.append((ref, claim.record(), age))
    return found


def _note_all(clock: ClaimClock, plan: Plan | None, remote: Remote) -> None:
    """Every claim in sight noted before any is judged: each is a witness to the others' ages
    (ralph.store.claim_clock), whichever comes first."""
    for item in plan.claims() if plan else []:
        clock.note(item)
    for claim in remote.claim_refs().values():
        clock.note(claim.record(), claim.committed_at)
