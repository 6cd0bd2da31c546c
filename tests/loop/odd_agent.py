"""An agent that makes one odd move on a task's first BUILD, chosen by a marker in the task's
name, then (where it still can) builds as the scripted fake agent does; every other run is the fake
agent's. The moves:
  [nested-repo]         `git init` in a new folder nested/, a file committed there
  [nested-uncommitted]  `git init` in nested/, a file in it, nothing committed
  [nested-gitlink]      as [nested-repo], then commits nested/ in the work tree (a gitlink), and ends
  [remove-worktree]     deletes its own work tree (the folder it runs in) and ends
  [unlink-worktree]     builds, then replaces its worktree's .git link by a repository of its own
  [plan-symlink]        builds, then replaces plan.jsonl with a symlink to a copy outside
  [plan-folder]         builds, then replaces plan.jsonl with a folder holding a file
  [plan-missing]        builds, then deletes plan.jsonl
  [not-utf8]            changes the tracked Latin-1 file menu.txt and writes a binary blob.bin,
                        then builds
  [verify-removes-checkout]  the first VERIFY deletes its checkout (the folder it runs in)
Every move leaves its mark in $FAKE_AGENT_STATE/<task>.odd, so a test knows it happened.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, os.environ["AGENT_KIT_DIR"])

from agent_kit import ralph  # noqa: E402

STATE = Path(os.environ["FAKE_AGENT_STATE"])
MOVES = (
    "[nested-repo]",
    "[nested-uncommitted]",
    "[nested-gitlink]",
    "[remove-worktree]",
    "[unlink-worktree]",
    "[plan-symlink]",
    "[plan-folder]",
    "[plan-missing]",
    "[not-utf8]",
    "[switch-branch]",
    "[reset-back]",
    "[detach]",
)
LATIN1 = "caf\xe9 cr\xe8me br\xfbl\xe9e\n".encode("latin-1")
BINARY = bytes(range(256)) * 4


def git(*args: str) -> None:
    subprocess.run(["git", *args], check=True, capture_output=True)


def fake() -> int:
    """The fake agent's run, in this process: a second Python start-up and import of ralph cost
    about 50 ms of CPU per run."""
    import fake_agent  # beside agent_kit, on sys.path

    return fake_agent.main()


def nested(commit: bool) -> None:
    """nested/, a repository of its own with code.txt, and one more inside it (nested/inner/);
    and a symlink to the repository's own folder, whose .git is no nested repository's."""
    git("init", "-q", "nested")
    git("init", "-q", "nested/inner")
    Path("nested", "code.txt").write_bytes(b"nested work\n")
    Path("nested", "inner", "deeper.txt").write_bytes(b"deeper work\n")
    os.symlink(os.getcwd(), "loop-link")
    if commit:
        git("-C", "nested", "add", "code.txt")
        git("-C", "nested", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "nested")


def odd_move(task_id: str, name: str) -> int | None:
    """The move (and its mark); the exit code when the run ends with it, else None."""
    STATE.mkdir(parents=True, exist_ok=True)
    (STATE / f"{task_id}.odd").write_text(os.getcwd())
    if "[nested-repo]" in name or "[nested-uncommitted]" in name:
        nested(commit="[nested-repo]" in name)
        return None
    if "[nested-gitlink]" in name:
        nested(commit=True)
        git("add", "nested")
        git("-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "the agent's own commit")
        return 0
    if "[not-utf8]" in name:
        Path("menu.txt").write_bytes(LATIN1)
        Path("blob.bin").write_bytes(BINARY)
        return None
    if "[remove-worktree]" in name:
        shutil.rmtree(os.getcwd())
        return 0
    if "[switch-branch]" in name:
        git("switch", "-q", "-c", "agent-side")
    if "[reset-back]" in name:
        git("reset", "-q", "--hard", "HEAD~1")
    if "[detach]" in name:
        git("checkout", "-q", "--detach")
    code = fake()
    if "[plan-symlink]" in name:
        outside = STATE / f"{task_id}.plan.jsonl"
        outside.write_bytes(Path("plan.jsonl").read_bytes())
        os.unlink("plan.jsonl")
        os.symlink(outside, "plan.jsonl")
    if "[plan-folder]" in name:
        os.unlink("plan.jsonl")
        Path("plan.jsonl").mkdir()
        Path("plan.jsonl", "notes.txt").write_text("the agent's notes\n")
    if "[unlink-worktree]" in name:
        os.unlink(".git")
        git("init", "-q", ".")
    if "[plan-missing]" in name:
        os.unlink("plan.jsonl")
    return code


def remove_checkout(task_id: str) -> bool:
    """[verify-removes-checkout]: the verifier deletes the checkout it runs in; False: not this task."""
    if "[verify-removes-checkout]" not in json.loads(ralph("task", "show", task_id))["name"]:
        return False
    STATE.mkdir(parents=True, exist_ok=True)
    (STATE / f"{task_id}.odd-verify").write_text(os.getcwd())
    shutil.rmtree(os.getcwd())
    return True


def main() -> int:
    task_id = os.environ.get("RALPH_TASK_ID", "")
    stage = os.environ["RALPH_STAGE"]
    if stage == "VERIFY" and not (STATE / f"{task_id}.odd-verify").exists() and remove_checkout(task_id):
        return 0
    if stage == "BUILD" and not (STATE / f"{task_id}.odd").exists():
        name = json.loads(ralph("task", "show", task_id))["name"]
        if any(move in name for move in MOVES):
            code = odd_move(task_id, name)
            if code is not None:
                return code
    return fake()


if __name__ == "__main__":
    sys.exit(main())
