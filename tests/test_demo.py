"""The README's first command: `make demo` runs `python -m ralph.demo` to COMPLETE."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_demo_reaches_complete_keeps_its_repository_and_says_its_tokens_are_simulated(tmp_path):
    """Run as `make demo` runs it: with .venv's Python, whose folder no shell has on its PATH."""
    bin_dir = Path(sys.executable).parent
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != bin_dir)
    done = subprocess.run(
        [sys.executable, "-m", "ralph.demo"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(tmp_path), "PATH": path},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ralph: COMPLETE" in done.stdout
    # One commit per task in the printed git log: the spec's three, and the docs review's finding.
    assert done.stdout.count("ralph(build): ") == 4
    assert "ralph(build): " in done.stdout and "Write README.md: how to use the greeter" in done.stdout
    assert "ralph(review): specs/greeter.md: round 1: 1 found" in done.stdout
    assert "    t-" in done.stdout and " accepted: Write README.md: how to use the greeter" in done.stdout
    assert "ralph(verify): accepted" in done.stdout
    assert "the token counts above are simulated" in done.stdout
    # Task types: the report lists each accepted task with its type.
    listed = done.stdout.split("accepted (4):\n", 1)[1].splitlines()[:4]
    assert sorted(line.split(" ", 3)[-1] for line in listed) == [
        "Write README.md: how to use the greeter [docs]",  # the docs review's finding
        "Write cli.py [feature]",
        "Write greet.py [feature]",
        "Write test_greet.py [test]",
    ]
    # The project's skill: found, listed in the BUILD prompts of the feature tasks only (its
    # front matter's types), and used by the demo agent there.
    assert "greeter-style  .ralph/skills/greeter-style/SKILL.md (for feature tasks)" in done.stdout
    said = re.findall(r"^  t-\w+: (used the skill .*|no skill listed .*)$", done.stdout, re.M)
    skill = "used the skill greeter-style (.ralph/skills/greeter-style/SKILL.md), listed in the prompt"
    assert sorted(said) == [
        "no skill listed in the prompt of this test task",
        f"{skill} of this feature task: Use Python's standard library only: no third-party imports.",
        f"{skill} of this feature task: Use Python's standard library only: no third-party imports.",
    ]
    shown = re.search(r"^demo repository: (.+)$", done.stdout, re.M)
    assert shown, done.stdout
    kept = Path(shown.group(1))
    assert kept.parent == tmp_path and (kept / "plan.jsonl").is_file() and (kept / ".git").is_dir()
    assert f"The repository is kept at {kept}" in done.stdout
    # The last line says how to get `ralph` on PATH, as the README does.
    assert done.stdout.splitlines()[-1] == (
        f"`ralph` is installed in {bin_dir}: to put it on your PATH, run: source {bin_dir / 'activate'}"
    )


def test_the_demo_says_when_ralph_is_on_path_already():
    bin_dir = Path(sys.executable).parent
    with_it = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}/usr/bin"}
    said = subprocess.run(
        [sys.executable, "-c", "from ralph.demo.__main__ import on_path; print(on_path())"],
        capture_output=True, text=True, env=with_it, check=True,
    ).stdout  # fmt: skip
    assert said == f"`ralph` is on your PATH ({bin_dir / 'ralph'}).\n"


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
