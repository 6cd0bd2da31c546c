"""A person's ralph commands beside a live `ralph construct` in the same work tree.

While a run lasts it owns the commits of its work tree: a commit of a person's `ralph task add`
would move HEAD under a build (whose check sees HEAD moved and the plan changed, and undid both)
and would sweep an agent's uncommitted plan changes into the person's commit. So such a command
writes plan.jsonl, under the plan lock as always, but does not commit, and records what it changed
in `.git/ralph/beside.jsonl` (one line per command, synced): its message and the keys of the
records it added, changed or removed. The run reads the records made since it started: those
changes are a person's, never judged as an agent's, never undone, and committed by the run under
the person's own message. The agents' own `ralph` commands never get here (RALPH_COMMIT=0)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ralph.store import lock
from ralph.store.git import Repo

if TYPE_CHECKING:
    from ralph.plan.document import Document, Record

LEDGER = Path("ralph") / "beside.jsonl"

# The runs this process deferred its commits to (pids), for the command line to say so once.
deferred: list[int] = []


class Entry:  # a plain class: `dataclasses` would cost every committing command's start-up
    """One command's change: its commit message (as it would have committed), the keys of the
    records it changed (ralph.plan.integrity.record_key), the pid of the run it deferred to."""

    __slots__ = ("message", "keys", "run", "ops", "records")

    def __init__(
        self,
        message: str,
        keys: tuple[str, ...],
        run: int,
        ops: str = "",
        records: dict[str, str | None] | None = None,
    ):
        self.message, self.keys, self.run = message, keys, run
        self.ops = ops  # its `Ralph-Op:` trailer lines ("" when no operation made it)
        # each changed record's line as the command wrote it (None: removed); None: not kept
        # (a ledger written before they were), so the plan's current line stands in
        self.records = records


def live_run(repo: Repo) -> int | None:
    """The pid of another process's `ralph construct` holding this work tree's construct lock, or
    None. The run itself (which holds it) and no run at all answer None."""
    state = lock.probe(repo.git_dir() / lock.CONSTRUCT_LOCK_NAME)
    named = lock.holder_of(state.holder) if state is not None and state.held else None
    if named is None or named[0] == os.getpid():
        return None
    return named[0]


def record(
    repo: Repo,
    run: int,
    message: str,
    keys: list[str],
    ops: str = "",
    records: dict[str, str | None] | None = None,
) -> None:
    """Write down a person's change the run `run` is to commit (before the plan is written), with
    the trailer lines of the operations that made it (for a runner to replay) and each changed
    record's line as the change left it (None: removed): what is committed as theirs, whatever an
    agent does to those records afterwards."""
    path = repo.git_dir() / LEDGER
    path.parent.mkdir(parents=True, exist_ok=True)
    item = {"run": run, "pid": os.getpid(), "message": message, "keys": keys, "ops": ops, "records": records}
    line = json.dumps(item) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    deferred.append(run)


def entries(repo: Repo, offset: int = 0) -> tuple[list[Entry], int]:
    """The records written from byte `offset` on (whole lines; a torn one is skipped), and the
    offset after them."""
    path = repo.git_dir() / LEDGER
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return [], offset
    whole = data[: data.rfind(b"\n") + 1]
    found = []
    for raw in whole.splitlines():
        try:
            item = json.loads(raw)
            records = item.get("records")
            found.append(
                Entry(
                    str(item["message"]),
                    tuple(item["keys"]),
                    int(item["run"]),
                    str(item.get("ops") or ""),
                    dict(records) if isinstance(records, dict) else None,
                )
            )
        except (ValueError, KeyError, TypeError):
            continue
    return found, offset + len(whole)


def as_written(found: Sequence[Entry], now: Document) -> dict[str, Record | None]:
    """Each record the entries changed, as the last command that changed it wrote it (None:
    removed), whatever an agent did to it since; as `now` has it where the ledger kept no line
    (one written before it kept them)."""
    from ralph.plan.overlay import records_by_key

    current = records_by_key(now, frozenset(key for entry in found for key in entry.keys))
    written: dict[str, Record | None] = {}
    for entry in found:
        for key in entry.keys:
            kept = entry.records
            if kept is not None and key in kept:
                line = kept[key]
                written[key] = None if line is None else json.loads(line)
            else:
                written[key] = current[key]
    return written


def size(repo: Repo) -> int:
    """Where the records made from now on start."""
    try:
        return (repo.git_dir() / LEDGER).stat().st_size
    except OSError:
        return 0


def forget(repo: Repo) -> None:
    """Every record is committed: the ledger starts afresh."""
    with contextlib.suppress(FileNotFoundError):
        (repo.git_dir() / LEDGER).unlink()
