"""Drafts: the unfinished work of a task (a killed, interrupted, budget-stopped or set-aside build)
kept as a commit on a branch of its own, `ralph/draft/<task id>`, for a person or the task's next
build to look at (`git diff HEAD...ralph/draft/<task id>`).

The commit is made with git plumbing through an index of its own (GIT_INDEX_FILE): the work tree
and the index the person uses are never touched. The branch is ralph's by record (ralph.store.owned,
kind DRAFT, written before the branch is made); a branch of that name that is not on record (a
person's) is never moved: the draft takes the next free name. A newer draft of a task replaces
ralph's older one as its child (the older draft its second parent), so the branch only moves
forward and a push of it needs no force. A draft is deleted by its record only, and only while the
branch still points where ralph left it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from ralph.errors import GitError
from ralph.store import owned
from ralph.store.git import ZERO_SHA, Repo
from ralph.store.owned import Owned, OwnedKind

DRAFT_PREFIX = "ralph/draft/"


def draft_of(repo: Repo, task_id: str) -> Owned | None:
    """ralph's draft of the task, if its record names one."""
    return next(
        (o for o in owned.recorded(repo) if o.kind is OwnedKind.DRAFT and o.task == task_id),
        None,
    )


def named(repo: Repo, branch: str) -> Owned | None:
    """ralph's draft on the branch `branch`, by record (a subtask's draft is its ancestor's)."""
    return next(
        (o for o in owned.recorded(repo) if o.kind is OwnedKind.DRAFT and o.name == branch),
        None,
    )


def drafts(repo: Repo) -> list[Owned]:
    """Every draft ralph recorded whose branch exists, by name."""
    found = [o for o in owned.recorded(repo) if o.kind is OwnedKind.DRAFT]
    return sorted((o for o in found if repo.commit_of(f"refs/heads/{o.name}")), key=lambda o: o.name)


def keep(repo: Repo, task_id: str, base: str, paths: set[str], message: str) -> str | None:
    """Commit `paths` as the work tree has them onto `base` (a commit), on ralph's draft branch of
    the task; the branch's name, or None when nothing differs from `base`. Neither the work tree nor
    the index is touched."""
    tree = _tree_with(repo, base, paths)
    if tree == repo.git("rev-parse", f"{base}^{{tree}}").strip():
        return None
    older = draft_of(repo, task_id)
    tip = repo.commit_of(f"refs/heads/{older.name}") if older else None
    if older and tip != older.start:  # moved by a person, or gone: no longer ralph's to move
        owned.forget(repo, older)
        older, tip = None, None
    commit = repo.objects.commit_tree(tree, base, message, *([tip] if tip else []))
    name = older.name if older else _free_name(repo, task_id)
    record = Owned(OwnedKind.DRAFT, name, start=commit, task=task_id)
    owned.record(repo, record)  # before the branch is made or moved: ralph's by record
    # Compare-and-swap: created only where no branch is, moved only from where ralph left it.
    repo.git("update-ref", f"refs/heads/{name}", commit, tip or ZERO_SHA)
    return name


def delete(repo: Repo, task_id: str) -> Owned | None:
    """Delete ralph's draft of the task, by its record, if the branch is still where ralph left
    it (a person's commits on it keep it); the record goes either way. The record of the branch
    deleted (its name, and the commit it was at), or None."""
    record = draft_of(repo, task_id)
    if record is None:
        return None
    deleted = None
    if record.start and repo.commit_of(f"refs/heads/{record.name}") == record.start:
        repo.worktrees.delete_branch(record.name, record.start)
        deleted = record
    owned.forget(repo, record)
    return deleted


def _free_name(repo: Repo, task_id: str) -> str:
    """ralph/draft/<task id>, or with -2, -3... when a branch of that name exists (a person's)."""
    name, number = f"{DRAFT_PREFIX}{task_id}", 1
    while repo.worktrees.branch_exists(name) or owned.owns_branch(repo, name):
        number += 1
        name = f"{DRAFT_PREFIX}{task_id}-{number}"
    return name


def _tree_with(repo: Repo, base: str, paths: set[str]) -> str:
    """`base`'s tree with `paths` as the work tree has them (gone ones removed), written through a
    temporary index."""
    handle, index = tempfile.mkstemp(prefix="ralph-draft-index-", dir=repo.git_dir())
    os.close(handle)
    try:
        own = repo.with_index(Path(index))
        own.git("read-tree", base)
        present = sorted(path for path in paths if os.path.lexists(repo.root / path))
        gone = sorted(set(paths) - set(present))
        try:  # each path by name, no pathspec to match: `git add` of 1,200 paths cost 0.3-0.9 CPU-s
            listed = b"".join(path.encode("utf-8", "surrogateescape") + b"\0" for path in sorted(paths))
            own.git("update-index", "--add", "--remove", "-z", "--stdin", stdin=listed)
        except GitError:  # a folder among them (a nested repository): git add knows what to make of it
            own.git("read-tree", base)
            if present:
                own.git("add", "-A", "--", *present)
            if gone:
                own.git("rm", "--cached", "-q", "--ignore-unmatch", "--", *gone)
        return own.git("write-tree").strip()
    finally:
        with contextlib.suppress(OSError):
            Path(index).unlink()
