"""A runner's builds that cannot be published, withdrawn: their code conflicts with what another
runner pushed meanwhile, or another runner took one of their tasks over. The runner's unpushed
commits are undone here (kept as a patch beside the logs, the plan's uncommitted bookkeeping carried
onto the remote's plan), the conflict is recorded on the tasks whose builds changed the files, and
the runner's claims on them go in the same push (ralph.usecases.sync's rounds). Only this runner's
own commits, never pushed, are undone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ralph.errors import RalphError, RemoteError, disk_full
from ralph.plan.loader import load
from ralph.plan.plan import Plan
from ralph.plan.records import is_done
from ralph.store.git import Repo
from ralph.store.reader import PLAN_NAME
from ralph.store.remote import Remote
from ralph.usecases.claims import still_held
from ralph.usecases.sync import ClaimChanges, until_pushed

CONFLICT_PATCHES = Path("build") / "ralph-logs" / "conflicts"  # ignored by git, as all logs are


def _keep_undone_build(root: Path, repo: Repo, remote_head: str, task_id: str) -> Path:
    """The build about to be undone, kept as a patch (its commits since it left the remote's
    history), so its work is not only in the reflog. Returns the patch."""
    import time

    from ralph.store.files import create_new

    target = create_new(root / CONFLICT_PATCHES / f"{task_id}-{time.strftime('%Y%m%d-%H%M%S')}.patch")
    target.write_bytes(repo.changes.patch(f"{remote_head}...HEAD"))
    return target


def _reset_carrying_the_plan(root: Path, repo: Repo, remote_head: str, keep: Path) -> None:
    """HEAD, index and work tree to `remote_head` (`reset --keep`: a person's uncommitted edits
    stay), plan.jsonl's uncommitted changes (the loop's bookkeeping for its next commit, a
    person's `ralph` commands beside the run) carried onto the remote's plan by record. Left in
    plan.jsonl, reset --keep refused them (`Entry 'plan.jsonl' not uptodate`) and the run ended in
    git's words. Where they cannot be merged, the remote's plan stands and they are kept at
    `keep`. Under the plan lock: no ralph command writes the plan meanwhile."""
    from ralph.errors import InvalidInput
    from ralph.plan.merge import merge_bytes
    from ralph.store.files import create_new, write_atomic
    from ralph.store.lock import plan_lock
    from ralph.store.reader import plan_path, read_bytes

    with plan_lock(root):
        ours, committed = read_bytes(root), repo.objects.file_at_head(PLAN_NAME)
        loose = committed is not None and ours != committed
        waited = _waited_beside(repo, remote_head)  # committed by a round: carried all the same
        if loose:
            assert committed is not None
            write_atomic(plan_path(root), committed)
        # ralph's plan commits record plan.jsonl in the index without its stat data: refreshed
        # first, or reset --keep takes the file for a local change it must not lose.
        repo.attempt("update-index", "-q", "--refresh")
        try:
            repo.git("reset", "-q", "--keep", remote_head)
        except RalphError:
            if loose:
                write_atomic(plan_path(root), ours)  # as it was: nothing moved
            raise
        changes = [*waited, *([(committed, ours)] if loose and committed is not None else [])]
        if not changes:
            return
        plan = repo.objects.file_at(remote_head, PLAN_NAME) or b""
        for before, after in changes:
            try:
                merged = merge_bytes(before, after, plan, published_wins=True)
            except InvalidInput:  # a line no merge by record can place
                merged = None
            if merged is None or merged.conflicts:
                create_new(keep).write_bytes(ours)
                break
            plan = merged.data
        write_atomic(plan_path(root), plan)


def _waited_beside(repo: Repo, remote_head: str) -> list[tuple[bytes, bytes]]:
    """The plan before and after each commit of plan changes that waited beside the builds (the
    loop's bookkeeping, a person's `ralph` commands during the run), which a publishing round
    commits first (EARLIER_CHANGES_MESSAGE), among the unpushed commits about to be undone; oldest
    first. They are not the builds': undone with them, they were lost from the plan."""
    from ralph.store.transaction import EARLIER_CHANGES_MESSAGE

    listed = repo.git("log", "--first-parent", "--reverse", "--format=%H%x1f%P%x1f%s", f"{remote_head}..HEAD")
    changes = []
    for line in listed.splitlines():
        commit, parents, subject = line.split("\x1f", 2)
        if subject == EARLIER_CHANGES_MESSAGE and len(parents.split()) == 1:
            before, after = repo.objects.file_at(parents, PLAN_NAME), repo.objects.file_at(commit, PLAN_NAME)
            if before is not None and after is not None:
                changes.append((before, after))
    return changes


