"""A real process holding a work tree's construct lock, as a live `ralph construct` does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ralph.store.git import Repo
from ralph.store.lock import CONSTRUCT_LOCK_NAME

HOLD = """
import sys, time
from pathlib import Path
from ralph.store.lock import exclusive_run
with exclusive_run(Path(sys.argv[1]), "ralph construct"):
    print("held", flush=True)
    time.sleep(60)
"""


def hold_the_run_lock(repo: Path) -> subprocess.Popen:
    """The holder, once it holds the lock; kill it to end the 'run' (the kernel drops its lock)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(Repo(repo).git_dir() / CONSTRUCT_LOCK_NAME)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout and holder.stdout.readline() == "held\n"
    return holder
