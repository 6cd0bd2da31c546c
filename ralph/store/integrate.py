"""Bringing a build's branch into the loop's branch: code and plan.jsonl together, commit by
commit, without ever leaving the work tree in the middle of a merge.

The merge is computed away from the work tree (`git merge-tree` for the code, ralph's own merge
by record for plan.jsonl), then the work tree is moved from HEAD to the result in one step
(`git read-tree -m -u`), under the plan lock. A conflict changes nothing: the caller gets the
conflicting paths. The loop's own uncommitted plan changes are merged too and go into the commit.

The move is recorded first (ralph.store.intent, MERGE): a kill between its steps is finished by
the next start. A step that fails (a full disk) is undone at once; an undo that fails as well
keeps the record, and the error says the merge is half done, never that nothing changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ralph.errors import GitError
from ralph.plan.merge import merge_bytes
from ralph.store import intent
from ralph.store.files import write_atomic
from ralph.store.git import Repo
from ralph.store.intent import Intent, IntentKind
from ralph.store.lock import plan_lock
from ralph.store.reader import PLAN_NAME, plan_path


@dataclass
class Integration:
    commit: str | None = None  # the loop's branch's new head; None: nothing merged
    conflicts: list[str] = field(default_factory=list)  # paths that would not merge
    commits: dict[str, str] = field(default_factory=dict)  # each branch commit -> its copy
    plan: bytes | None = None  # plan.jsonl as `commit` holds it
    intent: Intent | None = None  # the merge's record, for the caller to finish once it is done


def integrate(
    repo: Repo,
    start: str,
    tip: str,
    plan_base: bytes,
    task: str | None = None,
    branch: str | None = None,
    built: list[str] | None = None,
) -> Integration:
    """Bring the commits `start..tip` (a build's branch) onto HEAD, one copy each, in order, as
    `git cherry-pick` would: the history keeps every attempt the branch recorded.

    `plan_base` is plan.jsonl as the branch started from (the loop's copy when the build began,
    committed or not): the branch's first commit's plan changes are measured from it. Paths the
    user has changed in the work tree are never overwritten: touching one is a conflict.

    `task`, `branch` and `built` (the build's own commits) go in the merge's record, for a kill's
    recovery to record the build's commit on its task and mark its branch merged: the caller
    does both (settle.after_merge), then finishes the record (`intent` of the result).
    """
    root = repo.root
    with plan_lock(root):
        repo.state.refuse_switched_branch()  # under the lock: another build's merge is not cut in
        head = repo.head()
        commits = repo.git("rev-list", "--reverse", f"{start}..{tip}").split()
        if head is None or not commits:
            return Integration()
        ours_plan = plan_path(root).read_bytes()
        copied = _copy_commits(repo, head, commits, plan_base, ours_plan)
        if copied.conflicts:
            return copied
        assert copied.commit is not None  # no conflict: every commit of the branch was copied
        blocking = in_the_way(repo, head, copied.commit)
        if blocking:
            return Integration(conflicts=blocking)
        subject = repo.git("log", "-1", "--format=%s", copied.commit).strip() or "ralph"
        copies = [copied.commits[commit] for commit in built or [] if commit in copied.commits]
        copied.intent = intent.begin(
            repo,
            IntentKind.MERGE,
            root,
            head=head,
            commit=copied.commit,
            task=task,
            branch=branch,
            tip=tip,
            record=copies[-1] if copies else None,
        )
        _move_work_tree(repo, root, head, copied.commit, ours_plan, subject, copied.plan, copied.intent)
        return copied


def merge_commits(repo: Repo, ours: str, theirs: str, message: str, plan: bytes | None = None) -> Integration:
    """The merge of commit `theirs` into `ours` as `git merge --no-ff` would make it (a commit
    with both as parents), in git's object store only: the code through `git merge-tree`,
    plan.jsonl by record from the two commits' merge base, or `plan` when the caller made it
    (a runner replays its operations: ralph.usecases.sync). Nothing moves: the caller moves HEAD
    (move_head) once it wants the result. A conflict gives the conflicting paths."""
    if plan is None:
        code, out, _ = repo.attempt("merge-base", ours, theirs)
        base_plan = repo.objects.file_at(out.strip(), PLAN_NAME) if code == 0 else None
        ours_plan, theirs_plan = (
            repo.objects.file_at(ours, PLAN_NAME) or b"",
            repo.objects.file_at(theirs, PLAN_NAME) or b"",
        )
        merged = merge_bytes(base_plan or b"", ours_plan, theirs_plan, PLAN_NAME)
        if merged.conflicts:
            return Integration(conflicts=[PLAN_NAME])
        plan = merged.data
    tree, conflicts = _merge_code(repo, ours, theirs)
    if conflicts:
        return Integration(conflicts=conflicts)
    commit = repo.objects.commit_tree(
        repo.objects.tree_with_file(tree, PLAN_NAME, plan), ours, message, theirs
    )
    return Integration(commit=commit)


def move_head(repo: Repo, start: str, target: str) -> None:
    """HEAD's branch, index and work tree from `start` to `target`, in one step, under the plan
    lock. A change made to plan.jsonl meanwhile (by hand: ralph's commands wait for the lock)
    is merged by record into the new plan and stays uncommitted, as it was; one that cannot
    merge is refused before anything moves."""
    root = repo.root
    with plan_lock(root):
        repo.state.refuse_switched_branch()
        current = plan_path(root).read_bytes()
        start_plan = repo.objects.file_at(start, PLAN_NAME)
        kept = None
        if start_plan is not None and current != start_plan:
            merged = merge_bytes(
                start_plan, current, repo.objects.file_at(target, PLAN_NAME) or b"", PLAN_NAME
            )
            if merged.conflicts:
                raise GitError(
                    f"{PLAN_NAME} was changed by hand meanwhile and does not merge with {target[:12]}:"
                    " commit or undo that change, then run the command again"
                )
            kept = merged.data
        subject = repo.git("log", "-1", "--format=%s", target).strip() or "ralph"
        moving = intent.begin(repo, IntentKind.MERGE, root, head=start, commit=target)
        _move_work_tree(repo, root, start, target, current, subject, moving=moving)
        if kept is not None:
            write_atomic(plan_path(root), kept)
        intent.finish(repo, moving)


def _copy_commits(
    repo: Repo, head: str, branch: list[str], plan_base: bytes, ours_plan: bytes
) -> Integration:
    """The copies, made in git's object store only: nothing moves until all of them merged."""
    parent, previous, current = head, plan_base, ours_plan
    copies: dict[str, str] = {}
    for commit in branch:
        theirs = repo.objects.file_at(commit, PLAN_NAME) or b""
        merged = merge_bytes(previous, current, theirs, PLAN_NAME)
        if merged.conflicts:
            return Integration(conflicts=[PLAN_NAME])
        tree, conflicts = _merge_code(repo, parent, commit) if _changes_code(repo, commit) else (parent, [])
        if conflicts:
            return Integration(conflicts=conflicts)
        message = repo.git("log", "-1", "--format=%B", commit)
        parent = repo.objects.commit_tree(
            repo.objects.tree_with_file(tree, PLAN_NAME, merged.data), parent, message
        )
        copies[commit], previous, current = parent, theirs, merged.data
    return Integration(commit=parent, commits=copies, plan=current)


def _changes_code(repo: Repo, commit: str) -> bool:
    changed = repo.paths("diff-tree", "-r", "-z", "--name-only", "--root", commit)
    return bool(set(changed) - {PLAN_NAME, commit})


def _merge_code(repo: Repo, ours: str, theirs: str) -> tuple[str, list[str]]:
    # plan.jsonl is merged by record above; its text merge here is only thrown away (a driver
    # that does nothing saves starting `ralph merge-driver` for it).
    tree, conflicts = repo.objects.merge_tree(ours, theirs, plan_driver="true")
    return tree, [path for path in conflicts if path != PLAN_NAME]


def in_the_way(repo: Repo, head: str, tree: str) -> list[str]:
    """Paths that moving HEAD to `tree` would change and that differ from HEAD in the work tree:
    the user's uncommitted edits, which a merge must not overwrite."""
    changing = set(repo.paths("diff-tree", "-r", "-z", "--name-only", head, tree)) - {PLAN_NAME}
    return sorted(changing & repo.changes.paths(among=changing))


def _move_work_tree(
    repo: Repo,
    root: Path,
    head: str,
    commit: str,
    ours_plan: bytes,
    subject: str,
    target_plan: bytes | None = None,
    moving: Intent | None = None,
) -> None:
    """HEAD's branch, index and work tree from `head` to `commit`, or none of them.

    plan.jsonl is replaced atomically first and staged, so read-tree finds it as `commit` has it
    and leaves it alone: git's checkout unlinks a file and writes it anew, and a reader without
    the lock (the loop between builds, `ralph status`) would find no plan.jsonl at all."""
    if target_plan is None:  # `commit`'s, when the caller does not have it at hand
        target_plan = repo.objects.file_at(commit, PLAN_NAME)
    moved = False  # whether anything may have changed yet
    try:
        if target_plan is not None:
            write_atomic(plan_path(root), target_plan)  # fails with the file as it was
            moved = True
            repo.git("update-index", "-q", "--", PLAN_NAME)
        moved = True
        repo.git("read-tree", "-m", "-u", head, commit)
        # The old value makes this a compare-and-swap: a commit made meanwhile is never lost.
        repo.git("update-ref", "-m", subject[:200], "HEAD", commit, head)
    except BaseException as exc:
        if not moved:
            if moving is not None:
                intent.finish(repo, moving)
            raise
        _undo_move(repo, root, head, commit, ours_plan, moving, exc)
        raise


def _undo_move(
    repo: Repo,
    root: Path,
    head: str,
    commit: str,
    ours_plan: bytes,
    moving: Intent | None,
    cause: BaseException,
) -> None:
    """A step of the move failed: every path it may have touched back as `head` has it, and
    plan.jsonl as it was. An undo that fails too leaves the merge's record for the next start
    to finish, and says so."""
    from ralph.errors import RalphError

    try:
        settle_paths(repo, head, commit, to=head)
        write_atomic(plan_path(root), ours_plan)
    except RalphError as undo:
        if isinstance(cause, KeyboardInterrupt):
            return  # the record stays; the next start finishes the merge
        raise GitError(
            f"{cause}; undoing the half-made merge failed too ({undo}): the next 'ralph construct'"
            " or 'ralph doctor --fix' finishes it"
        ) from None
    if moving is not None:
        intent.finish(repo, moving)
    if isinstance(cause, RalphError):
        raise GitError(
            f"{cause}; nothing was merged: HEAD, the index and the work tree are as they were"
        ) from None


def settle_paths(
    repo: Repo, start: str, end: str, to: str | None = None, check_only: bool = False
) -> list[str]:
    """Every path that differs between commits `start` and `end` (plan.jsonl too), in the index and
    the work tree as commit `to` (default `end`) has it: a move between them that stopped half way
    finished or undone. Only paths whose work tree content is `start`'s or `end`'s (or missing)
    are touched; `check_only` returns the others (a person's edit since) and changes nothing."""
    to = end if to is None else to
    changing = repo.paths("diff-tree", "-r", "-z", "--name-only", start, end)
    if not changing:
        return []
    if check_only:
        return _foreign(repo, start, end, changing)
    present = {
        line.split("\t", 1)[1]
        for line in repo.git("ls-tree", "-r", "-z", to, "--", *changing).split("\0")
        if "\t" in line
    }
    absent = sorted(set(changing) - present)
    for path in absent:  # first: on a full disk, what they free lets git write the index
        (repo.root / path).unlink(missing_ok=True)
    if absent:
        repo.git(
            "rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul",
            stdin="\0".join(absent).encode(),
        )  # fmt: skip
    if present:
        listed = "\0".join(sorted(present)).encode()
        repo.git("checkout", to, "--pathspec-from-file=-", "--pathspec-file-nul", stdin=listed)
    return []


def _foreign(repo: Repo, start: str, end: str, paths: list[str]) -> list[str]:
    """Of `paths`, those whose work tree content is neither `start`'s nor `end`'s."""
    changed = sorted(repo.changes.paths(among=paths) - {PLAN_NAME})
    files = [path for path in changed if (repo.root / path).is_file()]
    if not files:
        return []
    hashes = dict(zip(files, repo.git("hash-object", "--", *files).split(), strict=True))
    known = set()
    for commit in (start, end):
        for line in repo.git("ls-tree", "-r", "-z", commit, "--", *files).split("\0"):
            if "\t" in line:
                meta, path = line.split("\t", 1)
                known.add((path, meta.split()[2]))
    return [path for path in files if (path, hashes[path]) not in known]
