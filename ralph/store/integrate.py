"""Bringing a build's branch into the loop's branch: code and plan.jsonl together, in one commit,
without ever leaving the work tree in the middle of a merge.

The merge is computed away from the work tree (`git merge-tree` for the code, ralph's own merge
by record for plan.jsonl), then the work tree is moved from HEAD to the result in one step
(`git read-tree -m -u`), under the plan lock. A conflict changes nothing: the caller gets the
conflicting paths. The loop's own uncommitted plan changes are merged too and go into the commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ralph.plan.merge import merge_bytes
from ralph.store.files import write_atomic
from ralph.store.git import Repo
from ralph.store.lock import plan_lock
from ralph.store.reader import PLAN_NAME, plan_path


@dataclass
class Integration:
    commit: str | None = None  # the new commit on the loop's branch; None: nothing merged
    conflicts: list[str] = field(default_factory=list)  # paths that would not merge


def integrate(repo: Repo, tip: str, plan_base: bytes, message: str) -> Integration:
    """Merge commit `tip` (a build's branch) into HEAD as one commit with `message`.

    `plan_base` is plan.jsonl as the branch started from (the loop's copy when the build began,
    committed or not): each side's changes to the plan are measured from it. Paths the user has
    changed in the work tree are never overwritten: touching one is a conflict.
    """
    root = repo.root
    with plan_lock(root):
        head = repo.head()
        if head is None or repo.git("merge-base", head, tip).strip() == tip:
            return Integration()
        ours_plan = plan_path(root).read_bytes()
        theirs_plan = repo.file_at(tip, PLAN_NAME) or b""
        tree, conflicts = _merge_code(repo, head, tip)
        merged = merge_bytes(plan_base, ours_plan, theirs_plan, PLAN_NAME)
        if merged.conflicts:
            conflicts.append(PLAN_NAME)
        conflicts += _dirty_in_the_way(repo, head, tree)
        if conflicts:
            return Integration(conflicts=sorted(set(conflicts)))
        commit = repo.commit_tree(repo.tree_with_file(tree, PLAN_NAME, merged.data), head, message)
        _move_work_tree(repo, root, head, commit, ours_plan, message.splitlines()[0] if message else "ralph")
        return Integration(commit=commit)


def _merge_code(repo: Repo, head: str, tip: str) -> tuple[str, list[str]]:
    # plan.jsonl is merged by record below; its text merge here is only thrown away (a driver
    # that does nothing saves starting `ralph merge-driver` for it).
    tree, conflicts = repo.merge_tree(head, tip, plan_driver="true")
    return tree, [path for path in conflicts if path != PLAN_NAME]


def _dirty_in_the_way(repo: Repo, head: str, tree: str) -> list[str]:
    """Paths the merge would change that differ from HEAD in the work tree (the user's edits)."""
    changing = set(repo.git("diff-tree", "-r", "-z", "--name-only", head, tree).split("\0")) - {"", PLAN_NAME}
    return sorted(changing & repo.changed_paths())


def _move_work_tree(repo: Repo, root: Path, head: str, commit: str, ours_plan: bytes, subject: str) -> None:
    """HEAD's branch, index and work tree from `head` to `commit`, or none of them."""
    head_plan = repo.file_at(head, PLAN_NAME)
    if head_plan is not None:
        write_atomic(plan_path(root), head_plan)  # read-tree refuses a modified file it must update
        repo.git("update-index", "-q", "--", PLAN_NAME)  # its index entry's stat, as rewritten
    try:
        repo.git("read-tree", "-m", "-u", head, commit)
    except BaseException:
        write_atomic(plan_path(root), ours_plan)
        raise
    try:
        # The old value makes this a compare-and-swap: a commit made meanwhile is never lost.
        repo.git("update-ref", "-m", subject[:200], "HEAD", commit, head)
    except BaseException:
        repo.git("read-tree", "-m", "-u", commit, head)
        write_atomic(plan_path(root), ours_plan)
        raise
