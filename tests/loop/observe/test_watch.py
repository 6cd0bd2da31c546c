"""Watching a construct run: the live console on a real terminal (a pseudo-terminal), `ralph
status` and `ralph watch` from another terminal while a real run works, and the transcripts
beside the agents' logs. The agent is the suite's scripted fake agent, held in BUILD until the
test lets it go."""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import ralph_in_process
from tests.support.construct import FAKE_AGENT, construct, events, wait_for, with_app_spec
from tests.support.terminal import Terminal, let_go, ralph_out, terminal

SGR = re.compile(r"\x1b\[[0-9;]*m")

# BUILD says what it does (a Claude Code tool call), then waits for the file `go` beside the fake
# agent's state (or for ralph to go away), then acts as the fake agent.
HELD_AGENT = f"""import os, pathlib, runpy, sys, time
kit = {str(FAKE_AGENT.parent)!r}
sys.path.insert(0, kit)
parent = os.getppid()
if os.environ["RALPH_STAGE"] == "BUILD":
    print('{{"type": "assistant", "message": {{"content": [{{"type": "tool_use", "name": "Bash",'
          ' "input": {{"command": "make work"}}}}]}}}}', flush=True)
    go = pathlib.Path(os.environ["FAKE_AGENT_STATE"]) / "go"
    while not go.exists() and os.getppid() == parent:
        time.sleep(0.05)
sys.argv = [{str(FAKE_AGENT)!r}]
runpy.run_path({str(FAKE_AGENT)!r}, run_name="__main__")
"""


@pytest.fixture
def held(repo: Path) -> Path:
    with_app_spec(repo, "# App\n\n- Parse input\n")
    (repo.parent / "held_agent.py").write_text(HELD_AGENT)
    return repo


def held_agent(root: Path) -> str:
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(root.parent / 'held_agent.py'))}"


def building(root: Path) -> Path:
    """The transcript of the BUILD run, once it shows the agent's first action."""
    found: list[Path] = []

    def started() -> bool:
        found[:] = [
            path
            for path in (root / "build" / "ralph-logs").glob("ralph-*-build-t-*.transcript.md")
            if "-> Bash: make work" in path.read_text()
        ]
        return bool(found)

    wait_for(started, "the BUILD agent started")
    return found[0]


def test_status_and_watch_follow_a_running_construct_to_its_end(held: Path):
    running = construct(held, agent=held_agent(held), wait=False)
    transcript = building(held)
    task_id = transcript.name.split("-build-")[1].removesuffix(".transcript.md")

    status = ralph_in_process(held, "status")
    first = status.stdout.splitlines()[0]
    assert first.startswith(f"run: active (pid {running.pid} since ") and " UTC), iteration 1: " in first
    assert first.endswith(f"BUILD {task_id} Parse input"), first

    once = ralph_in_process(held, "watch", "--once")
    assert once.returncode == 0, once.stderr
    lines = once.stdout.splitlines()
    assert lines[0].startswith("ralph ") and "iteration 1 of 10 · 0 of 1 accepted · ETA unknown" in lines[0]
    assert "tokens · " in lines[1]
    assert any(line.startswith(f"  BUILD       {task_id} Parse input · ") for line in lines), lines
    assert f"  {task_id}: -> Bash: make work" in lines  # the agent's last action

    watch = [sys.executable, "-m", "ralph", "-C", str(held), "watch"]
    follower = subprocess.Popen(watch, stdout=subprocess.PIPE, text=True)
    on_terminal = terminal(watch)
    wait_for(lambda: on_terminal.seen().count("\033[H") >= 2, "ralph watch redraws on a terminal")
    let_go(held)
    out, _ = running.communicate(timeout=300)
    watched, _ = follower.communicate(timeout=120)
    assert running.returncode == 0, out
    assert follower.returncode == 0 and watched.splitlines()[-1].startswith(
        "ralph watch: the run ended COMPLETE at "
    )
    drawn = on_terminal.finish()
    assert f"{task_id} Parse input" in drawn and "ralph watch: the run ended COMPLETE at " in drawn
    assert ralph_in_process(held, "status").stdout.startswith("run: not running; the last ended COMPLETE at ")
    gone = ralph_in_process(held, "watch")
    assert gone.returncode == 1 and gone.stdout == ""
    assert gone.stderr.startswith("ralph watch: no run is active; the last ended COMPLETE at ")
    # Every agent log has its readable transcript beside it.
    logs = [e["log"] for e in events(held) if e["event"] == "agent_begin"]
    assert len(logs) >= 3 and all((held / log.replace(".log", ".transcript.md")).is_file() for log in logs)


