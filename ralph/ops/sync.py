"""One round against the git remote that runners share, and rounds until one is pushed: fetch,
catch up with the remote head, change plan.jsonl in a commit, push.

Between the fetch and the push everything is made in git's object store: the catch-up merge
(`git merge-tree` for the code, plan.jsonl by record) and the plan commits. HEAD and the work tree
move once, after the push is won, so a lost race (another runner pushed first) or a remote gone
offline leaves nothing here to undo, and the window in which another push can win stays short.
The change itself, and what to replay after a lost race, are the caller's (ralph.ops.claims)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ralph.errors import CodeConflict, GitError, RemoteError
from ralph.plan.loader import load
from ralph.plan.plan import Plan
from ralph.store.git import Repo
from ralph.store.integrate import Integration, in_the_way, merge_commits, move_head
from ralph.store.reader import PLAN_NAME, load_checked
from ralph.store.remote import Remote
from ralph.store.transaction import checked_bytes

MAX_ROUNDS = 30  # lost races in a row before giving up: other runners push faster than we fetch
LOST_RACE_PAUSE_S = 0.2  # the longest random pause after a lost race

T = TypeVar("T")  # what a round's change chose (None: nothing, and no commit)


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
) -> T | None:
    """Rounds until one is pushed (a lost race replays on the new head); what `change` returned."""
    for _ in range(MAX_ROUNDS):
        result, pushed = _round(root, remote, runner, change, message, idle_push, then)
        if pushed:
            return result
        for replay in (after_lost, then.lost if then else None):
            if replay:
                replay()
        _pause_after_lost_race(remote)
    raise RemoteError(f"lost the race to push {MAX_ROUNDS} times in a row on {remote.name}; try again")


def on_remote_head(
    remote: Remote, runner: str, change: Callable[[Plan], T | None], message: Callable[[T], str]
) -> T | None:
    """Rounds of `change` made on the remote head alone, until one is pushed: the local branch
    and work tree stay as they are. For what must reach the remote whatever the local commits
    hold (a run's claims given back when its own commits cannot be published)."""
    repo = remote.repo
    for _ in range(MAX_ROUNDS):
        head = remote.fetch()
        if head is None:
            return None
        data = repo.file_at(head, PLAN_NAME) or b""
        plan = Plan(load(data, PLAN_NAME))
        result = change(plan)
        if result is None:
            return None
        if remote.push(_commit_change(repo, head, plan, data, message(result))):
            return result
        _pause_after_lost_race(remote)
    raise RemoteError(f"lost the race to push {MAX_ROUNDS} times in a row on {remote.name}; try again")


def _pause_after_lost_race(remote: Remote) -> None:
    """A random pause: runners that lost together would otherwise fetch, merge and push in step
    again, and the slowest of them lose every time (measured on bench_remote: one runner lost 9
    publishes in a row; with the pause three runners took 1.26-1.37x the ideal, not 1.50-1.60x).
    A pause that doubled with each loss measured no better."""
    import random

    remote.sleep(random.uniform(0, LOST_RACE_PAUSE_S))


def _round(
    root: Path,
    remote: Remote,
    runner: str,
    change: Callable[[Plan], T | None],
    message: Callable[[Any], str],  # takes what change chose: until_pushed's signature says so
    idle_push: bool = True,
    then: Step | None = None,
) -> tuple[T | None, bool]:
    """Fetch, catch up, change the plan in one commit (and `then` in a second), push. Returns
    what `change` returned and whether the remote has our head now.

    Between the fetch and the push everything is made in git's object store (the catch-up merge,
    the plan commit); HEAD and the work tree move once, after the push is won. A lost race (or a
    remote gone offline) leaves nothing here to undo, and the window in which another runner's
    push beats ours stays short."""
    repo = remote.repo
    _commit_loose_plan(root, repo)
    start = repo.head()
    if start is None:
        raise RemoteError("the local branch has no commit yet: run `ralph init` and commit first")
    remote_head = remote.fetch()
    base = _caught_up(repo, remote, start, remote_head, runner)
    data = repo.file_at(base, PLAN_NAME) or b""
    plan = Plan(load_checked(root, data))  # the bytes of most rounds were proven valid before
    result = change(plan)
    target = _commit_change(repo, base, plan, data, message(result)) if result is not None else base
    if then is not None:
        before = plan.doc.to_bytes()
        chosen = then(plan)
        if chosen is not None:
            target = _commit_change(repo, target, plan, before, then.message(chosen))
    if target == remote_head or (target == base and result is None and not idle_push):
        _move(repo, start, target)  # caught up; with nothing claimed, ours goes with the next push
        return result, True
    _refuse_overwriting_edits(repo, remote, start, target)
    if not remote.push(target):
        return result, False
    _move(repo, start, target)
    return result, True


def _commit_change(repo: Repo, parent: str, plan: Plan, before: bytes, message: str) -> str:
    """A commit on `parent` holding the changed plan (object store only); `parent` when the
    change left its bytes as they were."""
    after = checked_bytes(plan.doc)
    if after == before:
        return parent
    return repo.commit_tree(repo.tree_with_file(parent, PLAN_NAME, after), parent, message)


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
    from ralph.store.lock import plan_lock
    from ralph.store.reader import read_bytes
    from ralph.store.transaction import EARLIER_CHANGES_MESSAGE

    with plan_lock(root):
        data = read_bytes(root)
        if repo.file_at_head(PLAN_NAME) != data:
            repo.commit_file(PLAN_NAME, data, EARLIER_CHANGES_MESSAGE)


def _caught_up(repo: Repo, remote: Remote, start: str, remote_head: str | None, runner: str) -> str:
    """The commit holding both the local branch and the remote head, made in the object store:
    `start` (the remote has nothing new), the remote head (a fast forward) or a merge commit
    (plan.jsonl merged by record). Two runners' claims on one task conflict: ours lost (theirs
    reached the remote first), so ours are dropped and the merge made again. A plan that still
    conflicts yields to what was published first: each conflicting record takes the remote's
    version, and when even that breaks a rule across records, the remote's plan is taken whole
    (our code still merges; the caller's change is made again on the result). No sequence of
    ralph's own commands ends here in a plan conflict: only code can conflict."""
    if remote_head is None or remote_head == start:
        return start
    code, out, _ = repo.attempt("merge-base", start, remote_head)
    base = out.strip() if code == 0 else None
    if base == remote_head:
        return start  # ours is ahead: the push brings the remote up
    if base == start:
        return remote_head
    what = f"ralph: merge {remote.name}/{remote.branch}"
    merged = _merge(repo, remote, start, remote_head, what)
    if merged.commit:
        return merged.commit
    clashing = [path for path in merged.conflicts if path != PLAN_NAME]
    if clashing:
        where = f"{remote.name}/{remote.branch} in {', '.join(clashing[:5])}"
        raise CodeConflict(f"the local commits conflict with {where}", clashing)
    dropped = _drop_lost_claims(repo, start, remote_head, runner)
    if dropped is not None:
        merged = _merge(repo, remote, dropped, remote_head, what)
        if merged.commit:
            return merged.commit
    for whole in (False, True):
        yielded = _yield_to_published(repo, remote, dropped or start, remote_head, runner, whole)
        merged = _merge(repo, remote, yielded, remote_head, what)
        if merged.commit:
            return merged.commit
    raise RemoteError(
        f"cannot merge {remote.name}/{remote.branch} into the local branch: it conflicts (see `git merge"
        f" {remote.name}/{remote.branch}`); nothing was pushed"
    )


def _yield_to_published(
    repo: Repo, remote: Remote, ours: str, remote_head: str, runner: str, whole: bool
) -> str:
    """A commit on `ours` (object store only) whose plan is ours merged with the remote's, each
    conflicting record the remote's version; `whole`: the remote's plan as it is."""
    from ralph.plan.merge import merge_bytes

    theirs = repo.file_at(remote_head, PLAN_NAME) or b""
    plan = theirs
    if not whole:
        code, out, _ = repo.attempt("merge-base", ours, remote_head)
        base = (repo.file_at(out.strip(), PLAN_NAME) if code == 0 else None) or b""
        merged = merge_bytes(
            base, repo.file_at(ours, PLAN_NAME) or b"", theirs, PLAN_NAME, published_wins=True
        )
        plan = theirs if merged.conflicts else merged.data  # a rule across records broke: theirs whole
    where = f"{remote.name}/{remote.branch}"
    return repo.commit_tree(
        repo.tree_with_file(ours, PLAN_NAME, plan), ours, f"ralph: yield to {where}'s plan ({runner})"
    )


def _merge(repo: Repo, remote: Remote, ours: str, theirs: str, message: str) -> Integration:
    try:
        return merge_commits(repo, ours, theirs, message)
    except GitError as exc:  # unrelated histories, a corrupt object: nothing was changed
        raise RemoteError(f"cannot merge {remote.name}/{remote.branch}: {exc}; nothing was pushed") from None


def _drop_lost_claims(repo: Repo, start: str, remote_head: str, runner: str) -> str | None:
    """A commit on `start` releasing our claims on tasks the remote head has claimed by another
    runner (object store only); None when there is none to release."""
    data = repo.file_at(remote_head, PLAN_NAME)
    if data is None:
        return None
    theirs = {item["id"]: item["claimed_by"] for item in Plan(load(data, PLAN_NAME)).claims()}
    ours = Plan(load(repo.file_at(start, PLAN_NAME) or b"", PLAN_NAME))
    lost = [
        task["id"]
        for task in ours.claims()
        if task["claimed_by"] == runner and theirs.get(task["id"]) not in (None, runner)
    ]
    if not lost:
        return None
    for task_id in lost:
        ours.release(task_id, runner)
    tree = repo.tree_with_file(start, PLAN_NAME, checked_bytes(ours.doc))
    return repo.commit_tree(tree, start, f"ralph: drop the claims {runner} lost: {', '.join(lost)}")
