"""The README's first command: `make demo` runs `python -m ralph.demo` to COMPLETE."""

import subprocess
import sys


def test_demo_reaches_complete_and_prints_the_history():
    done = subprocess.run([sys.executable, "-m", "ralph.demo"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ralph: COMPLETE" in done.stdout
    assert done.stdout.count("ralph(build): ") == 3  # one commit per task in the printed git log
    assert "ralph(verify): accepted" in done.stdout