# `make test` has it with a real process SIGKILLed holding the construct lock, and no run, in
# usecases/test_runs.py: test_a_run_killed_holding_its_lock_reads_as_not_running_and_watch_has_none_to_follow
@pytest.mark.slow
def test_a_killed_run_reads_as_not_running(held: Path):
    running = construct(held, agent=held_agent(held), wait=False)
    building(held)
    running.send_signal(signal.SIGKILL)
    running.communicate(timeout=60)
    assert (held / ".git" / "ralph-construct.lock").read_text().startswith(f"pid {running.pid}, since ")
    status = ralph_out(held, "status").stdout.splitlines()[0]
    assert status.startswith("run: not running; the last stopped without finishing (killed?)"), status
    assert ralph_out(held, "watch", "--once").returncode == 1


def run_on_a_terminal(root: Path, agent: str, env: dict) -> str:
    """`ralph construct` with its output on a pseudo-terminal; all it wrote there."""
    screen = Terminal()
    tty = screen.follower
    return screen.started(
        construct(root, agent=agent, wait=False, env=env, stdin=tty, stdout=tty, stderr=tty)
    ).finish()


# NO_COLOR's Mode (redrawn, no colour) is test_live.py's test_the_terminal_decides_how_it_is_drawn,
# and the console's colours under it test_console.py's: that case runs with the slow suites.
@pytest.mark.slow
@pytest.mark.parametrize("no_color", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_the_console_draws_a_live_region_on_a_real_terminal(repo: Path, no_color: bool):
    with_app_spec(repo, "# App\n\n- Parse input [gate-fails-once]\n")
    env = {"NO_COLOR": "1" if no_color else "", "TERM": "xterm", "FORCE_COLOR": ""}
    shown = run_on_a_terminal(repo, "", env)
    task_id = next(e["item"] for e in events(repo) if e["event"] == "agent_begin" and e["stage"] == "BUILD")
    assert "\033[2K" in shown  # the region is redrawn in place
    plain = SGR.sub("", shown)
    assert f"  BUILD       {task_id} Parse input [gate-fails-once] · 0:0" in plain  # a running agent
    assert f"  last gate {task_id}: FAILED build/ralph-logs/" in plain and "    FAILED: " in plain
    assert f"gate for {task_id}: FAILED, log build/ralph-logs/ralph-" in plain
    assert "ralph: COMPLETE" in plain
    assert ("\033[31m" in shown) is not no_color and ("\033[1m" in shown) is not no_color
    assert re.search(r"\d of \d accepted", plain) and "ralph 0:0" in plain  # the progress header


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_a_task_verify_sent_back_is_left_in_the_report_with_the_verifiers_words
# (the report's "left (n):" section: tests/cli/golden/reports/)
@pytest.mark.slow
def test_the_final_report_says_in_words_why_each_task_is_left(project_with_tasks):
    root, task_id = project_with_tasks
    done = construct(root, "--max-iterations", "1")
    assert done.returncode == 3, done.stdout + done.stderr
    left = done.stdout.split("left (1):\n")[1].splitlines()[0]
    assert left == (
        f"  {task_id} pending: Picky [reject-always]"
        " (VERIFY rejected it: the fake verifier rejects the first build)"
    )


@pytest.fixture
def project_with_tasks(repo: Path):
    from tests.support.construct import add_tasks

    with_app_spec(repo, "# App\n\n- Picky\n")
    (task_id,) = add_tasks(repo, "Picky [reject-always]")
    return repo, task_id


def test_a_run_not_yet_begun_is_not_mixed_up_with_the_last_one(repo: Path):
    """The lock is held (by this process, as a run starting now would) while the journal's latest
    run is an older one, killed mid-build: the status shows none of the old run's agents."""
    import json

    from ralph.usecases import runs

    journal = repo / "build" / "ralph-logs" / "events.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    old = [
        {"ts": "2026-01-01T12:00:00.000+00:00", "event": "construct_begin"},
        {"ts": "2026-01-01T12:00:01.000+00:00", "event": "iteration_begin", "iteration": 7},
        {"ts": "2026-01-01T12:00:02.000+00:00", "event": "agent_begin", "stage": "BUILD", "item": "t-old"},
    ]
    journal.write_text("".join(json.dumps(event) + "\n" for event in old))
    with open(repo / ".git" / "ralph-construct.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write(f"pid {os.getpid()}, since 2026-11-23 13:00:00 UTC")
        lock.flush()
        status = runs.run_status(repo)
        assert status.active and status.pid == os.getpid() and status.agents == ()
        assert status.to_json() == {
            "active": True, "pid": os.getpid(), "since": "2026-11-23 13:00:00 UTC", "last": None,
            "agents": [], "stage": None, "iteration": None,
        }  # fmt: skip
        assert runs.describe(status) == f"run: active (pid {os.getpid()} since 2026-11-23 13:00:00 UTC)"
        lock.seek(0)
        lock.write(f"pid {os.getpid()}, since 2026-01-01 12:00:00 UTC")  # the journal's run is this one
        lock.flush()
        assert runs.describe(runs.run_status(repo)).endswith("iteration 7: BUILD t-old")
