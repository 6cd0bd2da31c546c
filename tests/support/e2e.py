"""What the tests of the real agent CLIs (tests/e2e/) share: a project for them, ralph's environment
without the developer's provider settings, and what they read from a run."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ralph.loop.observe.journal import read_events
from ralph.loop.process.sandbox import unavailable_reason
from tests.support.gitrepo import git, write_user_config

# The real CLIs run fenced wherever this machine can fence them (CI installs bubblewrap): their
# state folders, their model API on 127.0.0.1 and ralph's own commands must all work inside.
FENCED = unavailable_reason()[0] is not None
SANDBOX = "--sandbox=required" if FENCED else "--sandbox=auto"

# Provider settings of the developer's own environment must not reach the CLIs under test.
SCRUB = (
    "ANTHROPIC_",
    "CLAUDE_",
    "CLAUDECODE",
    "OPENAI_",
    "CODEX_",
    "RALPH_",
    "OPENCODE",
    "GEMINI_",
    "GOOGLE_",
)
CHECK_WORK = """import pathlib, sys
bad = [p.name for p in pathlib.Path("work").glob("*.txt") if p.read_text().strip() != "ok"]
print("FAILED: " + " ".join(bad) if bad else "all work ok")
sys.exit(1 if bad else 0)
"""


def assert_fenced(events: list[dict]) -> None:
    """The run was sandboxed, where this machine has a sandbox."""
    assert [e["on"] for e in events if e["event"] == "sandbox"] == [FENCED]


def write_project(repo: Path, spec: str) -> Path:
    """The repository with specs/app.md and the gate script check_work.py, committed."""
    (repo / "specs" / "app.md").write_text(spec)
    (repo / "check_work.py").write_text(CHECK_WORK)
    git(repo, "add", "specs/app.md", "check_work.py")
    git(repo, "commit", "-qm", "the app spec and its gate")
    return repo


def scratch_env(root: Path) -> dict[str, str]:
    """ralph's environment for a test: no provider settings, a scratch HOME beside the repo."""
    home = root.parent / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB)}
    # The agent CLIs find their settings under $XDG_CONFIG_HOME first (opencode does): the scratch
    # HOME's, not the temporary one the suite sets for ralph's own user config.
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), RALPH_LOCK_TIMEOUT="120")
    # ralph's own defaults (the review before COMPLETE on: the real CLIs review too), but no spec
    # check: the mock model makes a task of each plain bullet of these specs, which it would refuse.
    write_user_config(home / ".config", "spec_check = false\n", suite_defaults=False)
    return env


def events(root: Path) -> list[dict]:
    return read_events(root / "build" / "ralph-logs" / "events.jsonl")


def plan_records(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "plan.jsonl").read_text().splitlines() if line.strip()]


def recorded(root: Path, key: str) -> int:
    return sum(e.get("tokens", {}).get(key, 0) for e in events(root) if e["event"] == "agent_end")


def add_task(root: Path, name: str) -> str:
    from ralph.usecases import tasks

    return tasks.add(root, [{"name": name, "accept": "work file says ok"}])[0]["id"]
