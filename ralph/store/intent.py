"""Changes that move more than one thing (HEAD, the index, the work tree, plan.jsonl), recorded
before they start, so that one a kill (or a full disk) cuts in half is finished or undone by the
next `ralph construct` or `ralph doctor --fix`, never taken for done.

One small JSON file per change under `<git common dir>/ralph/intent/`, written atomically and
synced before the change's first step and removed after its last. A record whose process is gone
(its pid, and on Linux its start time, no longer match a live process) is an interrupted change.
Which way each kind is settled (ralph.store.settle), and why:

- MERGE (a parallel build's branch onto the loop's branch; `integrate`): rolled FORWARD. The
  merged commit is complete in git's object store before the record is written, its plan.jsonl
  holds the loop's own uncommitted plan changes merged in, and the build passed its gate: going
  back would throw away both. Going forward is setting the changed paths to the commit, moving
  HEAD by compare-and-swap, and recording the build's commit on its task.
- COMMIT (the loop's commit of a build's files and plan.jsonl; ralph.loop.tree.work_tree's commit): rolled
  FORWARD. The caller had decided what to commit (a build whose gate passed) and the files are in
  the work tree: committing them is what it was doing. Left half done they are staged or changed
  files nobody owns, while the plan says the task is built.
- PLAN (PLAN's agent writing the spec's tasks): while the agent ran, rolled BACK (a half-written
  plan would be built as the whole spec; the tasks it left are kept beside the logs); once the
  agent had finished, rolled FORWARD (its tasks are committed, as the stage was about to).
- BUILD (a build in the loop's own work tree, from its first agent run to its commit): rolled
  BACK. No gate passed what it left, or none is known to have: taken forward, the next run would
  verify (and accept) a task marked done whose files were never committed. Its changes are kept
  on the task's draft branch and as a patch beside the logs, and undone; the task's record goes
  back to what the build found (the rest of plan.jsonl, the loop's and a person's, stays).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ralph.store.root import PLAN_NAME as PLAN_NAME  # settle's too
from ralph.text import plural

if TYPE_CHECKING:
    from ralph.store.git import Repo

KEPT = Path("build") / "ralph-logs" / "doctor"  # where a rolled-back change's leftovers are kept


class IntentKind(StrEnum):
    MERGE = "merge"
    COMMIT = "commit"
    PLAN = "plan"
    BUILD = "build"


class CutBy(StrEnum):
    """What ended a change's process before its last step, where that process could still say
    (data["cut_by"]; a kill leaves none)."""

    DISK_FULL = "disk_full"


class Settled(StrEnum):
    """What recovery did with an interrupted change."""

    FINISHED = "finished"  # rolled forward
    UNDONE = "undone"  # rolled back
    DONE_ALREADY = "done already"  # its last step had happened: only the record was left
    LEFT = "left"  # something moved since that recovery must not overwrite: a person decides
    OVERTAKEN = "overtaken"  # HEAD moved on since: nothing left to finish or undo; the record goes


@dataclass
class Intent:
    kind: IntentKind
    root: str  # the work tree the change acts in
    data: dict[str, Any] = field(default_factory=dict)
    pid: int = 0
    started: str | None = None  # the process's start time (Linux), against pid reuse
    name: str = ""  # the record's file name

    def describe(self) -> str:
        data = self.data
        if self.kind is IntentKind.MERGE:
            what = data.get("task") or data.get("branch") or "a build"
            return f"a merge of {what} into {short(data['head'])}"
        if self.kind is IntentKind.COMMIT:
            what = f"{data['task']}'s build" if data.get("task") else plural(len(data["paths"]), "file")
            return f"a commit of {what} ({data['message'].splitlines()[0][:80]})"
        if self.kind is IntentKind.BUILD:
            return f"the build of {data['task']} on {short(data['head'])}"
        phase = "agent finished" if data.get("phase") == "planned" else "agent running"
        return f"PLAN of {data.get('spec')} ({phase})"

    def settling(self) -> str:
        """What recovery does with it, for `ralph doctor`'s report."""
        if self.kind is IntentKind.PLAN and self.data.get("phase") != "planned":
            return "undoes it (its tasks kept under build/ralph-logs/doctor/, plan.jsonl as before)"
        if self.kind is IntentKind.PLAN:
            return "finishes it (commits the tasks it wrote)"
        if self.kind is IntentKind.MERGE:
            return f"finishes it (HEAD, index and work tree to {short(self.data['commit'])})"
        if self.kind is IntentKind.BUILD:  # rolled back (see above): never committed
            return (
                "undoes it (its changes kept on the task's draft branch and under build/ralph-logs/doctor/,"
                f" {self.data.get('task')} as before the build)"
            )
        return "finishes it (commits the files it names)"


def short(commit: str | None) -> str:
    return (commit or "?")[:12]


def folder(repo: Repo) -> Path:
    return repo.common_dir() / "ralph" / "intent"


_numbers = itertools.count(1)


def begin(repo: Repo, kind: IntentKind, root: Path, **data: object) -> Intent:
    """Record a change before its first step (synced: a power cut must not lose it)."""
    intent = Intent(kind, str(root), dict(data), os.getpid(), _start_time(os.getpid()))
    intent.name = f"{kind}-{os.getpid()}-{next(_numbers)}.json"
    _write(repo, intent)
    return intent


def update(repo: Repo, intent: Intent, **data: object) -> None:
    """The change reached a step that settles it differently (PLAN's agent finished)."""
    intent.data.update(data)
    _write(repo, intent)


def finish(repo: Repo, intent: Intent) -> None:
    """Its last step is done: the record goes."""
    with contextlib.suppress(FileNotFoundError):
        (folder(repo) / intent.name).unlink()


def _write(repo: Repo, intent: Intent) -> None:
    target = folder(repo)
    target.mkdir(parents=True, exist_ok=True)
    body = {"kind": str(intent.kind), "root": intent.root, "pid": intent.pid, "started": intent.started}
    temp = target / f".{intent.name}.tmp"
    with open(temp, "wb") as handle:
        handle.write(json.dumps({**body, "data": intent.data}).encode())
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, target / intent.name)


def interrupted(repo: Repo, root: Path | None = None) -> list[Intent]:
    """The records of changes whose process is gone (in `root`, when given), newest first: a change
    made inside another (PLAN's commit) is settled before the one around it."""
    target = folder(repo)
    if not target.is_dir():  # the usual case: one stat at every start
        return []
    wanted = _resolved(root) if root is not None else None
    found = []
    for path in target.glob("*.json"):
        try:
            raw = json.loads(path.read_bytes())
            intent = Intent(IntentKind(raw["kind"]), raw["root"], raw["data"], raw["pid"], raw.get("started"))
            mtime = path.stat().st_mtime_ns
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a torn write never got renamed into place: this is someone else's file
        intent.name = path.name
        if wanted is not None and _resolved(Path(intent.root)) != wanted:
            continue
        if _running(intent):
            continue
        found.append((mtime, path.name, intent))
    return [intent for _, _, intent in sorted(found, key=lambda item: item[:2], reverse=True)]


def _running(intent: Intent) -> bool:
    if intent.pid == os.getpid() and intent.started == _start_time(intent.pid):
        return True
    try:
        os.kill(intent.pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        pass
    started = _start_time(intent.pid)
    return started is None or intent.started is None or started == intent.started


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat's 22nd field)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read().decode("ascii", "replace")
    except OSError:
        return None
    return text.rsplit(")", 1)[-1].split()[19]


def _resolved(path: Path) -> str:
    try:
        return str(path.resolve())
    except OSError:
        return str(path)
