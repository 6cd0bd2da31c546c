"""Issue 24, "only what a run is known to have changed is committed": a change in the work tree
that no agent run is known to have made (a person's edit during a fenced PLAN, a file a
task_accepted hook writes) stays as it is, unstaged, with a warning; it is neither committed, nor
a violation of the run, nor undone. (Unfenced, a change during PLAN may be its agent's: that is
tests/loop/test_plan_only_code.py.)"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ralph.loop.observe.journal import read_events
from ralph.loop.process.sandbox import unavailable_reason
from tests.support.cli import ralph_in_process
from tests.support.construct import (
    FAKE_AGENT,
    add_tasks,
    construct,
    default_signals,
    events,
    plan_records,
    wait_for,
    with_app_spec,
)
from tests.support.gitrepo import git
from tests.support.work_trees import loop_work_tree

# A PLAN agent that waits for the test's go before it adds its tasks: the person edits meanwhile.
# It says it started in its log: in the sandbox it can write nothing outside its work tree.
WAITING_PLANNER = """import json, os, pathlib, sys, time
sys.path.insert(0, os.environ["AGENT_KIT_DIR"])
from agent_kit import ralph
print("planner started", flush=True)
while not pathlib.Path(os.environ["WAIT_DIR"], "go").exists():
    time.sleep(0.02)
for name in ("Parse input", "Print report"):
    ralph("task", "add", "--json", json.dumps({"name": name, "accept": "work file says ok"}))
"""


needs_bwrap = pytest.mark.skipif(
    unavailable_reason()[0] is None, reason=f"no sandbox here: {unavailable_reason()[1]}"
)


@pytest.fixture
def app(repo: Path) -> Path:
    return with_app_spec(repo, "# App\n\n- Parse input\n- Print report\n")


@needs_bwrap
def test_a_persons_edit_during_a_fenced_plan_is_left_unstaged_and_plans_tasks_are_kept(app, tmp_path):
    agent = tmp_path / "planner.py"
    agent.write_text(WAITING_PLANNER)
    wait_dir = tmp_path / "wait"  # beside the agent's script: the sandbox shows it (read-only)
    wait_dir.mkdir()
    running = subprocess.Popen(
        [sys.executable, "-m", "ralph", "-C", str(app), "plan", "specs/app.md", "--sandbox=required",
         "--agent", "command", "--agent-cmd", f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"],
        env={**os.environ, "WAIT_DIR": str(wait_dir), "AGENT_KIT_DIR": str(FAKE_AGENT.parent)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_signals,
    )  # fmt: skip
    logs = app / "build" / "ralph-logs"
    wait_for(
        lambda: any("planner started" in log.read_text() for log in logs.glob("*-plan.log")),
        "the planner never started",
    )
    (app / "README").write_text("a person's edit\n")
    (app / "specs" / "notes.txt").write_text("a person's new file\n")
    (wait_dir / "go").write_text("")
    out, err = running.communicate(timeout=120)

    assert running.returncode == 0, out + err
    committed = [json.loads(line) for line in git(app, "show", "HEAD:plan.jsonl").splitlines()]
    assert [r["name"] for r in committed if r["t"] == "task"] == ["Parse input", "Print report"]
    assert git(app, "status", "--porcelain").splitlines() == [" M README", "?? specs/notes.txt"]
    assert (app / "README").read_text() == "a person's edit\n"  # not undone, not moved to a patch
    assert "a person's" not in git(app, "log", "-p")
    journal = events(app)
    assert not [e for e in journal if e["event"] == "permission_violation"]
    (left,) = [e for e in journal if e["event"] == "left_unstaged"]
    assert left["files"] == ["README", "specs/notes.txt"] and left["when"] == "during the PLAN run"
    assert (
        "warning: README, specs/notes.txt changed during the PLAN run, not by an agent ralph ran: left"
        " unstaged" in err
    )


HOOK_WRITER = "import pathlib, sys\npathlib.Path('hook-notes.txt').write_text(sys.stdin.read())\n"


@pytest.mark.slow
def test_a_file_a_task_accepted_hook_writes_is_not_swept_into_a_commit(app, tmp_path):
    """The first iteration accepts one task (its hook writes a file) and rejects two; the second
    builds those two in worktrees of their own, so VERIFY's commit was the one that took every
    change in the work tree: the hook's file with it."""
    hook = tmp_path / "hook.py"
    hook.write_text(HOOK_WRITER)
    hooks = json.dumps({"task_accepted": [sys.executable, str(hook)]})
    assert ralph_in_process(app, "config", "set", "hooks", hooks).returncode == 0
    add_tasks(app, "First", "Second [reject-once]", "Third [reject-once]")

    done = construct(app, "--parallel", "2")

    assert done.returncode == 0, done.stdout + done.stderr
    assert (app / "hook-notes.txt").exists()
    assert "hook-notes.txt" not in git(app, "log", "--name-only", "--format=")
    assert git(app, "status", "--porcelain").splitlines() == ["?? hook-notes.txt"]
    (left,) = [e for e in events(app) if e["event"] == "left_unstaged"]
    assert left["files"] == ["hook-notes.txt"]  # found before a later VERIFY run or its commit
    assert f"warning: hook-notes.txt changed {left['when']}, not by an agent ralph ran" in done.stderr
    verified = [s for s in git(app, "log", "--format=%s").splitlines() if s.startswith("ralph(verify)")]
    assert len(verified) >= 2 and len([r for r in plan_records(app) if r["t"] == "accept"]) == 3


def test_a_build_commit_takes_a_file_whose_name_is_not_utf8_by_the_name_git_gives_it(repo, tmp_path):
    """git status names such a file in bytes that are not UTF-8: the loop's work tree reads it as
    a change of the run's (read as text with replacement characters, it would match no file and
    be committed by none), commits it, and its journal shows the byte as an escape."""
    with open(os.fsencode(repo) + b"/caf\xe9.txt", "w") as made:
        made.write("latin-1 name\n")
    tree = loop_work_tree(repo, tmp_path / "events.jsonl")

    changed = tree.changed_paths()
    commit = tree.commit("ralph(build): t-one Latin-1 name", changed)

    assert changed == {os.fsdecode(b"caf\xe9.txt")}
    shown = subprocess.run(
        ["git", "show", "--name-only", "-z", "--format=", "HEAD"], cwd=repo, capture_output=True, check=True
    ).stdout
    assert commit == git(repo, "rev-parse", "HEAD").strip() and shown == b"caf\xe9.txt\0"
    commits = [e for e in read_events(tmp_path / "events.jsonl") if e["event"] == "commit"]
    assert [e["files"] for e in commits] == [["caf\\xe9.txt"]]
    assert git(repo, "status", "--porcelain") == ""
