"""The operations behind plan changes written without a commit, until the commit that takes them.

The construct loop's agents run with RALPH_COMMIT=0, and the loop writes its own bookkeeping
(spending, verdicts, claims) the same way: plan and code are committed together later, by a commit
that knows nothing of the operations. Each such write appends one line here (in the work tree's
own git directory: each build worktree has its own): the plan's blob before and after it, and the
operations that made it (ralph.plan.ops). The commit that takes plan.jsonl reads the chain back:
when it leads from the parent's plan to the committed one without a gap, its message records the
operations (`Ralph-Op:` trailers); a gap (a hand edit, a plan restored, a change no operation
made) leaves the message without them, and a runner merges that change by record instead.

Fenced runs (an agent, a gate) never see this record: the sandbox binds a file of their own
(FENCED_NAME) in its place, where their `ralph` commands append theirs. An agent can write anything
there, so nothing it wrote is trusted: operations a fenced run wrote are written into a commit
message only when replaying the chain on the parent's plan makes exactly the plan committed
(ralph.plan.replay); and every one only as ralph encodes it (JSON), never as the line said it.
ralph's own record skips the replay only in a construct loop whose runs are all fenced
(own_record_fenced): anywhere else an agent may have written it (an unfenced run, in the main tree
or a build's worktree; a person's command after one), and it is replayed the same way."""

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
        """What this module needs of a repository: its work tree and git directory (a
        ralph.store.git.Repo, or the Runner of one, whose commits use this module)."""

        root: Path

        def git_dir(self) -> Path: ...

    class Blobs(Protocol):
        """What this module reads of a repository's objects (ralph.store.git.Repo.objects)."""

        def blob(self, sha: str) -> bytes | None: ...

        def blobs(self, shas: list[str]) -> list[bytes | None]: ...


NAME = "ralph/pending-ops.jsonl"  # under the work tree's git directory
FENCED_NAME = "ralph/pending-ops.fenced.jsonl"  # fenced runs' `ralph` commands write here (see above)
NAMES = (NAME, FENCED_NAME)
MAX_BYTES = 1 << 20
# Whether ralph's own record (NAME) is out of every agent's reach in this process: only in a
# construct loop whose every run is fenced (own_record_fenced). Unfenced (--sandbox=off, or no
# bubblewrap), an agent runs as the person: its `ralph` commands write NAME themselves, and it can
# append any line there; and a person's command after such a run cannot know what ran. There, its
# lines are replayed like a fenced run's before a trailer names them.
_OWN_RECORD_FENCED = False


def own_record_fenced(fenced: bool) -> None:
    """The construct loop in this process fences every run (`fenced`), or not: whether ralph's own
    record is trusted as ralph wrote it, or replayed first."""
    global _OWN_RECORD_FENCED
    _OWN_RECORD_FENCED = fenced


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


def trailers(
    repo: Repo, objects: Blobs, parent_plan: str | None, committed_plan: str, committed: bytes | None = None
) -> str:
    """The `Ralph-Op:` lines for a commit that takes the plan from blob `parent_plan` to blob
    `committed_plan` (its bytes `committed`, when it is not in git yet): the pending operations,
    when their chain links the two without a gap and replaying them makes that very plan."""
    from ralph.plan.ops import TRAILER, encode

    ops, fenced = _chained(_chain(repo.git_dir()), parent_plan, committed_plan)
    if not ops or parent_plan is None:
        return ""
    if not fenced and _OWN_RECORD_FENCED:  # ralph's own record alone, every run since fenced
        return "\n".join(f"{TRAILER}: {encode(op)}" for op in ops)
    if committed is None:
        parent, committed = objects.blobs([parent_plan, committed_plan])
    else:
        parent = objects.blob(parent_plan)
    if parent is None or committed is None or not _replays_to(parent, ops, committed):
        return ""
    return "\n".join(f"{TRAILER}: {encode(op)}" for op in ops)


Chain = dict[str, tuple[str, list[str] | None, bool]]  # before -> (after, ops, from a fenced run)


