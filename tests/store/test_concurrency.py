"""Many real ralph processes changing one plan at once: no change lost, one commit per change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import ralph_process
from tests.support.gitrepo import git

WORKERS = 16
ROUNDS = 9  # each round: task add, issue add, task done of that task -> 27 commands per worker

# Each worker waits for the start signal, then runs its commands one after another, each as its
# own `python -m ralph` process, and writes what it did as JSON.
WORKER = r"""
import json, os, subprocess, sys, time
from pathlib import Path

root, worker, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
go, out = Path(sys.argv[4]), sys.argv[5]
while not go.exists():
    time.sleep(0.005)
done = []

def ralph(*args):
    result = subprocess.run(
        [sys.executable, "-m", "ralph", "-C", root, *args], capture_output=True, text=True
    )
    done.append({"args": list(args), "code": result.returncode, "stdout": result.stdout,
                 "stderr": result.stderr})
    return result

for number in range(rounds):
    name = f"w{worker}-task{number}"
    added = ralph("task", "add", "--json", json.dumps({"name": name}))
    ralph("issue", "add", "--json", f"w{worker} issue {number}")
    if added.returncode == 0:
        ralph("task", "done", json.loads(added.stdout)["id"])
Path(out).write_text(json.dumps(done))
"""


@pytest.mark.slow
def test_concurrent_commands_lose_nothing(repo: Path, tmp_path: Path):
    (repo / "notes.txt").write_text("the user's own uncommitted file\n")
    (repo / "staged.txt").write_text("staged, not committed\n")
    git(repo, "add", "staged.txt")
    (repo / "README").write_text("edited, not staged\n")
    user_status = git(repo, "status", "--porcelain")
    start = git(repo, "rev-parse", "HEAD").strip()

    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    go = tmp_path / "go"
    env = {**os.environ, "RALPH_LOCK_TIMEOUT": "600", "PYTHONPATH": str(Path(__file__).parents[2])}
    workers = [
        subprocess.Popen(
            [sys.executable, str(script), str(repo), str(n), str(ROUNDS), str(go), str(tmp_path / f"{n}")],
            env=env,
        )
        for n in range(WORKERS)
    ]
    time.sleep(1)  # let every worker start and wait at the line
    go.touch()
    for worker in workers:
        assert worker.wait(timeout=1200) == 0

    commands = [c for n in range(WORKERS) for c in json.loads((tmp_path / f"{n}").read_text())]
    assert len(commands) == WORKERS * ROUNDS * 3
    failed = [c for c in commands if c["code"] != 0]
    assert not failed, failed[:3]

    plan = [json.loads(line) for line in (repo / "plan.jsonl").read_text().splitlines() if line.strip()]
    tasks = {r["id"]: r for r in plan if r["t"] == "task"}
    issues = {r["text"] for r in plan if r["t"] == "issue"}
    for command in commands:
        verb = command["args"][:2]
        if verb == ["task", "add"]:
            added = json.loads(command["stdout"])
            assert tasks[added["id"]]["name"] == added["name"]
        elif verb == ["issue", "add"]:
            assert command["args"][-1] in issues
        else:
            assert tasks[command["args"][-1]]["s"] == "d"
    assert len(tasks) == len(issues) == WORKERS * ROUNDS

    # Exactly one commit per change, each of plan.jsonl alone; HEAD holds the final plan.
    subjects = git(repo, "log", "--format=%s", f"{start}..HEAD").splitlines()
    assert len(subjects) == len(commands)
    assert all(s.startswith("ralph: ") and "earlier uncommitted" not in s for s in subjects)
    assert set(git(repo, "log", "--format=", "--name-only", f"{start}..HEAD").split()) == {"plan.jsonl"}
    assert git(repo, "show", "HEAD:plan.jsonl") == (repo / "plan.jsonl").read_text()

    fsck = subprocess.run(["git", "fsck", "--strict"], cwd=repo, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    check = ralph_process(repo, "check")
    assert check.returncode == 0, check.stderr
    # The user's work is exactly as it was: nothing of it committed, staged or lost.
    assert git(repo, "status", "--porcelain") == user_status
    assert (repo / "notes.txt").read_text() == "the user's own uncommitted file\n"
    assert (repo / "README").read_text() == "edited, not staged\n"
    assert git(repo, "show", ":staged.txt") == "staged, not committed\n"
    assert not list(repo.glob(".plan.jsonl.*.tmp"))