def withdraw_batch(
    root: Path,
    batch: list[str],
    runner: str,
    remote: Remote,
    files: list[str],
    max_attempts: int,
    mine: dict[str, str],
) -> list[str]:
    """The builds of `batch`, committed here and not pushed, cannot be published: their code
    conflicts in `files` with what another runner pushed meanwhile, or (no files) another runner
    took one of their tasks over. This runner's unpushed commits are undone (kept as a patch; the
    remote holds every commit ever pushed, so none of those is touched); a task whose build
    changed one of `files` goes back to pending with the conflict recorded (set aside after
    `max_attempts`); the others go back as the remote has them. This runner's claim refs on the
    batch (`mine`: item -> claim commit) go in the same push. Returns the tasks the conflict was
    recorded on."""
    repo = remote.repo
    local = read_plan_here(root)
    remote_head = remote.fetch()
    if remote_head is None:
        raise RemoteError(f"{remote.name}/{remote.branch} is gone; nothing was pushed")
    spent = _spent_since(repo, local, remote_head)  # the undone commits' runs still count
    touched = _builds_touching(repo, remote_head, batch, files)
    ours = {task_id: local.find_task(task_id) or {} for task_id in touched}
    kept = _keep_undone_build(root, repo, remote_head, "-".join(batch[:3]) or "builds")
    try:
        _reset_carrying_the_plan(root, repo, remote_head, kept.with_suffix(".plan.jsonl"))
    except RalphError as exc:
        if disk_full(exc):
            raise
        shown = kept.relative_to(root) if kept.is_relative_to(root) else kept
        raise RemoteError(
            f"the builds of {', '.join(batch)} yield to what another runner pushed to {remote.name}, but"
            f" undoing them here would overwrite changes you have not committed ({exc}): commit or stash"
            f" them and run again; the builds are kept as {shown}"
        ) from None
    # What the plan changes carried over brought of it is counted there already (merged by record).
    carried = _gained(
        _spending(repo.objects.file_at(remote_head, PLAN_NAME)), _spending_of(read_plan_here(root))
    )
    spent = _gained(carried, spent)
    recorded: list[str] = []

    def record(plan: Plan) -> object:
        recorded[:] = []
        for task_id in touched:
            task = plan.find_task(task_id)
            if task is not None and not is_done(task):
                plan.record_unmerged_build(task_id, files, ours[task_id], max_attempts, where="pushed")
                recorded.append(task_id)
        if spent:
            plan.add_spending(spent)
        return recorded or (spent or None)

    message = (
        f"ralph(build): {', '.join(touched or batch)} merge conflict in {', '.join(files[:5])} ({runner})"
    )
    if not files:
        message = f"ralph: the builds of {', '.join(batch)} yield: a task was taken over ({runner})"
    drops = {item: commit for item, commit in mine.items() if item in batch}
    drop = ClaimChanges(drop=lambda _: still_held(remote, drops))
    until_pushed(root, remote, runner, record, lambda _: message, claims=drop)
    return recorded


def _builds_touching(repo: Repo, remote_head: str, batch: list[str], files: list[str]) -> list[str]:
    """The tasks of `batch` whose build commits (`ralph(build): <id> ...`, since the local branch
    left the remote's) change one of `files`."""
    if not files:
        return []
    out = repo.git("log", "--format=%x1e%s", "--name-only", f"{remote_head}..HEAD")
    touched: list[str] = []
    for entry in out.split("\x1e")[1:]:
        subject, _, names = entry.partition("\n")
        changed = set(names.split())
        for task_id in batch:
            if (
                subject.startswith(f"ralph(build): {task_id} ")
                and changed & set(files)
                and task_id not in touched
            ):
                touched.append(task_id)
    return touched or list(batch)


def read_plan_here(root: Path) -> Plan:
    from ralph.store.reader import read_plan

    return read_plan(root)


def _spent_since(repo: Repo, local: Plan, remote_head: str) -> dict[str, Any]:
    """What the local plan's spending totals gained since the local branch left the remote's."""
    code, out, _ = repo.attempt("merge-base", "HEAD", remote_head)
    data = repo.objects.file_at(out.strip(), PLAN_NAME) if code == 0 else None
    return _gained(_spending(data), _spending_of(local))


def _spending(data: bytes | None) -> dict[str, Any]:
    return _spending_of(Plan(load(data, PLAN_NAME))) if data is not None else {}


def _spending_of(plan: Plan) -> dict[str, Any]:
    spent: dict[str, Any] = plan.state().get("spent", {})
    return spent


def _gained(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What spending totals `after` gained over `before`, by stage (the stages that gained)."""
    gained: dict[str, Any] = {}
    for stage, row in after.items():
        old = before.get(stage, {})
        diff = {key: value - old.get(key, 0) for key, value in row.items() if isinstance(value, int | float)}
        if any(diff.values()):
            gained[stage] = diff
    return gained
