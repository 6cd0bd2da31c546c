"""What ralph made in a repository, recorded before it is made: its worktrees, their temporary
folders, its build branches and its drafts (ralph.store.drafts). ralph removes, resets or deletes
only what a record here names, never what merely looks like its names (a person's `ralph/hotfix`
branch, their worktree in a folder called `ralph-app-hotfix`).

One small JSON file per thing under `<git common dir>/ralph/owned/`, written (and synced) before
git is asked to make the thing and removed after it is gone: a run killed between the two leaves a
record of something that may or may not exist, which clean-up then finds and finishes."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path

from ralph.store.git import Repo


class OwnedKind(StrEnum):
    WORKTREE = "worktree"  # a git worktree at `path`, in the temporary folder `folder`
    BRANCH = "branch"  # a branch `name` ralph created at commit `start`
    DRAFT = "draft"  # a draft branch `name` of task `task`, last set by ralph to commit `start`


@dataclass(frozen=True)
class Owned:
    kind: OwnedKind
    name: str  # a worktree's path, or a branch's name (without refs/heads/)
    start: str | None = None  # the commit a branch was created at
    folder: str | None = None  # the temporary folder a worktree was made in (removed with it)
    pid: int | None = None  # the process that made it
    # A build branch whose commits were copied into the loop's branch (a merge copies them, so
    # they are not in HEAD themselves) while it pointed at this commit: merged, for clean-up.
    merged: str | None = None
    task: str | None = None  # the task a draft keeps the work of

    @property
    def key(self) -> str:
        return hashlib.blake2b(f"{self.kind}\0{self.name}".encode(), digest_size=10).hexdigest()


def ledger(repo: Repo) -> Path:

    return repo.common_dir() / "ralph" / "owned"


def record(repo: Repo, owned: Owned) -> None:
    """Write the record of `owned` before it is made (synced: a power cut must not lose it)."""
    folder = ledger(repo)
    folder.mkdir(parents=True, exist_ok=True)
    data = json.dumps({**asdict(owned), "pid": owned.pid or os.getpid()}).encode()
    temp = folder / f".{owned.key}.{os.getpid()}.tmp"
    with open(temp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, folder / f"{owned.key}.json")


def forget(repo: Repo, owned: Owned) -> None:
    """The thing is gone: its record goes too."""
    with contextlib.suppress(FileNotFoundError):
        (ledger(repo) / f"{owned.key}.json").unlink()


def recorded(repo: Repo) -> list[Owned]:
    """Every record, oldest first; a record that does not parse (a torn write) is skipped."""
    folder = ledger(repo)
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.json"), key=_age):
        try:
            data = json.loads(path.read_bytes())
            found.append(
                Owned(
                    OwnedKind(data["kind"]),
                    data["name"],
                    data.get("start"),
                    data.get("folder"),
                    data.get("pid"),
                    data.get("merged"),
                    data.get("task"),
                )
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return found


def _age(path: Path) -> int:
    """When the record was written; a record another thread forgot since the listing sorts first
    and is then skipped (reading it fails), rather than failing the listing."""
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return 0


def mark_merged(repo: Repo, branch: str, tip: str) -> None:
    """The branch's commits up to `tip` are merged (as copies): clean-up may delete it while it
    still points there. Nothing to do for a branch ralph has no record of."""
    from dataclasses import replace

    made = owns_branch(repo, branch)
    if made is not None and made.merged != tip:
        record(repo, replace(made, merged=tip))


def owns_branch(repo: Repo, name: str) -> Owned | None:
    """ralph's record of the branch `name` (a build branch or a draft)."""
    branches = (OwnedKind.BRANCH, OwnedKind.DRAFT)
    return next((o for o in recorded(repo) if o.kind in branches and o.name == name), None)


def owns_worktree(repo: Repo, path: Path) -> Owned | None:
    wanted = _resolved(path)
    return next(
        (o for o in recorded(repo) if o.kind is OwnedKind.WORKTREE and _resolved(Path(o.name)) == wanted),
        None,
    )


def _resolved(path: Path) -> str:
    try:
        return str(path.resolve())
    except OSError:
        return str(path)