def _chain(git_dir: Path) -> Chain:
    """Each recorded change by the plan's blob before it: the fenced runs' first, then ralph's own,
    which wins where both name one blob (a fenced line cannot hide ralph's)."""
    chain: Chain = {}
    for name in (FENCED_NAME, NAME):
        try:
            with open(git_dir / name, "rb") as handle:
                text = handle.read(MAX_BYTES + 1).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for raw in text.splitlines():
            entry = _entry(raw)
            if entry is not None:
                chain[entry[0]] = (entry[1], entry[2], name == FENCED_NAME)
    return chain


def _entry(raw: str) -> tuple[str, str, list[str] | None] | None:
    """One line read back: (before, after, the operations' texts or None), or None when it does
    not read (a line a kill cut short, or one an agent made up)."""
    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(entry, dict):
        return None
    before, after, ops = entry.get("before"), entry.get("after"), entry.get("ops")
    if not isinstance(before, str) or not isinstance(after, str):
        return None
    if ops is not None and not (isinstance(ops, list) and all(isinstance(op, str) for op in ops)):
        return None
    return before, after, ops


def _chained(chain: Chain, parent_plan: str | None, committed_plan: str) -> tuple[list[Op], bool]:
    """The operations that lead from `parent_plan` to `committed_plan` through `chain`, decoded,
    and whether a fenced run wrote any of them; none when there is a gap or one does not read as
    an operation."""
    from ralph.plan.ops import decode, well_formed

    texts: list[str] = []
    current, fenced = parent_plan, False
    for _ in range(len(chain)):
        if current == committed_plan or current not in chain:
            break
        current, ops, by_fence = chain[current]
        if ops is None:
            return [], False
        texts += ops
        fenced |= by_fence
    if current != committed_plan:
        return [], False
    try:
        decoded = [decode(text) for text in texts]
    except ValueError:
        return [], False
    return (decoded, fenced) if all(well_formed(op) for op in decoded) else ([], False)


def _replays_to(parent: bytes, ops: list[Op], committed: bytes) -> bool:
    """Whether `ops`, made again on the plan `parent`, make `committed` and every one applies: a
    trailer names only operations that happened, in the order that makes the commit's plan."""
    from ralph.errors import RalphError
    from ralph.plan.records import Replayed
    from ralph.plan.replay import replay

    try:
        made, outcomes = replay(parent, ops)
    except (RalphError, ValueError, TypeError, KeyError):  # a parent plan that no longer loads
        return False
    return made == committed and all(outcome.kind is Replayed.APPLIED for outcome in outcomes)


def message_with(
    repo: Repo,
    objects: Blobs,
    message: str,
    parent_plan: str | None,
    committed_plan: str,
    committed: bytes | None = None,
) -> str:
    """`message` with the trailers of the pending operations that take the plan from blob
    `parent_plan` to `committed_plan` (bytes `committed`, as for trailers); as it is when there
    are none, or when one quotes a secret (a commit message never does)."""
    git_dir = repo.git_dir()
    if not any((git_dir / name).exists() for name in NAMES):
        return message
    from ralph.plan.ops import with_trailers
    from ralph.secrets import redact

    lines = trailers(repo, objects, parent_plan, committed_plan, committed)
    return with_trailers(message, lines) if lines and redact(lines, repo.root) == lines else message


def forget(repo: Repo) -> None:
    """The plan was committed: what was pending is in that commit (or merged by record). The
    fenced runs' file is emptied, not removed: a sandbox may have it bound for a run going on."""
    git_dir = repo.git_dir()
    with contextlib.suppress(FileNotFoundError):
        (git_dir / NAME).unlink()
    with contextlib.suppress(OSError):
        if (git_dir / FENCED_NAME).stat().st_size:
            os.truncate(git_dir / FENCED_NAME, 0)


def fenced_record(git_dir: Path) -> Path | None:
    """The file fenced runs of the work tree whose git directory is `git_dir` write their
    operations to, made now (a regular file of ralph's: anything else there is replaced); None
    when it cannot be made."""
    path = git_dir / FENCED_NAME
    try:
        path.parent.mkdir(exist_ok=True)
        if path.is_symlink() or (path.exists() and not path.is_file()):
            _remove(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        os.close(fd)
    except OSError:
        return None
    return path


def _remove(path: Path) -> None:
    import shutil

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
