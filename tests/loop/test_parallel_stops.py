"""Nothing that passed is thrown away (issue 33): when a spent budget or a stop signal ends a run
during parallel builds, a build that passed its gate is merged, or kept on its draft branch when it
cannot be (the report names it); a gate the stop cut short is recorded as cut short, never as the
build's failure or an attempt. Real git, real agents and gates; the loop in this process, so that
a build can be held, once committed, until the loop is stopping (the moment the builds were lost).
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ralph.loop.stages import build, build_apply
from ralph.loop.stages.build_outcome import BuildOutcome
from ralph.loop.stages.workspace import Workspace
from ralph.loop.tree.work_tree import Keep
from tests.support.construct import (
    add_tasks,
    assert_clean,
    construct,
    events,
    gone,
    plan_records,
    subjects,
    wait_for,
)
from tests.support.gitrepo import git

# Every run costs $COST (a Claude-style result). BUILD writes work/<task>.txt (and shared.txt, its
# task id in it, for a task named [shared]) and marks the task done; one named [slow] sleeps first
# (until stopped); with $AFTER_A_GATE, each build after the
# first ends only once a gate has started. VERIFY accepts. Each run is listed in $STATE/runs.txt.
AGENT = """import json, os, pathlib, sys, time
sys.path.insert(0, os.environ["AGENT_KIT_DIR"]); from agent_kit import ralph
stage, item = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID")
state = pathlib.Path(os.environ["STATE"])
with open(state / "runs.txt", "a") as runs:
    runs.write(f"{stage} {item}\\n")
if stage == "BUILD":
    pathlib.Path("work").mkdir(exist_ok=True)
    pathlib.Path(f"work/{item}.txt").write_text("ok")
    name = json.loads(ralph("task", "show", item))["name"]
    if "[shared]" in name:
        pathlib.Path("shared.txt").write_text(item)
    if "[slow]" in name:
        time.sleep(600)
    if os.environ.get("AFTER_A_GATE") and len((state / "runs.txt").read_text().splitlines()) > 1:
        deadline = time.monotonic() + 60
        while not list(state.glob("gate-*.pid")) and time.monotonic() < deadline:
            time.sleep(0.05)
    ralph("task", "done")
elif stage == "VERIFY":
    ralph("task", "accept")
