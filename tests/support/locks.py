"""Real processes that take ralph's locks and hold them: to show that another waits, gives up, or
finds the lock of a process that was killed."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

# Takes the plan lock of the repository named by its argument, says so, and holds it until its
# stdin closes.
HOLDER = """
import sys
from pathlib import Path

from ralph.store.lock import plan_lock

with plan_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.read()  # until the test closes our stdin
"""

HOLD = {
    "plan": "from ralph.store.lock import plan_lock as hold; where = root",
    "construct": (
        "from functools import partial; from ralph.store.lock import exclusive_run, CONSTRUCT_LOCK_NAME;"
        " hold = partial(exclusive_run, what='ralph construct'); where = root / '.git' / CONSTRUCT_LOCK_NAME"
    ),
}


def holder(root: Path, which: str) -> subprocess.Popen:
    """A real process that takes the plan lock or the construct lock and holds it."""
    code = (
        f"import sys, time; from pathlib import Path; root = Path(sys.argv[1]); {HOLD[which]}\n"
        "with hold(where):\n    print('locked', flush=True); time.sleep(120)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdout.readline() == "locked\n"
    return process


def killed_holder(root: Path, which: str) -> int:
    """A lock taken by a process that was then SIGKILLed, holding it: its pid."""
    process = holder(root, which)
    process.send_signal(signal.SIGKILL)
    process.wait()
    return process.pid
