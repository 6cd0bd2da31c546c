"""ralph killed (SIGKILL) at each step of its plan transaction, and at random moments of its
start-up: the plan still loads, nothing confirmed is lost, the next command works at once, and git
stays consistent.

The kills inside the transaction land where they must, whatever the machine's load: the command
runs under tests/support/pausing_ralph.py, which stops it at the chosen step and says so, and the
test kills it then. (Kills aimed by time once failed a busy machine's run: too few of them landed
inside the transaction.)"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.gitrepo import git

# Each step of the transaction (tests/support/pausing_ralph.py), a run left to finish, and a kill at
# a random moment of start-up (0-300 ms after the process started: whatever it hit); each this often.
STEP_ROUNDS = 5
STARTUP_ROUNDS = 6
PAUSER = Path(__file__).parents[1] / "support" / "pausing_ralph.py"
# What a kill at each step leaves: HEAD and the file as they were, the file ahead of HEAD, or both new.
EFFECT_AT = {
    "locked": "no effect",
    "prepared": "no effect",
    "written": "file written",
    "ref-moved": "committed",
    "landed": "committed",
}
SEED = int(os.environ.get("RALPH_CRASH_SEED", "20261122"))
# How far each state of a task is along its way; a later state counts as containing an earlier one.
PROGRESS = {"p": 0, "d": 1, "accepted": 2}


def start(root: Path, *args: str, pause_at: tuple[str, Path] | None = None) -> subprocess.Popen:
    # A process group of its own, killed as a whole, as when the construct loop kills a timed-out
    # agent and everything it started. (ralph runs its git commands in sessions of their own, so
    # that a git command already running finishes and removes its lock files: a killed
    # `git update-ref` used to leave refs/heads/main.lock behind, failing every later commit.)
    program = [str(PAUSER), pause_at[0], str(pause_at[1])] if pause_at else ["-m", "ralph"]
    return subprocess.Popen(
        [sys.executable, *program, "-C", str(root), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def states(plan_text: str) -> tuple[dict[str, str], set[str]]:
    """Each task's state (p, d or accepted) and the open issues' texts."""
    tasks, issues = {}, set()
    for line in plan_text.splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if record["t"] == "task":
            tasks[record["id"]] = record.get("s", "p")
        elif record["t"] == "accept":
            tasks[record["id"]] = "accepted"
        elif record["t"] == "issue":
            issues.add(record["text"])
    return tasks, issues


class Confirmed:
    """What commands that exited 0 did: the least each task and issue must now show."""

    def __init__(self):
        self.tasks: dict[str, str] = {}
        self.issues: set[str] = set()  # texts of issues added
        self.resolving: set[str] = set()  # texts of issues a resolve was tried on (killed or not)
        self.resolved: set[str] = set()

    def record(self, args: list[str], issue_text: str | None, exited_ok: bool) -> None:
        verb, rest = args[:2], args[2:]
        if verb == ["issue", "resolve"]:
            assert issue_text is not None  # choose_command names the issue of each resolve
            self.resolving.add(issue_text)
        if not exited_ok:
            return
        if verb == ["task", "add"]:
            self.tasks[json.loads(rest[0])["id"]] = "p"
        elif verb == ["task", "done"]:
            self.tasks[rest[0]] = "d"
        elif verb == ["task", "accept"]:
            self.tasks[rest[0]] = "accepted"
        elif verb == ["issue", "add"]:
            self.issues.add(rest[0])
        elif verb == ["issue", "resolve"]:
            assert issue_text is not None
            self.resolved.add(issue_text)

    def missing_from(self, plan_text: str) -> list[str]:
        """Confirmed changes this plan does not show (empty when it holds them all)."""
        tasks, issues = states(plan_text)
        lost = [
            f"task {task_id} {state}"
            for task_id, state in self.tasks.items()
            if task_id not in tasks or PROGRESS[tasks[task_id]] < PROGRESS[state]
        ]
        lost += [f"issue added: {text!r}" for text in self.issues - self.resolving - issues]
        lost += [f"issue resolved: {text!r}" for text in self.resolved & issues]
        return lost


def choose_command(rng: random.Random, root: Path, number: int) -> tuple[list[str], str | None]:
    """A mutating command that should succeed on the plan as it is; for a resolve, the issue text."""
    text = (root / "plan.jsonl").read_text()
    tasks, _ = states(text)
    issues = [r for r in map(json.loads, filter(str.strip, text.splitlines())) if r["t"] == "issue"]
    pending = sorted(t for t, s in tasks.items() if s == "p")
    done = sorted(t for t, s in tasks.items() if s == "d")
    new_task = {"id": f"t-crash{number:03d}", "name": f"crash task {number}"}
    options: list[tuple[list[str], str | None]] = [
        (["task", "add", json.dumps(new_task)], None),
        (["task", "add", json.dumps(new_task)], None),  # twice: tasks for the done and accept below
        (["issue", "add", f"crash issue {number}"], None),
    ]
    if pending:
        options.append((["task", "done", rng.choice(pending)], None))
    if done:
        options.append((["task", "accept", rng.choice(done)], None))
    if issues:
        issue = rng.choice(issues)
        options.append((["issue", "resolve", issue["id"]], issue["text"]))
    return rng.choice(options)


def run(root: Path, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    began = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "ralph", "-C", str(root), *args], capture_output=True, text=True, timeout=120
    )
    return result, time.monotonic() - began


def wait_for(marker: Path, process: subprocess.Popen, step: str) -> None:
    """Until the process has paused at its step (it writes the marker there)."""
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert process.poll() is None, (step, "exited before it got there", process.communicate())
        assert time.monotonic() < deadline, (step, "never got there")
        time.sleep(0.005)


@pytest.mark.slow
def test_sigkill_at_each_step_and_random_moments(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("RALPH_LOCK_TIMEOUT", "10")
    rng = random.Random(SEED)
    confirmed = Confirmed()
    outcomes: dict[str, int] = {}
    plan = [*EFFECT_AT, "finish"] * STEP_ROUNDS + ["start-up"] * STARTUP_ROUNDS
    rng.shuffle(plan)
    run(repo, "issue", "add", "warm-up")
    confirmed.record(["issue", "add", "warm-up"], None, True)
    for number, step in enumerate(plan):
        args, issue_text = choose_command(rng, repo, number)
        before = (repo / "plan.jsonl").read_bytes(), git(repo, "rev-parse", "HEAD")
        marker = tmp_path / f"paused-{number}"
        if step in EFFECT_AT:
            process = start(repo, *args, pause_at=(step, marker))
            wait_for(marker, process, step)
        else:
            process = start(repo, *args)
            if step == "start-up":
                time.sleep(rng.uniform(0, 0.3))
            else:
                process.wait(timeout=120)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # ralph and any git it is running
        out, err = process.communicate()
        if process.returncode == 0:
            effect = "finished"
        else:
            assert process.returncode == -signal.SIGKILL, (args, process.returncode, err)
            file_now, head_now = (repo / "plan.jsonl").read_bytes(), git(repo, "rev-parse", "HEAD")
            effect = (
                "committed"
                if head_now != before[1]
                else "file written"
                if file_now != before[0]
                else "no effect"
            )
            effect = f"killed, {effect}"
        outcomes[f"{step}: {effect}"] = outcomes.get(f"{step}: {effect}", 0) + 1
        if step in EFFECT_AT:
            assert effect == f"killed, {EFFECT_AT[step]}", (number, step, args)
        elif step == "finish":
            assert effect == "finished", (number, args, err)
        confirmed.record(args, issue_text, process.returncode == 0)

        # The plan loads, and neither HEAD nor the file lost a change a command had confirmed.
        check, _ = run(repo, "check")
        assert check.returncode == 0, (number, args, check.stderr)
        assert not confirmed.missing_from(git(repo, "show", "HEAD:plan.jsonl")), (number, args)
        assert not confirmed.missing_from((repo / "plan.jsonl").read_text()), (number, args)

        # The next command runs at once: no lock, temp file or git lock of the killed one in its way
        # (RALPH_LOCK_TIMEOUT is 10 s: a lock left behind fails it).
        after = ["issue", "add", f"after round {number}"]
        result, _ = run(repo, *after)
        assert result.returncode == 0, (number, args, result.stderr)
        confirmed.record(after, None, True)
        assert not list(repo.glob(".plan.jsonl.*.tmp")), number
        assert not (repo / ".git" / "index.lock").exists(), number
        # It committed whatever the killed command had left uncommitted: HEAD is the file again.
        assert git(repo, "show", "HEAD:plan.jsonl") == (repo / "plan.jsonl").read_text()
        assert "plan.jsonl" not in git(repo, "status", "--porcelain")

    print(outcomes)
    fsck = subprocess.run(
        ["git", "fsck", "--strict", "--no-dangling"], cwd=repo, capture_output=True, text=True
    )
    assert fsck.returncode == 0 and not fsck.stdout.strip(), fsck.stdout + fsck.stderr
