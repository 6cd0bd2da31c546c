"""Issue 24, "stops tell the truth": after SIGTERM, SIGHUP or Ctrl-C during parallel builds, the
console, events.jsonl and the task_killed hooks name exactly the runs that were stopped (none was
killed: each is set aside, its task pending again), and the run_ended hook runs, bounded by
hook_timeout, on every ending, signals included. Real processes: its agents, its hooks, and ralph
where a test signals it (the runs it waits for go through the click app in its own process)."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

from tests.support.construct import add_tasks, construct, events, plan_records, wait_for, with_app_spec
from tests.support.gitrepo import git

HOOK = (
    "import json, os, pathlib, sys\npayload = json.load(sys.stdin)\n"
    "out = pathlib.Path(sys.argv[1]) / (payload['event'] + '-' + str(os.getpid()) + '.json')\n"
    "out.write_text(json.dumps(payload))\n"
)


def with_hooks(root: Path, tmp_path: Path) -> Path:
    """Hooks on task_killed and run_ended that each write their payload into a folder."""
    received = tmp_path / "hooks"
    received.mkdir()
    script = tmp_path / "hook.py"
    script.write_text(HOOK)
    hooks = {event: [sys.executable, str(script), str(received)] for event in ("task_killed", "run_ended")}
    from tests.support.cli import ralph_in_process

    done = ralph_in_process(root, "config", "set", "hooks", json.dumps(hooks))
    assert done.returncode == 0, done.stderr
    return received


@pytest.fixture
def app(repo: Path) -> Path:
    return with_app_spec(repo, "# App\n\n- Parse input\n- Compute result\n- Print report\n")


def payloads(received: Path, event: str) -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted(received.glob(f"{event}-*.json"))]


@pytest.mark.parametrize(  # SIGINT and SIGTERM stop serial runs and VERIFY in test_construct.py too
    ("sig", "code"),
    [
        pytest.param(signal.SIGINT, 130, id="SIGINT", marks=pytest.mark.slow),
        pytest.param(signal.SIGTERM, 143, id="SIGTERM", marks=pytest.mark.slow),
        pytest.param(signal.SIGHUP, 129, id="SIGHUP"),
    ],
)
def test_a_stop_during_parallel_builds_kills_no_task_and_the_run_ended_hook_runs(app, tmp_path, sig, code):
    received = with_hooks(app, tmp_path)
    ids = add_tasks(app, "One [hang]", "Two [hang]", "Three [hang]")
    state = tmp_path / "agent-state"
    running = construct(app, "--parallel", "3", wait=False)
    wait_for(lambda: all((state / f"{t}.agent.pid").exists() for t in ids), "the agents never all started")

    running.send_signal(sig)
    out, err = running.communicate(timeout=90)

    assert running.returncode == code, out + err
    journal = events(app)
    assert [e for e in journal if e["event"] == "task_killed"] == []
    assert payloads(received, "task_killed") == []
    assert "killed" not in out, out
    stopped = [e["item"] for e in journal if e["event"] == "agent_end" and e.get("stop_reason")]
    assert sorted(stopped) == sorted(ids)  # the three runs, each once: no attempt after the stop
    assert all(e["stop_reason"] == "interrupted" for e in journal if e["event"] == "agent_end")
    # The console: "[ralph 0:01] BUILD t-xxxxxx: agent stopped: interrupted (0:00)", once for each.
    console = [
        line.split()[3].rstrip(":") for line in err.splitlines() if "agent stopped: interrupted" in line
    ]
    assert sorted(console) == sorted(ids)
    aside = sorted(e["item"] for e in journal if e["event"] == "build_not_merged")
    assert aside == sorted(ids)
    ended = payloads(received, "run_ended")
    assert len(ended) == 1 and ended[0]["outcome"] == "INTERRUPTED", ended
    statuses = {r["id"]: r["s"] for r in plan_records(app) if r.get("t") == "task"}
    assert statuses == dict.fromkeys(ids, "p")  # each pending again, none set aside for DECOMPOSE
    assert (app / "plan.jsonl").read_text() == git(app, "show", "HEAD:plan.jsonl")


def test_the_run_ended_hook_runs_when_the_time_budget_ends_the_run(app, tmp_path):
    """The budget's deadline stopped the agent; it used to stop the run_ended hook at once too."""
    received = with_hooks(app, tmp_path)
    add_tasks(app, "Long [hang]")
    done = construct(app, "--max-minutes", "0.02")
    assert done.returncode == 4, done.stdout + done.stderr
    (ended,) = payloads(received, "run_ended")
    assert ended["outcome"] == "MAX_MINUTES"
    assert not [e for e in events(app) if e["event"] == "hook_failed"]


def test_the_run_ended_hook_runs_when_an_error_ends_the_run(app, tmp_path):
    """An error the loop cannot go on from (here git's index locked by someone else) ends the run
    with one line; the run_ended hook hears of it, outcome ERROR."""
    received = with_hooks(app, tmp_path)
    add_tasks(app, "Locks the index")
    agent = tmp_path / "locking_agent.py"
    agent.write_text(f"import pathlib\npathlib.Path({str(app / '.git' / 'index.lock')!r}).write_text('')\n")
    done = construct(app, agent=f"{sys.executable} {agent}")
    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]  # after the console's lines, the error's one
    assert last.startswith("ralph: git's index is locked") and "Traceback" not in done.stderr
    (ended,) = payloads(received, "run_ended")
    assert ended["outcome"] == "ERROR" and "index.lock" in ended["message"]
