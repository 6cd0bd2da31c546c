"""The money budget: a run's cost as the CLI reports it, else its tokens at the model's price,
else unknown; `--max-cost` stops the loop cleanly before the run that would pass it."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from ralph.agents.base import Usage
from ralph.loop.cost import Spending, describe_cost, run_cost
from tests.support.construct import CHECK_WORK, add_tasks, assert_clean, construct, in_process, plan_records
from tests.support.gitrepo import git

# Every run costs $0.40, as a Claude-style result event says; BUILD builds, VERIFY accepts.
AGENT = """import json, os, pathlib, sys
sys.path.insert(0, os.environ["AGENT_KIT_DIR"]); from agent_kit import ralph
stage, item = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID")
with open(os.environ["RUNS"], "a") as runs:
    runs.write(f"{stage} {item}\\n")
if stage == "BUILD":
    pathlib.Path("work").mkdir(exist_ok=True)
    pathlib.Path(f"work/{item}.txt").write_text("ok")
    ralph("task", "done")
elif stage == "VERIFY":
    ralph("task", "accept")
usage = {"input_tokens": 1000, "output_tokens": 100}
print(json.dumps({"type": "result", "is_error": False, "total_cost_usd": 0.4, "usage": usage}))
"""


@pytest.fixture
def project(repo: Path) -> Path:
    (repo / "specs" / "app.md").write_text("# App\n\n- A\n- B\n- C\n")
    (repo / "check_work.py").write_text(CHECK_WORK)
    git(repo, "add", "specs/app.md", "check_work.py")
    git(repo, "commit", "-qm", "the app spec and its gate")
    return repo


def test_max_cost_stops_before_the_run_that_would_pass_it_and_leaves_the_plan_committed(project, tmp_path):
    first, second, third = add_tasks(project, "A", "B", "C")
    agent, runs = tmp_path / "agent.py", tmp_path / "runs.txt"
    agent.write_text(AGENT)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    # One at a time: runs started together before any cost is known may pass the budget.
    done = construct(
        project, "--max-cost", "1", "--parallel", "1", "--gate", "", agent=command, env={"RUNS": str(runs)}
    )
    assert done.returncode == 10, done.stdout + done.stderr
    # $0.40 + $0.40 spent; a third run at that mean would reach $1.20: it never starts
    assert runs.read_text().splitlines() == [f"BUILD {first}", f"BUILD {second}"]
    assert done.stdout.startswith("ralph: MAX_COST: the money budget ($1) would be passed: $0.80 spent")
    assert "; cost: $0.80\n" in done.stdout and "by stage: BUILD 2,200 tokens $0.80" in done.stdout
    assert f"by task: {first} 1,100 tokens $0.40; {second} 1,100 tokens $0.40" in done.stdout
    assert_clean(project)
    assert next(r for r in plan_records(project) if r["t"] == "state")["stage"] == "MAX_COST"
    assert third in {r["id"] for r in plan_records(project) if r["t"] == "task"}


def test_the_default_parallel_meeting_a_budget_starts_one_run_until_a_cost_is_known(project, tmp_path):
    """--parallel 4 (the default) with --max-cost 1 and $0.60 runs: four builds started together
    spent $2.40. Now the first run's cost is known before a second starts: $0.60, then a second run
    at that mean would reach $1.20, so none does."""
    add_tasks(project, "A", "B", "C", "D")
    agent, runs = tmp_path / "agent.py", tmp_path / "runs.txt"
    agent.write_text(AGENT.replace('"total_cost_usd": 0.4', '"total_cost_usd": 0.6'))
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    done = construct(project, "--max-cost", "1", "--gate", "", agent=command, env={"RUNS": str(runs)})
    assert done.returncode == 10, done.stdout + done.stderr
    assert len(runs.read_text().splitlines()) == 1
    assert "; cost: $0.60\n" in done.stdout
    assert_clean(project)


def test_admit_waits_for_the_first_cost_then_judges_the_budget():
    import threading
    import time

    spending = Spending(1.0)
    assert spending.admit() is None  # the first run starts at once
    admitted: list[str | None] = []
    waiter = threading.Thread(target=lambda: admitted.append(spending.admit()))
    waiter.start()
    time.sleep(0.3)
    assert admitted == [] and spending.running == 1  # the second waits for a cost to be known
    spending.add("BUILD", "t-a", 100, 0.6)
    waiter.join(timeout=5)
    assert admitted == [
        "the money budget ($1) would be passed: $0.60 spent, and a run costs $0.60 on average"
    ]
    assert Spending(None).admit() is None and Spending(None).admit() is None  # no budget: never waits


def test_run_cost_reported_priced_or_unknown():
    reported = Usage(input_tokens=10, cost_usd=0.25)
    assert run_cost(reported, "claude-sonnet-4-5") == 0.25
    tokens = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=1_000_000)
    assert run_cost(tokens, "claude-sonnet-4-5-20250929") == pytest.approx(3.0 + 1.5 + 0.3)
    mine = {"my-model": {"input": 1.0, "output": 2.0}}  # the config's prices win; cache reads at input
    assert run_cost(tokens, "my-model", mine) == pytest.approx(1.0 + 0.2 + 1.0)
    assert run_cost(tokens, "unknown-model") is None and run_cost(tokens, None) is None
    assert run_cost(Usage(), None) is None  # a CLI that reports nothing: unknown, not free


def test_spending_sums_per_stage_and_item_and_says_unknown():
    spent = Spending(max_cost_usd=1.0)
    assert spent.over_budget() is None
    spent.add("BUILD", "t-a", 100, 0.4)
    spent.add("VERIFY", "t-a", 50, None)
    assert spent.over_budget() is None  # 0.4 and one more at 0.4: within 1
    spent.add("BUILD", "t-b", 100, 0.4)
    assert "would be passed: $0.80 spent" in spent.over_budget()  # one more: 1.2
    assert spent.by_item["t-a"] == {"runs": 2, "tokens": 150, "cost_usd": 0.4, "unknown_runs": 1}
    assert describe_cost(spent.cost_usd, spent.unknown_runs) == "$0.80 + 1 run(s) of unknown cost"
    assert describe_cost(0.0, 2).startswith("unknown (2 run(s)")


def test_a_run_is_priced_by_the_model_its_cli_reports():
    from ralph.agents.base import RunTracker
    from ralph.agents.events import SessionEvent, UsageEvent

    tracker = RunTracker()
    tracker.add(SessionEvent("s-1", model="claude-haiku-4-5"))
    tracker.add(UsageEvent(input_tokens=1_000_000, output_tokens=0))
    assert tracker.model == "claude-haiku-4-5"
    assert run_cost(tracker.usage, tracker.model) == pytest.approx(1.0)


def test_status_shows_what_every_stage_spent_from_the_committed_plan_unknown_cost_as_unknown(
    project, tmp_path
):
    """BUILD runs report $0.40 each; VERIFY's report tokens and no cost, for no model with a price:
    after the run, `ralph status` (reading only the committed plan) says so per stage."""
    add_tasks(project, "A", "B")
    agent, runs = tmp_path / "agent.py", tmp_path / "runs.txt"
    agent.write_text(
        AGENT.replace('"total_cost_usd": 0.4, ', '**({"total_cost_usd": 0.4} if stage == "BUILD" else {}), ')
    )
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    done = construct(project, "--gate", "", agent=command, env={"RUNS": str(runs)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert_clean(project)
    shown = ralph_json(project, "status")["spent"]
    assert shown["by_stage"] == {
        "BUILD": {"runs": 2, "tokens": 2200, "cost_usd": 0.8, "unknown_cost_runs": 0},
        "VERIFY": {"runs": 2, "tokens": 2200, "cost_usd": None, "unknown_cost_runs": 2},
        "CHECK": {"runs": 1, "tokens": 1100, "cost_usd": None, "unknown_cost_runs": 1},  # the spec check
    }
    assert (shown["runs"], shown["tokens"], shown["cost_usd"], shown["unknown_cost_runs"]) == (
        5,
        5500,
        0.8,
        3,
    )
    assert shown["by_task"] == {}  # both accepted: their records are gone, their BUILD runs counted above
    text = in_process(["-C", str(project), "status"], {}).stdout
    assert "spent so far: 5 agent run(s), 5,500 tokens, $0.80 + 3 run(s) of unknown cost\n" in text
    assert (
        "by stage: BUILD 2,200 tokens, $0.80; VERIFY 2,200 tokens, cost unknown;"
        " CHECK 1,100 tokens, cost unknown\n" in text
    )


def ralph_json(root: Path, *args: str) -> dict:
    return json.loads(in_process(["-C", str(root), *args, "--json"], {}).stdout)