usage = {"input_tokens": 1000, "output_tokens": 100}
cost = float(os.environ["COST"])
print(json.dumps({"type": "result", "is_error": False, "total_cost_usd": cost, "usage": usage}))
"""

# A gate that never ends by itself: it says it started ($STATE/gate-<pid>.pid), then sleeps.
SLOW_GATE = """import os, pathlib, time
state = pathlib.Path(os.environ["STATE"])
(state / f"{os.getpid()}.tmp").write_text(str(os.getpid()))
(state / f"{os.getpid()}.tmp").rename(state / f"gate-{os.getpid()}.pid")
time.sleep(600)
"""


@pytest.fixture
def project(app_repo: Callable[[str], Path]) -> Path:
    return app_repo("# App\n\nParts that can be built side by side.\n")


def run(project: Path, tmp_path: Path, *flags: str, cost: float = 0.6, **env: str):
    agent, state = tmp_path / "agent.py", tmp_path / "state"
    agent.write_text(AGENT)
    state.mkdir(exist_ok=True)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    return construct(project, *flags, agent=command, env={"STATE": str(state), "COST": str(cost), **env})


def built_runs(tmp_path: Path) -> list[str]:
    return [line.split()[1] for line in (tmp_path / "state" / "runs.txt").read_text().splitlines()]


def held_until_stopping(
    monkeypatch: pytest.MonkeyPatch, then=lambda ws, task_id: None, hold=lambda held: True
) -> list[str]:
    """Each build, once committed in its worktree (it passed its gate), waits until the loop is
    stopping (`then` first: it stops the loop), the moment such builds were lost; with `hold`, only
    while it says so of the builds held so far. Returns the tasks that got this far."""
    real, held = build_apply.apply, []

    def applied(ws: Workspace, task_id: str, outcome: BuildOutcome, *args) -> None:
        real(ws, task_id, outcome, *args)
        if outcome.keep is not Keep.COMMIT:  # committed: the build's files with its record
            return
        held.append(task_id)
        then(ws, task_id)
        wait_for(lambda: ws.agents.stopping or not hold(held), "the loop never stopped")

    monkeypatch.setattr(build, "apply", applied)  # the name the stage calls it by
    return held


def assert_only_drafts_left(project: Path, *tasks: str) -> None:
    """No build's worktree or branch is left; of ralph's branches only the drafts of `tasks`."""
    assert len(git(project, "worktree", "list", "--porcelain").strip().split("\n\n")) == 1
    left = git(project, "branch", "--list", "--format=%(refname:short)", "ralph/*").split()
    assert sorted(left) == sorted(f"ralph/draft/{task}" for task in tasks)


def test_a_budget_refusing_the_next_run_lets_the_build_going_pass_its_gate_and_merge(project, tmp_path):
    """$0.60 runs, --max-cost 1, two builds side by side: one runs (until a cost is known), then
    the other may not start. The first build's gate was killed and logged as its failure, or, past
    it, its commit was neither merged nor kept (3 of 3 runs). Now the refusal winds the builds down:
    the one going passes its gate and is merged (merging costs no agent run)."""
    ids = add_tasks(project, "One", "Two")
    done = run(project, tmp_path, "--parallel", "2", "--max-cost", "1")
    assert done.returncode == 10, done.stdout + done.stderr
    assert done.stdout.startswith("ralph: MAX_COST: the money budget ($1) would be passed: $0.60 spent")
    (passed,) = built_runs(tmp_path)  # the other build's run never started
    (refused,) = set(ids) - {passed}
    assert any(s.startswith(f"ralph(build): {passed} ") for s in subjects(project))
    assert git(project, "show", f"HEAD:work/{passed}.txt") == "ok"
    tasks = {r["id"]: r for r in plan_records(project) if r["t"] == "task"}
    assert tasks[passed]["s"] == "d" and tasks[passed]["commit"] in git(project, "log", "--format=%H")
    assert tasks[refused].get("s", "p") == "p" and "attempts" not in tasks[refused]
    journal = events(project)
    assert [(e["item"], e["ok"]) for e in journal if e["event"] == "gate_end"] == [(passed, True)]
    assert [e["item"] for e in journal if e["event"] == "build_merged"] == [passed]
    assert not [e for e in journal if e["event"] in ("build_failed", "gate_cut_short")]
    assert next(r for r in plan_records(project) if r["t"] == "state")["stage"] == "MAX_COST"
    assert_only_drafts_left(project)
    assert_clean(project)


def test_a_build_that_passed_its_gate_is_merged_when_a_stop_signal_ends_the_run(
    project, tmp_path, monkeypatch
):
    """SIGTERM once one build passed its gate and committed in its worktree, the other still
    building: the passed one was thrown away with the other. Now it is merged, the other's work is
    set aside on its draft; the plan is left committed."""
    fast, slow = add_tasks(project, "One", "Two [slow]")
    held = held_until_stopping(monkeypatch, then=lambda ws, task_id: os.kill(os.getpid(), signal.SIGTERM))
    done = run(project, tmp_path, "--parallel", "2")
    assert done.returncode == 143, done.stdout + done.stderr
    assert held == [fast]
    assert any(s.startswith(f"ralph(build): {fast} One") for s in subjects(project))
    assert git(project, "show", f"HEAD:work/{fast}.txt") == "ok"
    assert not (project / "work" / f"{slow}.txt").exists()
    tasks = {r["id"]: r for r in plan_records(project) if r["t"] == "task"}
    assert tasks[fast]["s"] == "d"
    assert tasks[slow].get("s", "p") == "p" and tasks[slow]["draft"] == f"ralph/draft/{slow}"
    journal = events(project)
    assert [e["item"] for e in journal if e["event"] == "build_merged"] == [fast]
    assert [e["item"] for e in journal if e["event"] == "build_not_merged"] == [slow]
    assert_only_drafts_left(project, slow)
    assert_clean(project)


def test_a_passed_build_that_cannot_merge_as_the_run_stops_is_kept_on_its_draft_and_reported(
    project, tmp_path, monkeypatch
):
    """Two builds change the same file, both pass their gates, and the second to pass stops the
    run (SIGTERM) before either merged. Whichever merges second conflicts with the first: it is
    kept on its draft branch (recorded on its task, named in the report), not counted as an
    attempt; before, it was thrown away."""
    ids = add_tasks(project, "One [shared]", "Two [shared]")

    def second_stops(ws: Workspace, task_id: str) -> None:
        if len(held) == 2:
            os.kill(os.getpid(), signal.SIGTERM)

    held = held_until_stopping(monkeypatch, then=second_stops, hold=lambda held: len(held) == 2)
    done = run(project, tmp_path, "--parallel", "2")
    assert done.returncode == 143, done.stdout + done.stderr
    assert sorted(held) == sorted(ids)
    journal = events(project)
    (merged,) = [e["item"] for e in journal if e["event"] == "build_merged"]
    (kept,) = [e for e in journal if e["event"] == "build_not_merged"]
    other, draft = kept["item"], f"ralph/draft/{kept['item']}"
    assert {merged, other} == set(ids) and kept["draft"] == draft and kept["conflicts"] == ["shared.txt"]
    assert git(project, "show", "HEAD:shared.txt") == merged
    assert git(project, "show", f"{draft}:shared.txt") == other
    assert git(project, "show", f"{draft}:work/{other}.txt") == "ok"
    task = next(r for r in plan_records(project) if r.get("id") == other)
    assert task.get("s", "p") == "p" and task["draft"] == draft and "attempts" not in task
    assert f"  {other}: {draft} (git diff HEAD...{draft})" in done.stdout.splitlines()
    assert not [e for e in journal if e["event"] == "build_failed"]
    assert_only_drafts_left(project, other)
    assert_clean(project)


def test_gates_a_stop_cuts_short_are_recorded_as_cut_short_not_as_failed_attempts(project, tmp_path):
    """SIGTERM while two builds' gates run: each gate was logged as the build's failed gate (or
    its failure waived as a stale base). Now each is journalled as cut short, the gates are gone,
    no attempt is counted, and each build's work is kept on its draft, which the report names."""
    ids = add_tasks(project, "One", "Two")
    agent, state, gate = tmp_path / "agent.py", tmp_path / "state", tmp_path / "slow_gate.py"
    agent.write_text(AGENT)
    state.mkdir()
    gate.write_text(SLOW_GATE)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    gates = f"{shlex.quote(sys.executable)} {shlex.quote(str(gate))}"
    env = {"STATE": str(state), "COST": "0.1"}
    running = construct(project, "--parallel", "2", "--gate", gates, agent=command, env=env, wait=False)
    wait_for(lambda: len(list(state.glob("gate-*.pid"))) == 2, "the two gates never ran together")
    running.send_signal(signal.SIGTERM)
    out, err = running.communicate(timeout=90)
    assert running.returncode == 143, out + err
    assert all(gone(int(path.read_text())) for path in state.glob("gate-*.pid"))
    journal = events(project)
    assert sorted(e["item"] for e in journal if e["event"] == "gate_cut_short") == sorted(ids)
    ended = [e for e in journal if e["event"] == "gate_end"]
    assert len(ended) == 2 and all(e["cut_short"] is True and "ok" not in e for e in ended)
    assert not [e for e in journal if e["event"] in ("build_failed", "build_stale_base", "task_killed")]
    tasks = {r["id"]: r for r in plan_records(project) if r["t"] == "task"}
    for task_id in ids:
        assert f"gate for {task_id}: cut short" in err
        assert tasks[task_id].get("s", "p") == "p" and "attempts" not in tasks[task_id]
        assert tasks[task_id]["draft"] == f"ralph/draft/{task_id}"
        assert f"  {task_id}: ralph/draft/{task_id} (git diff HEAD...ralph/draft/{task_id})" in out
    assert not [s for s in subjects(project) if s.startswith("ralph(build):")]
    assert_only_drafts_left(project, *ids)
    assert_clean(project)
