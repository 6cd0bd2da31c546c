"""What a killed run leaves behind, made as ralph makes it: worktrees and build branches recorded as
ralph's (ralph.store.owned), for doctor and the loop's clean-up to find."""

from __future__ import annotations

from pathlib import Path

from ralph.store import owned
from ralph.store.git import Repo
from ralph.store.owned import Owned, OwnedKind
from tests.support.gitrepo import git


def leftover_worktree(root: Path, tmp: Path, label: str, branch: str | None = None) -> Path:
    """A worktree as ralph.loop.tree.work_tree's checkout makes it (<tmp>/ralph-<label>-XXXX/ralph-<label>),
    recorded as ralph's, as a killed run leaves it; on `branch` (made from HEAD, recorded too) as
    parallel builds have them."""
    path = tmp / f"ralph-{label}-k1ll3d" / f"ralph-{label}"
    path.parent.mkdir(parents=True)
    repo = Repo(root)
    owned.record(repo, Owned(OwnedKind.WORKTREE, str(path), folder=str(path.parent)))
    if branch:
        owned.record(repo, Owned(OwnedKind.BRANCH, branch, start=repo.head()))
    where = ["-b", branch] if branch else ["--detach"]
    git(root, "worktree", "add", "-q", *where, str(path), "HEAD")
    return path


def leftover_branch(root: Path, branch: str, commit: str = "HEAD") -> None:
    """A build branch ralph recorded making, left by a killed run."""
    repo = Repo(root)
    owned.record(repo, Owned(OwnedKind.BRANCH, branch, start=repo.head()))
    git(root, "branch", branch, commit)


def half_merged(root: Path, task: str, dead_pid: int) -> tuple[str, str]:
    """A build's merge as a run SIGKILLed between `git read-tree -m -u` and `git update-ref` leaves
    it: index and work tree at the merge, HEAD behind, the merge's record (ralph.store.intent)
    naming a process that is gone. Returns HEAD and the merge's commit."""
    import json

    from ralph.store.intent import folder

    head = git(root, "rev-parse", "HEAD").strip()
    (root / "feature.py").write_text("merged\n")
    git(root, "add", "feature.py")
    tree = git(root, "write-tree").strip()
    git(root, "reset", "-q", "--", "feature.py")
    (root / "feature.py").unlink()
    commit = git(root, "commit-tree", tree, "-p", head, "-m", f"ralph(build): {task} Feature").strip()
    git(root, "read-tree", "-m", "-u", head, commit)
    record = {"kind": "merge", "root": str(root), "pid": dead_pid, "started": None,
              "data": {"head": head, "commit": commit, "task": task}}  # fmt: skip
    target = folder(Repo(root))
    target.mkdir(parents=True, exist_ok=True)
    (target / f"merge-{dead_pid}-1.json").write_text(json.dumps(record))
    return head, commit


def persons_ralph_names(root: Path, tmp: Path) -> Path:
    """What a person made under names like ralph's, none of it recorded as ralph's: a merged branch
    `ralph/feature` checked out nowhere, `ralph/unmerged` (a commit of theirs on branch `side`),
    and a worktree of `side` shaped like ralph's old checkouts with an ignored file in it (which no
    patch would keep). Returns that worktree."""
    git(root, "branch", "ralph/feature")
    git(root, "checkout", "-q", "-b", "side")
    (root / "mine.txt").write_text("unmerged work\n")
    git(root, "add", "mine.txt")
    git(root, "commit", "-qm", "mine")
    git(root, "checkout", "-q", "-")
    git(root, "branch", "-f", "ralph/unmerged", "side")
    hotfix = tmp / "ralph-app-hotfix" / "ralph-app"
    git(root, "worktree", "add", "-q", str(hotfix), "side")
    (hotfix / ".env").write_text("SECRET=1\n")
    return hotfix
