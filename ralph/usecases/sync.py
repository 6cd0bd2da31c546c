"""One round against the git remote that runners share, and rounds until one is pushed: fetch,
catch up with the remote head, change plan.jsonl in a commit, push.

Between the fetch and the push everything is made in git's object store: the catch-up merge
(`git merge-tree` for the code; for plan.jsonl, the remote's plan with this runner's unpublished
operations replayed on it: ralph.plan.replay) and the plan commits. HEAD and the work tree
move once, after the push is won, so a lost race (another runner pushed first) or a remote gone
offline leaves nothing here to undo, and the window in which another push can win stays short.
The change itself, and what to replay after a lost race, are the caller's (ralph.usecases.claims)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar

from ralph.errors import CodeConflict, GitError, RalphError, RemoteError
from ralph.plan.loader import load
from ralph.plan.plan import Plan
from ralph.plan.records import Replayed
from ralph.plan.replay import Outcome, replay
from ralph.store.git import Repo
from ralph.store.integrate import Integration, in_the_way, merge_commits, move_head
from ralph.store.reader import PLAN_NAME, load_checked
from ralph.store.remote import Remote
from ralph.store.transaction import checked_bytes

# A lost race is no error while the remote moves: others' pushes won, and they are progress. Only
# pushes refused as behind a head that did not move since the last fetch (something other than
# runners says no) end the run, after this many in a row.
MAX_STILL_LOSSES = 5
LOST_RACE_PAUSE_S = 0.2  # the longest random pause after a lost race, while losses are few
# Losses in a row at the first range, before it doubles with each loss, and its longest. When every
# build was published on its own, a runner that paused longer published later, and others built
# tasks that needed it (3 runners replaying tally with the range doubling from the first loss:
# 2.8-4.7 runs per task instead of 2.5-2.7), and it doubled after 3 losses. Builds now go out in
# batches, and 16 runners publishing at once kept losing in step: it doubles from the second.
STEADY_LOSSES = 1
LOST_RACE_PAUSE_CAP_S = 3.2
# After a lost race a runner waits for the turn to publish (ralph.store.remote): the first pause
# between tries, and the longest (each try is a push).
TURN_PAUSE_S = (0.1, 0.8)

T = TypeVar("T")  # what a round's change chose (None: nothing, and no commit)


class ClaimChanges(NamedTuple):
    """What a round's push does to claim refs beside the branch, in the same atomic push
    (Remote.push), given the plan it publishes: those it deletes (`drop`: item -> claim commit),
    those it moves (`mark`: item -> (its claim commit, the new one)), and those it must find as
    they are (`keep`)."""

    drop: Callable[[Plan], dict[str, str]] | None = None
    keep: dict[str, str] | None = None
    mark: Callable[[Plan], dict[str, tuple[str, str]]] | None = None


NO_CLAIM_CHANGES = ClaimChanges()


class Step(Protocol):
    """A second change a round commits after the first (claiming the next item as the last one
    is published): what it chose, its commit message, and what to replay after a lost race."""

    def __call__(self, plan: Plan) -> object: ...

    def message(self, chosen: Any) -> str: ...

    def lost(self) -> None: ...


def until_pushed(
    root: Path,
    remote: Remote,
    runner: str,
    change: Callable[[Plan], T | None],
    message: Callable[[T], str],
    idle_push: bool = True,
    then: Step | None = None,
    after_lost: Callable[[], None] | None = None,
    claims: ClaimChanges = NO_CLAIM_CHANGES,
    bookkeeping_waits: bool = False,
    fetched: bool = False,
) -> T | None:
    """Rounds until one is pushed (a lost race replays on the new head, once this runner has the
    turn to publish: ralph.store.remote); what `change` returned. `claims`: what the push does to
    claim refs, atomically with the branch (ClaimChanges). `bookkeeping_waits`: when `change`
    changed nothing and the local commits the remote lacks record only this runner's
    stage (update_state), they are not pushed when the remote's state shows that stage already
    (sixteen runners ending at once each pushed their `COMPLETE` after the first had), and wait
    here for its next push after a lost race instead of racing again (each lost some four races
    for nothing else). `fetched`: the
    caller fetched just before, so the first round builds on that head instead of fetching again
    (a runner fetched twice in a row before each claim and each publish: on a hosted remote a
    fetch takes about a second); if the remote moved since, the push loses and the next round
    fetches."""
    losses = Losses(remote)
    fetch = not fetched
    try:
        while True:
            result, pushed = _round(
                root,
                remote,
                runner,
                change,
                message,
                idle_push,
                then,
                claims,
                fetch,
                bookkeeping_waits,
            )
            if pushed:
                return result
            fetch = True
            if bookkeeping_waits and result is None and only_bookkeeping(remote):
                return result
            for again in (after_lost, then.lost if then else None):
                if again:
                    again()
            losses.lost(pause=False)
            # Holding the turn, a push made without it won: go again at once.
            if remote.turn is None or not remote.still_my_turn():
                wait_for_turn(remote, runner)
    finally:
        remote.end_turn()  # still held: the rounds ended without a push


def only_bookkeeping(remote: Remote, caught_up: str | None = None) -> bool:
    """Whether the local commits the remote head (as last fetched) lacks change no code and record
    no plan operation but this runner's stage (update_state). `caught_up`: HEAD merged with the
    remote head, which differs from it by what those commits change alone (HEAD itself may lack
    code others published since it last caught up)."""
    from ralph.plan.ops import ops_in, replayed_merge

    repo, head = remote.repo, remote.head()
    start = repo.head()
    if head is None or start is None:
        return False
    if set(repo.paths("diff", "--name-only", "-z", head, caught_up or start)) - {PLAN_NAME}:
        return False
    for _, parents, message in _unpublished(repo, start, head):
        if len(parents) > 1 and replayed_merge(message):
            continue  # a catch-up merge: what it brought is on the remote
        ops = ops_in(message) if len(parents) <= 1 else None
        if ops is None or any(op.get("op") != "update_state" for op in ops):
            return False
    return True


def _stage_shown(remote: Remote, caught_up: str, plan: Plan) -> bool:
    """Whether the local commits the remote head lacks record only this runner's stage, and the
    remote's state shows that stage already (`caught_up`: HEAD merged with the remote head, whose
    plan is `plan`)."""
    data = remote.file_at_head(PLAN_NAME)
    if data is None or not only_bookkeeping(remote, caught_up):
        return False
    return bool(Plan(load(data, PLAN_NAME)).state().get("stage") == plan.state().get("stage"))


def on_remote_head(
    remote: Remote, runner: str, change: Callable[[Plan], T | None], message: Callable[[T], str]
) -> T | None:
    """Rounds of `change` made on the remote head alone, until one is pushed: the local branch
    and work tree stay as they are. For what must reach the remote whatever the local commits
    hold (a run's claims given back when its own commits cannot be published)."""
    repo, losses = remote.repo, Losses(remote)
    while True:
        head = remote.fetch()
        if head is None:
            return None
        data = repo.objects.file_at(head, PLAN_NAME) or b""
        plan = Plan(load(data, PLAN_NAME))
        result = change(plan)
        if result is None:
            return None
        if remote.push(_commit_change(repo, head, plan, data, message(result))):
            return result
        losses.lost()


def wait_for_turn(remote: Remote, runner: str) -> None:
    """Take the turn to publish (ralph.store.remote), pausing between tries for a random while
    that doubles up to TURN_PAUSE_S's longest: the holder's round takes about that long."""
    import random

    from ralph.usecases.claim_refs import this_host

    pause = TURN_PAUSE_S[0]
    while not remote.take_turn(runner, this_host()):
        remote.sleep(random.uniform(pause / 2, pause))
        pause = min(pause * 2, TURN_PAUSE_S[1])


class Losses:
    """The races a runner lost in a row, and the pause after each.

    The pause is random: runners that lost together would otherwise fetch, merge and push in step
    again, and the slowest of them lose every time (measured on bench_remote: one runner lost 9
    publishes in a row; with a pause of up to 0.2 s three runners took 1.26-1.37x the ideal, not
    1.50-1.60x). After STEADY_LOSSES in a row its range doubles with each loss, up to
    LOST_RACE_PAUSE_CAP_S: with many runners a fixed range keeps them in lockstep. A loss to a
    remote head that did not move since the last fetch is no race: after MAX_STILL_LOSSES of those
    the remote is refusing."""

    def __init__(self, remote: Remote):
        self.remote, self.count, self.still = remote, 0, 0
        self.head = remote.head()

    def lost(self, pause: bool = True) -> None:
        """One more race lost; `pause`: sleep for a random while (none: the caller waits for the
        turn to publish instead)."""
        import random

        head = self.remote.head()  # as this round's fetch saw it
        self.still = self.still + 1 if self.count and head == self.head else 0
        self.head, self.count = head, self.count + 1
        if self.still >= MAX_STILL_LOSSES:
            raise RemoteError(
                f"{self.remote.name} refused {self.still + 1} pushes in a row as behind its head, which"
                " did not move: check its hooks and branch protection"
            )
        if pause:
            self.remote.sleep(random.uniform(0, pause_range(self.count)))


def pause_range(losses: int) -> float:
    """The longest pause after `losses` lost races in a row."""
    doublings = min(max(losses - STEADY_LOSSES, 0), 16)
    return min(LOST_RACE_PAUSE_CAP_S, LOST_RACE_PAUSE_S * 2.0**doublings)


def _round(
    root: Path,
    remote: Remote,
    runner: str,
    change: Callable[[Plan], T | None],
    message: Callable[[Any], str],  # takes what change chose: until_pushed's signature says so
    idle_push: bool = True,
    then: Step | None = None,
    claims: ClaimChanges = NO_CLAIM_CHANGES,
    fetch: bool = True,
    quiet_bookkeeping: bool = False,
) -> tuple[T | None, bool]:
    """Fetch (unless `fetch` is False: the remote head as last fetched), catch up, change the plan
    in one commit (and `then` in a second), push. Returns what `change` returned and whether the
    remote has our head now (or, with `quiet_bookkeeping`, all of it that matters: see
    until_pushed's `bookkeeping_waits`).

    Between the fetch and the push everything is made in git's object store (the catch-up merge,
    the plan commit); HEAD and the work tree move once, after the push is won. A lost race (or a
    remote gone offline) leaves nothing here to undo, and the window in which another runner's
    push beats ours stays short."""
    repo = remote.repo
    _commit_loose_plan(root, repo)
    start = repo.head()
    if start is None:
        raise RemoteError("the local branch has no commit yet: run `ralph init` and commit first")
    remote_head = remote.fetch() if fetch else remote.head()
    base = _caught_up(repo, remote, start, remote_head, runner)
    data = repo.objects.file_at(base, PLAN_NAME) or b""
    plan = Plan(load_checked(root, data))  # the bytes of most rounds were proven valid before
    result = change(plan)
    target = _commit_change(repo, base, plan, data, message(result)) if result is not None else base
    if then is not None:
        before = plan.doc.to_bytes()
        chosen = then(plan)
        if chosen is not None:
            target = _commit_change(repo, target, plan, before, then.message(chosen))
    dropped = claims.drop(plan) if claims.drop is not None else {}
    marked = claims.mark(plan) if claims.mark is not None else {}
    claims_move = bool(dropped or marked)
    if not claims_move and (target == remote_head or (target == base and result is None and not idle_push)):
        _move(repo, start, target)  # caught up; with nothing claimed, ours goes with the next push
        return result, True
    if (
        quiet_bookkeeping
        and not claims_move
        and target == base
        and result is None
        and _stage_shown(remote, base, plan)
    ):
        _move(repo, start, target)  # caught up; the remote says what our commits would
        return result, True
    _refuse_overwriting_edits(repo, remote, start, target)
    if not remote.push(target, dropped, claims.keep, marked):
        return result, False
    _move(repo, start, target)
    return result, True


def _commit_change(repo: Repo, parent: str, plan: Plan, before: bytes, message: str) -> str:
    """A commit on `parent` holding the changed plan (object store only); `parent` when the
    change left its bytes as they were."""
    after = checked_bytes(plan.doc)
    if after == before:
        return parent
    return repo.objects.commit_tree(repo.objects.tree_with_file(parent, PLAN_NAME, after), parent, message)


def _move(repo: Repo, start: str, target: str) -> None:
    if target != start:
        move_head(repo, start, target)


def _refuse_overwriting_edits(repo: Repo, remote: Remote, start: str, target: str) -> None:
    """Nothing is pushed that this work tree could not then take: a user's uncommitted edit to a
    file the remote changed is in the way."""
    if target == start:
        return
    blocking = in_the_way(repo, start, target)
    if blocking:
        raise RemoteError(
            f"{remote.name}/{remote.branch} changes {', '.join(blocking[:5])}, which you have changed"
            " and not committed: commit or stash them; nothing was pushed"
        )


def _commit_loose_plan(root: Path, repo: Repo) -> None:
    """Commit plan.jsonl as it is when it differs from HEAD's (the loop writes some changes for
    its next commit to carry): the round builds on HEAD's plan, and must not drop them."""
    from ralph.store import pending_ops
    from ralph.store.lock import plan_lock
    from ralph.store.reader import read_bytes
    from ralph.store.transaction import earlier_changes_message

    with plan_lock(root):
        data = read_bytes(root)
        if repo.objects.file_at_head(PLAN_NAME) != data:
            base = repo.objects.snapshot()
            repo.index.commit_file(PLAN_NAME, data, earlier_changes_message(repo, base[1], data), base)
            pending_ops.forget(repo)


def _caught_up(repo: Repo, remote: Remote, start: str, remote_head: str | None, runner: str) -> str:
    """The commit holding both the local branch and the remote head, made in the object store:
    `start` (the remote has nothing new), the remote head (a fast forward) or a merge commit.
    The merge's code comes from `git merge-tree`; its plan is the remote head's with this
    runner's unpublished plan changes made again on it (_replayed), each checked against the plan
    as it is now. No sequence of ralph's own commands ends here in a plan conflict: only code
    can conflict."""
    if remote_head is None or remote_head == start:
        return start
    code, out, _ = repo.attempt("merge-base", start, remote_head)
    base = out.strip() if code == 0 else None
    if base == remote_head:
        return start  # ours is ahead: the push brings the remote up
    if base == start:
        return remote_head
    from ralph.plan.ops import REPLAYED_TRAILER, with_trailers

    where = f"{remote.name}/{remote.branch}"
    plan, outcomes = _replayed(repo, start, remote_head)
    said = "".join(f"\n{outcome.line()}" for outcome in outcomes)  # the body: what became of each
    message = with_trailers(f"ralph: merge {where}\n{said}", f"{REPLAYED_TRAILER}: {where} ({runner})")
    merged = _merge(repo, remote, start, remote_head, message, plan)
    if merged.commit:
        return merged.commit
    where = f"{where} in {', '.join(merged.conflicts[:5])}"
    raise CodeConflict(f"the local commits conflict with {where}", merged.conflicts)


def _replayed(repo: Repo, start: str, remote_head: str) -> tuple[bytes, list[Outcome]]:
    """The remote head's plan with the plan changes of the local commits it lacks made again on
    it, oldest first, and what became of each. A commit that records its operations
    (ralph.plan.ops) has them replayed; one that does not (a hand edit of plan.jsonl, the loop's
    commits of plan and code together) has its change merged by record, and when that conflicts
    the version published first stands. A catch-up merge of an earlier round is skipped: what
    it brought from the remote is on the remote head, and what it replayed is replayed again."""
    from ralph.plan.ops import ops_in, replayed_merge

    commits = [
        (commit, parents, message)
        for commit, parents, message in _unpublished(repo, start, remote_head)
        if not (len(parents) > 1 and replayed_merge(message))
    ]
    # Every plan version the replay reads, in one read: with builds waiting to go out in a batch
    # a catch-up replays a dozen commits, and reading each version on its own cost two git runs.
    revs = list(dict.fromkeys([remote_head, *(rev for c, ps, _ in commits for rev in (*ps[:1], c))]))
    versions = dict(zip(revs, repo.objects.files_at(revs, PLAN_NAME), strict=True))
    plan = versions[remote_head] or b""
    outcomes: list[Outcome] = []
    for commit, parents, message in commits:
        before = (versions[parents[0]] or b"") if parents else b""
        after = versions[commit] or b""
        if after == before:
            continue  # code alone
        ops = ops_in(message) if len(parents) <= 1 else None
        if ops is None:
            plan, made = _merged_by_record(before, after, plan, commit, "no operation recorded")
        elif not _reproduces_once(commit, before, after, ops):
            plan, made = _merged_by_record(before, after, plan, commit, "its operations do not make it")
        else:
            plan, made = replay(plan, ops, PLAN_NAME)
        outcomes.extend(made)
    return plan, outcomes


# Whether a commit's recorded operations make its change, by commit id: a runner losing races
# replays the same unpublished commits in every round, and what a commit holds never changes.
_REPRODUCED: dict[str, bool] = {}


def _reproduces_once(commit: str, before: bytes, after: bytes, ops: list[Any]) -> bool:
    if commit not in _REPRODUCED:
        _REPRODUCED[commit] = _reproduces(before, after, ops)
    return _REPRODUCED[commit]


def _reproduces(before: bytes, after: bytes, ops: list[Any]) -> bool:
    """Whether the operations a message records make exactly the commit's change: a message
    written by hand, or a change edited after the fact, is merged by record instead."""
    try:
        made, outcomes = replay(before, ops, PLAN_NAME)
    except RalphError:
        return False
    return made == after and all(outcome.kind != Replayed.DROPPED for outcome in outcomes)


def _merged_by_record(
    before: bytes, after: bytes, plan: bytes, commit: str, why: str
) -> tuple[bytes, list[Outcome]]:
    """The fallback for a commit whose plan change no operation replays: merged by record, each
    record both changed taking the published version."""
    from ralph.plan.merge import merge_bytes

    what = f"the plan change of {commit[:12]}"
    try:
        merged = merge_bytes(before, after, plan, PLAN_NAME, published_wins=True)
    except RalphError as exc:
        return plan, [Outcome(what, Replayed.DROPPED, str(exc).splitlines()[0])]
    if merged.conflicts:  # a rule across records broke: the published plan stands
        return plan, [Outcome(what, Replayed.DROPPED, "it conflicts with the published plan")]
    return merged.data, [Outcome(what, Replayed.MERGED, f"{why}: merged by record")]


def _unpublished(repo: Repo, start: str, remote_head: str) -> list[tuple[str, list[str], str]]:
    """The local commits the remote head lacks, oldest first, along the local branch's own line
    (first parents): a branch merged into it (a build's, a person's) counts once, as its merge's
    change, not once for each of its commits and again for the merge. Each with its parents and
    message."""
    out = repo.git(
        "log", "--first-parent", "--reverse", "--format=%x1e%H %P%x1f%B", f"{remote_head}..{start}"
    )
    found = []
    for entry in out.split("\x1e")[1:]:
        ids, _, message = entry.partition("\x1f")
        commit, *parents = ids.split()
        found.append((commit, parents, message))
    return found


def _merge(repo: Repo, remote: Remote, ours: str, theirs: str, message: str, plan: bytes) -> Integration:
    try:
        return merge_commits(repo, ours, theirs, message, plan)
    except GitError as exc:  # unrelated histories, a corrupt object: nothing was changed
        raise RemoteError(f"cannot merge {remote.name}/{remote.branch}: {exc}; nothing was pushed") from None
