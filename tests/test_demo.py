"""The README's first command: `make demo` runs `python -m ralph.demo` to COMPLETE."""

import os
import re
import subprocess
import sys
from pathlib import Path


def test_demo_reaches_complete_keeps_its_repository_and_says_its_tokens_are_simulated(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "ralph.demo"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ralph: COMPLETE" in done.stdout
    assert done.stdout.count("ralph(build): ") == 3  # one commit per task in the printed git log
    assert "ralph(verify): accepted" in done.stdout
    assert "the token counts above are simulated" in done.stdout
    kept = Path(re.search(r"^demo repository: (.+)$", done.stdout, re.M).group(1))
    assert kept.parent == tmp_path and (kept / "plan.jsonl").is_file() and (kept / ".git").is_dir()
    assert f"The repository is kept at {kept}" in done.stdout
