"""The README's first command: `make demo` runs `python -m ralph.demo` to COMPLETE."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
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
    shown = re.search(r"^demo repository: (.+)$", done.stdout, re.M)
    assert shown, done.stdout
    kept = Path(shown.group(1))
    assert kept.parent == tmp_path and (kept / "plan.jsonl").is_file() and (kept / ".git").is_dir()
    assert f"The repository is kept at {kept}" in done.stdout


def demo_agent(tmp_path: Path, spec_text: str, stage: str = "PLAN") -> subprocess.CompletedProcess:
    spec = tmp_path / "spec.md"
    spec.write_text(spec_text)
    env = {**os.environ, "RALPH_STAGE": stage, "RALPH_SPEC": str(spec), "RALPH_BIN": "false"}
    return subprocess.run(
        [sys.executable, "-m", "ralph.demo.agent"], capture_output=True, text=True, env=env, timeout=60
    )


def test_the_demo_agent_says_so_when_a_spec_was_not_written_for_it(tmp_path):
    done = demo_agent(tmp_path, "# Todo app\n\nA web app with logins.\n")
    assert done.returncode == 2 and done.stdout == ""  # no task added, no result event
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        f"demo agent: {tmp_path / 'spec.md'} has no ### FILE sections; the demo agent is a script"
    )
    assert "use a real agent (ralph construct SPEC --agent claude" in line

    done = demo_agent(tmp_path, "### app.py\n\n```python\nprint(1)\n```\n")
    assert done.returncode == 2 and "its section ### app.py has no Check: line" in done.stderr


@pytest.mark.slow
def test_the_draft_demo_drafts_asks_accepts_and_builds_the_spec(tmp_path):
    """`make demo-draft`: the way to a first spec, with the demo agent, to COMPLETE."""
    done = subprocess.run(
        [sys.executable, "-m", "ralph.demo", "--draft"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "ralph: WAITING: the draft of specs/farewell.md waits for 1 answer(s):" in out
    assert "waits for your decision: read build/ralph-logs/drafts/farewell/draft.md" in out
    assert "accepted: wrote and committed specs/farewell.md" in out
    assert "ralph: COMPLETE" in out
    assert "ralph: spec specs/farewell.md: drafted by command, accepted" in out  # in the git log
    shown = re.search(r"^demo repository: (.+)$", out, re.M)
    assert shown, out
    kept = Path(shown.group(1))
    assert "Goodbye, Ada!" in (kept / "specs" / "farewell.md").read_text()
