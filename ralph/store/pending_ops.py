"""The operations behind plan changes written without a commit, until the commit that takes them.

The construct loop's agents run with RALPH_COMMIT=0, and the loop writes its own bookkeeping
(spending, verdicts, claims) the same way: plan and code are committed together later, by a commit
that knows nothing of the operations. Each such write appends one line here (in the work tree's
own git directory: each build worktree has its own): the plan's blob before and after it, and the
operations that made it (ralph.plan.ops). The commit that takes plan.jsonl reads the chain back:
when it leads from the parent's plan to the committed one without a gap, its message records the
operations (`Ralph-Op:` trailers); a gap (a hand edit, a plan restored, a change no operation
made) leaves the message without them, and a runner merges that change by record instead."""

from __future__ import annotations

import contextlib
import json
import os
from typing import TYPE_CHECKING

from ralph.store.blobs import blob_sha

if TYPE_CHECKING:  # a class made at import costs every state command's start-up: checkers only
    from pathlib import Path
    from typing import Protocol

    from ralph.plan.ops import Op

    class Repo(Protocol):
        """What this module needs of a repository (ralph.store.git.Repo, which uses this module)."""

        root: Path

        def git_dir(self) -> Path: ...


NAME = "ralph/pending-ops.jsonl"  # under the work tree's git directory
MAX_BYTES = 1 << 20


def remember(git_dir: Path, before: bytes, after: bytes, ops: list[Op] | None) -> None:
    """One uncommitted change of the plan, in the work tree's `git_dir`; `ops` None: no
    operation made it (a gap)."""
    from ralph.plan.ops import encode

    encoded = [encode(op) for op in ops] if ops is not None else None
    line = {"before": blob_sha(before), "after": blob_sha(after), "ops": encoded}
    path = git_dir / NAME
    path.parent.mkdir(exist_ok=True)
    if path.exists() and path.stat().st_size > MAX_BYTES:
        path.unlink()  # a clone whose plan ralph never commits (config commit: false): a gap
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, json.dumps(line).encode() + b"\n")
        os.fsync(fd)  # the commit that takes the plan may come after a kill and a restart
    finally:
        os.close(fd)


def trailers(repo: Repo, parent_plan: str | None, committed_plan: str) -> str:
    """The `Ralph-Op:` lines for a commit that takes the plan from blob `parent_plan` to blob
    `committed_plan`: the pending operations, when their chain links the two without a gap."""
    from ralph.plan.ops import TRAILER

    chain: dict[str, tuple[str, list[str] | None]] = {}
    try:
        text = (repo.git_dir() / NAME).read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return ""
    for raw in text.splitlines():
        try:
            entry = json.loads(raw)
            chain[entry["before"]] = (entry["after"], entry["ops"])
        except (ValueError, KeyError, TypeError):  # a line a kill cut short: a gap
            continue
    found: list[str] = []
    current = parent_plan
    for _ in range(len(chain)):
        if current == committed_plan or current not in chain:
            break
        current, ops = chain[current]
        if ops is None:
            return ""
        found += ops
    if current != committed_plan or not found:
        return ""
    return "\n".join(f"{TRAILER}: {op}" for op in found)


def message_with(repo: Repo, message: str, parent_plan: str | None, committed_plan: str) -> str:
    """`message` with the trailers of the pending operations that take the plan from blob
    `parent_plan` to `committed_plan`; as it is when there are none, or when one quotes a secret
    (a commit message never does)."""
    if not (repo.git_dir() / NAME).exists():
        return message
    from ralph.plan.ops import with_trailers
    from ralph.secrets import redact

    lines = trailers(repo, parent_plan, committed_plan)
    return with_trailers(message, lines) if lines and redact(lines, repo.root) == lines else message


def forget(repo: Repo) -> None:
    """The plan was committed: what was pending is in that commit (or merged by record)."""
    with contextlib.suppress(FileNotFoundError):
        (repo.git_dir() / NAME).unlink()
