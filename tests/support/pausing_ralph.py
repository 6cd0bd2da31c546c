"""`python -m ralph` that stops at a chosen step of its plan transaction, for a test to kill it there.

Usage: python tests/support/pausing_ralph.py STEP MARKER ralph-arguments...

At STEP the process writes MARKER and waits (for the SIGKILL the test sends once it sees the
marker); a STEP it never reaches lets it finish as usual. The steps, in the order they happen:

- ``locked``: the plan lock is held, nothing read or written yet;
- ``prepared``: the commit's objects are written, plan.jsonl not yet;
- ``written``: plan.jsonl is replaced, HEAD not yet moved;
- ``ref-moved``: HEAD is moved, git's index not yet updated;
- ``landed``: HEAD and the index are the new commit; the command has yet to exit.

A test kills at each of these deterministically, where a kill aimed by time lands wherever the
machine's load puts it."""

from __future__ import annotations

import functools
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

STEPS = ("locked", "prepared", "written", "ref-moved", "landed")


def pause_here(marker: Path) -> None:
    marker.write_text("paused")
    while True:
        signal.pause()


def wrap(owner: Any, name: str, marker: Path, before: bool) -> None:
    original: Callable[..., Any] = getattr(owner, name)

    @functools.wraps(original)
    def paused(*args: Any, **kwargs: Any) -> Any:
        if before:
            pause_here(marker)
        result = original(*args, **kwargs)
        if not before:
            pause_here(marker)
        return result

    setattr(owner, name, paused)


def install(step: str, marker: Path) -> None:
    from ralph.store import transaction
    from ralph.store.git.index import Index

    if step == "locked":
        wrap(transaction, "remove_stale_temp_files", marker, before=True)
    elif step in ("prepared", "written"):
        # Only the write in the committing path: a transaction without a commit writes too.
        original_write_and_commit = transaction._write_and_commit

        def write_and_commit(*args: Any, **kwargs: Any) -> Any:
            wrap(transaction, "write_atomic", marker, before=step == "prepared")
            return original_write_and_commit(*args, **kwargs)

        transaction._write_and_commit = write_and_commit
    elif step == "ref-moved":
        wrap(Index, "_stage", marker, before=True)
    elif step == "landed":
        wrap(Index, "land", marker, before=False)
    else:
        raise SystemExit(f"unknown step {step!r}: one of {', '.join(STEPS)}")


if __name__ == "__main__":
    install(sys.argv[1], Path(sys.argv[2]))
    sys.argv = ["ralph", *sys.argv[3:]]
    from ralph.cli.main import main

    main()
