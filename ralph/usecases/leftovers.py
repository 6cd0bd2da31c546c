"""The worktrees and build branches a killed `ralph construct` left, as ralph recorded making
them (ralph.store.owned; never one that merely looks like its names): found, each a Finding, and
removed. A worktree's uncommitted changes are saved as a patch first; a branch with commits HEAD
lacks is kept unless forced. Records of ones that never came to be are findings too."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ralph.errors import GitError
from ralph.store import owned
from ralph.store.files import create_new, free_name
from ralph.store.git import Repo
from ralph.store.owned import Owned, OwnedKind
from ralph.text import plural
from ralph.usecases.findings import PATCHES, Finding, FindingKind, Worktree


def worktrees(repo: Repo) -> list[Worktree]:
    """Every worktree of the repository but the main one, from `git worktree list --porcelain`."""
    found = []
    for block in repo.git("worktree", "list", "--porcelain", "-z").split("\0\0")[1:]:
        fields = dict((entry.split(" ", 1) + [""])[:2] for entry in block.split("\0") if entry)
        if "worktree" not in fields:
            continue
        branch = fields.get("branch", "").removeprefix("refs/heads/") or None
        found.append(Worktree(Path(fields["worktree"]), branch, "prunable" in fields))
    return found


def worktree_findings(repo: Repo) -> list[Finding]:
    """The worktrees ralph recorded making (none a person made, whatever its name), and records of
    worktrees that do not exist (a kill between the record and git)."""
    made_trees = [made for made in owned.recorded(repo) if made.kind is OwnedKind.WORKTREE]
    if not made_trees:  # the usual case, asked at the start of every construct run: no more git
        return []
    here = repo.root.resolve()
    listed = {_resolved(worktree.path): worktree for worktree in worktrees(repo)}
    found = []
    for made in sorted(made_trees, key=lambda made: made.name):
        worktree = listed.get(_resolved(Path(made.name)))
        if worktree is None:
            problem = "a record of a worktree a killed ralph run was making; it does not exist"
            found.append(Finding(FindingKind.RECORD, made.name, problem, "forgets the record", record=made))
            continue
        if worktree.path.resolve() == here:
            continue
        on = f"on branch {worktree.branch}" if worktree.branch else "detached"
        if worktree.prunable:
            problem, fix = f"a worktree ({on}) left by a killed ralph run, its folder gone", "forgets it"
        else:
            problem, fix = f"a worktree ({on}) left by a killed ralph run", _worktree_fix(repo, worktree)
        found.append(
            Finding(FindingKind.WORKTREE, str(worktree.path), problem, fix, worktree=worktree, record=made)
        )
    return found


def _resolved(path: Path) -> str:
    try:
        return str(path.resolve())
    except OSError:
        return str(path)


def _worktree_fix(repo: Repo, worktree: Worktree) -> str:
    changed = _changed(worktree)
    if not changed:
        return "removes it"
    return (
        f"saves its uncommitted changes ({plural(len(changed), 'file')}) to"
        f" {_patch_path(worktree, repo.root)}, then removes it"
    )


def _changed(worktree: Worktree) -> set[str]:
    try:
        return Repo(worktree.path).changes.paths()
    except GitError:
        return set()


def _patch_path(worktree: Worktree, root: Path) -> Path:
    """Where its changes will be kept: a name no earlier patch has (two killed runs of one task
    leave worktrees of the same name)."""
    return free_name(root / PATCHES / f"{worktree.path.name}.patch").relative_to(root)


def branch_findings(repo: Repo, force: bool) -> list[Finding]:
    """The build branches ralph recorded making and no worktree has checked out; a person's
    branches, `ralph/...` or not, are never judged."""
    made = [o for o in owned.recorded(repo) if o.kind is OwnedKind.BRANCH]
    if not made:  # the usual case, asked at the start of every construct run: no more git
        return []
    checked_out = {worktree.branch for worktree in worktrees(repo)} | {repo.branch()}
    head = repo.head()
    found = []
    for record in sorted(made, key=lambda record: record.name):
        name = record.name
        commit = repo.commit_of(f"refs/heads/{name}")
        if commit is None:
            problem = "a record of a branch a killed ralph run was making; it does not exist"
            found.append(Finding(FindingKind.RECORD, name, problem, "forgets the record", record=record))
            continue
        if name in checked_out:
            continue
        found.append(_branch_finding(repo, record, commit, head, force))
    return found


def _branch_finding(repo: Repo, record: Owned, commit: str, head: str | None, force: bool) -> Finding:
    name = record.name
    ahead = 0 if record.merged == commit else _commits_not_in(repo, commit, head)
    if not ahead:
        return Finding(
            FindingKind.BRANCH,
            name,
            "a branch of a ralph run, merged and in no worktree",
            "deletes it",
            commit=commit,
            record=record,
        )
    into = repo.branch() or "HEAD"
    problem = f"a branch of a ralph run with {plural(ahead, 'commit')} not merged into {into}"
    if force:
        fix = f"deletes it (--force; 'git branch {name} {commit}' restores it)"
        return Finding(FindingKind.BRANCH, name, problem, fix, commit=commit, record=record)
    return Finding(
        FindingKind.BRANCH,
        name,
        problem,
        "keeps it (merge it, or --force deletes it)",
        False,
        commit=commit,
        record=record,
    )


def _commits_not_in(repo: Repo, commit: str, head: str | None) -> int:
    if head is None:
        return int(repo.git("rev-list", "--count", commit).strip())
    return int(repo.git("rev-list", "--count", commit, f"^{head}").strip())


def repair(repo: Repo, finding: Finding) -> None:
    """A worktree removed (its changes kept as a patch), or a branch deleted where it still points
    as judged (never a commit nobody saw); ralph's record of it forgotten."""
    assert finding.record
    if finding.kind is FindingKind.WORKTREE:
        assert finding.worktree
        _remove_worktree(repo, finding.worktree)
    else:
        assert finding.kind is FindingKind.BRANCH and finding.commit
        repo.git("update-ref", "-d", f"refs/heads/{finding.subject}", finding.commit)
    owned.forget(repo, finding.record)
    finding.fixed = True


def _remove_worktree(repo: Repo, worktree: Worktree) -> None:
    if worktree.prunable:
        _forget(repo, worktree)
        return
    changed = _changed(worktree)
    if changed:
        target = create_new(repo.root / PATCHES / f"{worktree.path.name}.patch")
        Repo(worktree.path).changes.save_patch(changed, target)
    repo.worktrees.remove(worktree.path)
    with contextlib.suppress(OSError):
        worktree.path.parent.rmdir()  # the run's temporary folder, when nothing else is in it


def _forget(repo: Repo, worktree: Worktree) -> None:
    """Drop the registration of a worktree whose folder is gone: what `git worktree prune` does for
    it alone (prune would also forget the user's worktrees on a drive that is not mounted)."""
    import shutil

    for admin in (repo.common_dir() / "worktrees").iterdir():
        try:
            gitdir = Path((admin / "gitdir").read_text(encoding="utf-8").strip())
        except OSError:
            continue
        if gitdir.parent == worktree.path:
            shutil.rmtree(admin, ignore_errors=True)
