"""Bringing a build's branch into the loop's branch: code and plan.jsonl together, commit by
commit, without ever leaving the work tree in the middle of a merge.

The merge is computed away from the work tree (`git merge-tree` for the code, ralph's own merge
by record for plan.jsonl), then the work tree is moved from HEAD to the result in one step
(`git read-tree -m -u`), under the plan lock. A conflict changes nothing: the caller gets the
conflicting paths. The loop's own uncommitted plan changes are merged too and go into the commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ralph.errors import GitError
from ralph.plan.merge import merge_bytes
from ralph.store.files import write_atomic
from ralph.store.git import Repo
from ralph.store.lock import plan_lock
from ralph.store.reader import PLAN_NAME, plan_path


@dataclass
class Integration:
    commit: str | None = None  # the loop's branch's new head; None: nothing merged
    conflicts: list[str] = field(default_factory=list)  # paths that would not merge
    commits: dict[str, str] = field(default_factory=dict)  # each branch commit -> its copy
    plan: bytes | None = None  # plan.jsonl as `commit` holds it


def integrate(repo: Repo, start: str, tip: str, plan_base: bytes) -> Integration:
    """Bring the commits `start..tip` (a build's branch) onto HEAD, one copy each, in order, as
    `git cherry-pick` would: the history keeps every attempt the branch recorded.

    `plan_base` is plan.jsonl as the branch started from (the loop's copy when the build began,
    committed or not): the branch's first commit's plan changes are measured from it. Paths the
    user has changed in the work tree are never overwritten: touching one is a conflict.
    """
    root = repo.root
    with plan_lock(root):
        head = repo.head()
        branch = repo.git("rev-list", "--reverse", f"{start}..{tip}").split()
        if head is None or not branch:
            return Integration()
        ours_plan = plan_path(root).read_bytes()
        copied = _copy_commits(repo, head, branch, plan_base, ours_plan)
        if copied.conflicts:
            return copied
        assert copied.commit is not None  # no conflict: every commit of the branch was copied
        blocking = in_the_way(repo, head, copied.commit)
        if blocking:
            return Integration(conflicts=blocking)
        subject = repo.git("log", "-1", "--format=%s", copied.commit).strip() or "ralph"
        _move_work_tree(repo, root, head, copied.commit, ours_plan, subject, copied.plan)
        return copied


def merge_commits(repo: Repo, ours: str, theirs: str, message: str) -> Integration:
    """The merge of commit `theirs` into `ours` as `git merge --no-ff` would make it (a commit
    with both as parents), in git's object store only: the code through `git merge-tree`,
    plan.jsonl by record from the two commits' merge base. Nothing moves: the caller moves HEAD
    (move_head) once it wants the result. A conflict gives the conflicting paths."""
    code, out, _ = repo.attempt("merge-base", ours, theirs)
    base_plan = repo.file_at(out.strip(), PLAN_NAME) if code == 0 else None
    ours_plan, theirs_plan = repo.file_at(ours, PLAN_NAME) or b"", repo.file_at(theirs, PLAN_NAME) or b""
    merged = merge_bytes(base_plan or b"", ours_plan, theirs_plan, PLAN_NAME)
    if merged.conflicts:
        return Integration(conflicts=[PLAN_NAME])
    tree, conflicts = _merge_code(repo, ours, theirs)
    if conflicts:
        return Integration(conflicts=conflicts)
    commit = repo.commit_tree(repo.tree_with_file(tree, PLAN_NAME, merged.data), ours, message, theirs)
    return Integration(commit=commit)


def move_head(repo: Repo, start: str, target: str) -> None:
    """HEAD's branch, index and work tree from `start` to `target`, in one step, under the plan
    lock. A change made to plan.jsonl meanwhile (by hand: ralph's commands wait for the lock)
    is merged by record into the new plan and stays uncommitted, as it was; one that cannot
    merge is refused before anything moves."""
    root = repo.root
    with plan_lock(root):
        current = plan_path(root).read_bytes()
        start_plan = repo.file_at(start, PLAN_NAME)
        kept = None
        if start_plan is not None and current != start_plan:
            merged = merge_bytes(start_plan, current, repo.file_at(target, PLAN_NAME) or b"", PLAN_NAME)
            if merged.conflicts:
                raise GitError(
                    f"{PLAN_NAME} was changed by hand meanwhile and does not merge with {target[:12]}:"
                    " commit or undo that change, then run the command again"
                )
            kept = merged.data
        subject = repo.git("log", "-1", "--format=%s", target).strip() or "ralph"
        _move_work_tree(repo, root, start, target, current, subject)
        if kept is not None:
            write_atomic(plan_path(root), kept)


def _copy_commits(
    repo: Repo, head: str, branch: list[str], plan_base: bytes, ours_plan: bytes
) -> Integration:
    """The copies, made in git's object store only: nothing moves until all of them merged."""
    parent, previous, current = head, plan_base, ours_plan
    copies: dict[str, str] = {}
    for commit in branch:
        theirs = repo.file_at(commit, PLAN_NAME) or b""
        merged = merge_bytes(previous, current, theirs, PLAN_NAME)
        if merged.conflicts:
            return Integration(conflicts=[PLAN_NAME])
        tree, conflicts = _merge_code(repo, parent, commit) if _changes_code(repo, commit) else (parent, [])
        if conflicts:
            return Integration(conflicts=conflicts)
        message = repo.git("log", "-1", "--format=%B", commit)
        parent = repo.commit_tree(repo.tree_with_file(tree, PLAN_NAME, merged.data), parent, message)
        copies[commit], previous, current = parent, theirs, merged.data
    return Integration(commit=parent, commits=copies, plan=current)


def _changes_code(repo: Repo, commit: str) -> bool:
    changed = repo.git("diff-tree", "-r", "-z", "--name-only", "--root", commit).split("\0")
    return bool(set(changed) - {"", PLAN_NAME, commit})


def _merge_code(repo: Repo, ours: str, theirs: str) -> tuple[str, list[str]]:
    # plan.jsonl is merged by record above; its text merge here is only thrown away (a driver
    # that does nothing saves starting `ralph merge-driver` for it).
    tree, conflicts = repo.merge_tree(ours, theirs, plan_driver="true")
    return tree, [path for path in conflicts if path != PLAN_NAME]


def in_the_way(repo: Repo, head: str, tree: str) -> list[str]:
    """Paths that moving HEAD to `tree` would change and that differ from HEAD in the work tree:
    the user's uncommitted edits, which a merge must not overwrite."""
    changing = set(repo.git("diff-tree", "-r", "-z", "--name-only", head, tree).split("\0")) - {"", PLAN_NAME}
    return sorted(changing & repo.changed_paths(among=changing))


def _move_work_tree(
    repo: Repo,
    root: Path,
    head: str,
    commit: str,
    ours_plan: bytes,
    subject: str,
    target_plan: bytes | None = None,
) -> None:
    """HEAD's branch, index and work tree from `head` to `commit`, or none of them.

    plan.jsonl is replaced atomically first and staged, so read-tree finds it as `commit` has it
    and leaves it alone: git's checkout unlinks a file and writes it anew, and a reader without
    the lock (the loop between builds, `ralph status`) would find no plan.jsonl at all."""
    if target_plan is None:  # `commit`'s, when the caller does not have it at hand
        target_plan = repo.file_at(commit, PLAN_NAME)
    if target_plan is not None:
        write_atomic(plan_path(root), target_plan)
        repo.git("update-index", "-q", "--", PLAN_NAME)
    try:
        repo.git("read-tree", "-m", "-u", head, commit)
    except BaseException:
        _put_back_plan(repo, root, ours_plan)
        raise
    try:
        # The old value makes this a compare-and-swap: a commit made meanwhile is never lost.
        repo.git("update-ref", "-m", subject[:200], "HEAD", commit, head)
    except BaseException:
        repo.git("read-tree", "-m", "-u", commit, head)
        _put_back_plan(repo, root, ours_plan)
        raise


def _put_back_plan(repo: Repo, root: Path, ours_plan: bytes) -> None:
    repo.attempt("reset", "-q", "--", PLAN_NAME)  # its index entry as HEAD has it
    write_atomic(plan_path(root), ours_plan)
