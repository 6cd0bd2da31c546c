"""The money budget: a run's cost as the CLI reports it, else its tokens at the model's price,
else unknown; `--max-cost` stops the loop cleanly before the run that would pass it."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from ralph.agents.base import Usage
from ralph.cli.common import describe_cost
from ralph.loop.runs.cost import (
    CostSpent,
    CostUnknown,
    Spending,
    TokensSpent,
    library_price,
    price_of,
    run_cost,
)
from tests.support.construct import (
    add_tasks,
    assert_clean,
    construct,
    events,
    in_process,
    plan_records,
)
from tests.support.gitrepo import git
from tests.support.present import present

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
def project(app_repo: Callable[[str], Path]) -> Path:
    return app_repo("# App\n\n- A\n- B\n- C\n")


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
    assert "; cost: $0.80\n" in done.stdout and "by stage: BUILD 2,200 tokens, cost $0.80" in done.stdout
    assert f"by task: {first} 1,100 tokens, cost $0.40; {second} 1,100 tokens, cost $0.40" in done.stdout
    assert_clean(project)
    assert next(r for r in plan_records(project) if r["t"] == "state")["stage"] == "MAX_COST"
    assert third in {r["id"] for r in plan_records(project) if r["t"] == "task"}


# `make test` has it in process (test_admit_waits_for_the_first_cost_then_judges_the_budget: every
# run, a parallel build's too, is admitted there) and the serial max-cost run above.
@pytest.mark.slow
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
    admitted: list[object] = []
    waiter = threading.Thread(target=lambda: admitted.append(spending.admit()))
    waiter.start()
    time.sleep(0.3)
    assert admitted == [] and spending.running == 1  # the second waits for a cost to be known
    spending.add("BUILD", "t-a", 100, 0.6)
    waiter.join(timeout=5)
    assert [type(over) for over in admitted] == [CostSpent]
    assert str(admitted[0]) == (
        "the money budget ($1) would be passed: $0.60 spent, and a run costs up to $0.60"
    )
    assert Spending(None).admit() is None and Spending(None).admit() is None  # no budget: never waits


def test_a_run_of_unknown_cost_does_not_let_a_second_start_under_a_money_budget():
    """Until a run's cost is known only one run starts: one that ended with no cost known says
    nothing about the next (it let four start at once). With a token budget beside the money
    budget, the run goes on after it (the tokens bound it), one run at a time."""
    import threading
    import time

    spending = Spending(1.0, max_tokens=10**9)
    assert spending.admit() is None
    assert spending.add("PLAN", None, 500, None) is None  # no price, no reported cost
    assert spending.admit() is None  # alone: it starts
    admitted: list[object] = []
    waiter = threading.Thread(target=lambda: admitted.append(spending.admit()))
    waiter.start()
    time.sleep(0.3)
    assert admitted == [] and spending.running == 1
    spending.add("BUILD", "t-a", 100, 0.3)
    waiter.join(timeout=5)
    assert admitted == [None] and spending.running == 1


def test_a_run_of_unknown_cost_under_a_money_budget_alone_stops_the_admission_of_new_runs():
    """Nothing bounds what runs of unknown cost spend: the first ends the admission of new runs,
    saying which run and model, and how to bound the budget; every refusal after it says the same."""
    spending = Spending(2.0)
    assert spending.admit() is None
    first = spending.add("BUILD", "t-a", 1000, None, "no-such-model-7")
    assert (
        isinstance(first, CostUnknown) and isinstance(first, CostSpent) and first.model == "no-such-model-7"
    )
    assert str(first) == (
        "the money budget ($2) cannot be held: the cost of BUILD t-a is unknown (no cost reported, no"
        " price known for model no-such-model-7), so no further run starts; give its price in the"
        " config's `prices` (USD per million tokens) or bound the run with --max-tokens"
    )
    refused = [spending.admit(), spending.admit()]
    assert [type(over) for over in refused] == [CostUnknown, CostUnknown]
    assert {str(over) for over in refused} == {str(first)} and refused[0] is not refused[1]
    assert spending.running == 0
    later = Spending(2.0)
    later.admit()
    later.add("BUILD", "t-a", 1000, 0.5)
    later.admit()
    assert "the agent CLI's default model" in str(later.add("VERIFY", "t-a", 1000, None))
    assert isinstance(later.admit(), CostUnknown)  # known runs before do not make it holdable
    no_budget = Spending(None)
    no_budget.admit()
    assert no_budget.add("BUILD", "t-a", 1000, None) is None and no_budget.admit() is None


def test_a_cheap_first_run_does_not_make_the_next_ones_look_cheap():
    """The estimate is the most one run cost, not the mean: after a $0.05 run and a $0.60 one, a
    run at the mean ($0.33) would fit a $1 budget; one like the largest would not."""
    spending = Spending(1.0)
    spending.admit()
    spending.add("INVESTIGATE", "i-a", 10, 0.05)
    spending.admit()
    spending.add("BUILD", "t-a", 10, 0.6)
    over = spending.admit()
    assert isinstance(over, CostSpent) and "a run costs up to $0.60" in str(over)


def test_a_running_run_passing_the_budget_is_told_to_stop_and_its_streamed_cost_counts():
    import threading

    spending = Spending(1.0, max_tokens=None)
    spending.admit()
    spending.add("INVESTIGATE", "i-a", 1000, 0.05)
    assert spending.admit() is None
    assert spending.stream(threading.get_ident(), 40_000, 0.5) is None  # $0.55 in all
    over = spending.stream(threading.get_ident(), 200_000, 1.0)  # $1.05: past $1
    assert isinstance(over, CostSpent) and over.stopped_run
    assert str(over) == "the money budget ($1) is spent: $0.05 by the runs ended and $1.00 by the 1 running"
    spending.stopped("BUILD", "t-a", "claude-opus-4-5")  # what it streamed was spent
    assert (round(spending.cost_usd, 6), spending.known_runs, spending.tokens) == (1.05, 2, 201_000)
    assert spending.by_stage["BUILD"] == {
        "runs": 1,
        "tokens": 200_000,
        "cost_usd": 1.0,
        "unknown_runs": 0,
        "model": "claude-opus-4-5",
    }
    assert spending.running == 0 and spending.streamed == {}


def test_the_token_budget_refuses_a_start_and_stops_a_run():
    spending = Spending(None, max_tokens=10_000)
    assert spending.admit() is None
    assert spending.stream(1, 6_000, None) is None
    spending.add("BUILD", "t-a", 6_000, None)
    over = spending.admit()  # 6,000 spent and a run takes up to 6,000: 12,000
    assert isinstance(over, TokensSpent) and not over.stopped_run
    assert str(over) == (
        "the token budget (10,000) would be passed: 6,000 spent, and a run takes up to 6,000 tokens"
    )
    small = Spending(None, max_tokens=10_000)
    small.admit()
    stop = small.stream(1, 10_001, None)
    assert isinstance(stop, TokensSpent) and stop.stopped_run


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
    spent = Spending(max_cost_usd=1.0, max_tokens=10**9)  # the tokens bound the runs of unknown cost
    assert spent.over_budget() is None
    spent.add("BUILD", "t-a", 100, 0.4)
    spent.add("VERIFY", "t-a", 50, None)
    assert spent.over_budget() is None  # 0.4 and one more at 0.4: within 1
    spent.add("BUILD", "t-b", 100, 0.4)
    assert "would be passed: $0.80 spent" in str(spent.over_budget())  # one more: 1.2
    assert spent.by_item["t-a"] == {"runs": 2, "tokens": 150, "cost_usd": 0.4, "unknown_runs": 1}
    assert describe_cost(spent.cost_usd, spent.unknown_runs) == "$0.80 + 1 run of unknown cost"
    why = "unknown (2 runs with no reported cost and no price for the model)"
    assert describe_cost(0.0, 2, why=True) == why
    assert describe_cost(None, 2) == describe_cost(0.0, 2) == "unknown"  # a report's row: said once
    assert describe_cost(0.25, 0) == "$0.25"


def test_a_run_is_priced_by_the_model_its_cli_reports():
    from ralph.agents.base import RunTracker
    from ralph.agents.events import SessionEvent, UsageEvent

    tracker = RunTracker()
    tracker.add(SessionEvent("s-1", model="claude-haiku-4-5"))
    tracker.add(UsageEvent(input_tokens=1_000_000, output_tokens=0))
    assert tracker.model == "claude-haiku-4-5"
    assert run_cost(tracker.usage, tracker.model) == pytest.approx(1.0)


@pytest.mark.slow
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
    done = construct(project, "--gate", "", "--review", agent=command, env={"RUNS": str(runs)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert_clean(project)
    shown = ralph_json(project, "status")["spent"]
    assert shown["by_stage"] == {
        "BUILD": {"runs": 2, "tokens": 2200, "cost_usd": 0.8, "unknown_cost_runs": 0},
        "VERIFY": {"runs": 2, "tokens": 2200, "cost_usd": None, "unknown_cost_runs": 2},
        "CHECK": {"runs": 1, "tokens": 1100, "cost_usd": None, "unknown_cost_runs": 1},  # the spec check
        "REVIEW": {"runs": 5, "tokens": 5500, "cost_usd": None, "unknown_cost_runs": 5},  # its aspects
    }
    assert (shown["runs"], shown["tokens"], shown["cost_usd"], shown["unknown_cost_runs"]) == (
        10,
        11000,
        0.8,
        8,
    )
    assert shown["by_task"] == {}  # both accepted: their records are gone, their BUILD runs counted above
    text = in_process(["-C", str(project), "status"], {}).stdout
    assert "spent so far: 10 agent runs, 11,000 tokens, cost $0.80 + 8 runs of unknown cost\n" in text
    assert (
        "by stage: BUILD 2,200 tokens, cost $0.80; VERIFY 2,200 tokens, cost unknown;"
        " CHECK 1,100 tokens, cost unknown; REVIEW 5,500 tokens, cost unknown\n" in text
    )


def ralph_json(root: Path, *args: str) -> dict:
    return json.loads(in_process(["-C", str(root), *args, "--json"], {}).stdout)


def test_prices_come_from_the_maintained_data_an_override_wins_an_unknown_model_is_unknown():
    million = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    # The hand-kept table matched claude-opus-4-5 by the prefix claude-opus-4: $15/$75.
    assert present(price_of("claude-opus-4-5"))["input"] == 5.0
    assert present(price_of("claude-opus-4-5"))["output"] == 25.0
    assert run_cost(million, "claude-opus-4-5") == pytest.approx(30.0)
    assert run_cost(million, "claude-opus-4-5-20251101") == pytest.approx(30.0)
    assert run_cost(million, "gemini-2.5-flash") == pytest.approx(0.30 + 2.50)  # the table had none
    # A run's tokens are many requests: never one request's long-context tier.
    assert run_cost(Usage(input_tokens=1_000_000), "claude-sonnet-4-5") == pytest.approx(3.0)
    mine = {"claude-opus-4-5": {"input": 1.0, "output": 2.0}}
    assert run_cost(million, "claude-opus-4-5", mine) == pytest.approx(3.0)  # the user's own price wins
    assert run_cost(million, "no-such-model-7") is None


def test_a_run_of_a_model_with_no_price_is_counted_as_of_unknown_cost():
    spending = Spending(None)
    spending.admit()
    spending.add("BUILD", "t-a", 1000, run_cost(Usage(input_tokens=1000), "no-such-model-7"))
    assert (spending.unknown_runs, spending.known_runs, spending.cost_usd) == (1, 0, 0.0)


def test_prices_are_read_without_any_network(monkeypatch):
    """The library can fetch newer prices online (its UpdatePrices); ralph reads only its bundled
    data: with every connection refused, prices are still found, and no thread was started."""
    import socket
    import threading

    def refuse(*args, **kwargs):
        raise AssertionError(f"network I/O: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    threads = threading.active_count()
    library_price.cache_clear()
    assert library_price("gemini-2.5-flash") == {"input": 0.3, "output": 2.5, "cache_read": 0.03}
    assert present(library_price("claude-haiku-4-5"))["input"] == 1.0
    assert threading.active_count() == threads

    from genai_prices import data_snapshot

    assert data_snapshot.get_snapshot().from_auto_update is False  # the bundled snapshot


# Claude-style stream: each turn an assistant message with its tokens, for claude-opus-4-5 ($5 per
# million input tokens). INVESTIGATE costs $0.05; a BUILD $0.60, $0.05 a turn. The builds stream in
# step: none starts turn n before all BUILDERS have written turn n - 1 (files in the test's folder), so that
# the budget is crossed at the same turn however the machine's load orders them; after turn
# HOLD_AFTER (where the test's budget is passed) a build waits to be stopped (up to 20 s, under the
# agent's 30 s limit) before it goes on, so a loop slowed by load still stops it at that turn.
STREAMER = """import json, os, pathlib, sys, time
sys.path.insert(0, os.environ["AGENT_KIT_DIR"]); from agent_kit import ralph
stage, item = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID")
def note(text):
    with open(os.environ["RUNS"], "a") as runs:
        runs.write(text + "\\n")
def turn(tokens):
    usage = {"input_tokens": tokens, "output_tokens": 0}
    print(json.dumps({"type": "assistant", "message": {"content": [], "usage": usage}}), flush=True)
note(f"{stage} {item} {os.environ.get('RALPH_MODEL')}")
if stage == "INVESTIGATE":
    turn(10_000)
    ralph("issue", "resolve", os.environ["RALPH_ISSUE_ID"])
elif stage == "BUILD":
    pathlib.Path("work").mkdir(exist_ok=True)
    pathlib.Path(f"work/{item}.txt").write_text("ok")
    barrier = pathlib.Path(TURNS_DIR)
    builders, hold_after = int(os.environ.get("BUILDERS", "0")), int(os.environ.get("HOLD_AFTER", "0"))
    barrier.mkdir(exist_ok=True)
    for n in range(int(os.environ.get("TURNS", "12"))):
        deadline = time.monotonic() + 60
        while n and len(list(barrier.glob(f"*.{n}"))) < builders and time.monotonic() < deadline:
            time.sleep(0.01)
        turn(int(os.environ.get("TURN_TOKENS", "10000")))
        note(f"turn {item} {n + 1}")
        (barrier / f"{item}.{n + 1}").touch()
        if n + 1 == hold_after:
            time.sleep(20)
    ralph("task", "done")
elif stage == "VERIFY":
    ralph("task", "accept")
"""


def streamer(tmp_path: Path) -> str:
    agent = tmp_path / "streamer.py"
    agent.write_text(STREAMER.replace("TURNS_DIR", repr(str(tmp_path / "turns"))))
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"


def test_the_default_parallel_with_streaming_runs_spends_at_most_the_budget_and_one_turn_each(
    project, tmp_path
):
    """--max-cost 1, $0.60 builds and the default --parallel 4, after a $0.05 INVESTIGATE: at the
    mean of what was known, four builds started at once and spent $2.45. Now the builds' streamed
    tokens are priced as they come: once $1 is passed they are stopped, their work set aside."""
    from ralph.usecases import issues

    tasks = add_tasks(project, "A", "B", "C", "D")
    issues.add(project, "Is the input ever empty?")
    runs = tmp_path / "runs.txt"
    done = construct(
        project,
        "--max-cost", "1", "--model", "claude-opus-4-5", "--gate", "",
        agent=streamer(tmp_path),
        env={"RUNS": str(runs), "BUILDERS": "4", "HOLD_AFTER": "5"},
    )  # fmt: skip
    assert done.returncode == 10, done.stdout + done.stderr
    started = [line for line in runs.read_text().splitlines() if not line.startswith("turn")]
    assert started[0].startswith("INVESTIGATE") and len(started) == 5  # four builds started together
    turns = [line for line in runs.read_text().splitlines() if line.startswith("turn")]
    assert len(turns) < 4 * 12  # stopped mid-run
    cost = float(done.stdout.split("; cost: $")[1].split()[0])
    assert 1.0 < cost <= 1.20, done.stdout  # past $1 by at most one turn of each run going
    assert done.stdout.startswith("ralph: MAX_COST: the money budget ($1) is spent: $0.05 by the runs ended")
    assert "was stopped with the other runs going, their work set aside" in done.stdout
    assert_clean(project)
    assert not (project / "work").exists()  # nothing of the stopped builds was merged
    log = git(project, "log", "--format=%s")
    assert "ralph(build)" not in log
    aside = [e for e in events(project) if e.get("event") == "build_not_merged"]
    assert sorted(e["item"] for e in aside) == sorted(tasks)


def test_a_run_streaming_past_max_tokens_is_stopped_mid_run_and_set_aside(project, tmp_path):
    (task,) = add_tasks(project, "A")
    runs = tmp_path / "runs.txt"
    done = construct(
        project,
        "--max-tokens", "5000", "--parallel", "1", "--gate", "",
        agent=streamer(tmp_path),
        env={"RUNS": str(runs), "TURN_TOKENS": "1000", "TURNS": "20", "HOLD_AFTER": "6"},
    )  # fmt: skip
    assert done.returncode == 13, done.stdout + done.stderr
    turns = [line for line in runs.read_text().splitlines() if line.startswith("turn")]
    assert 5 <= len(turns) < 20  # stopped at the sixth turn's tokens, not at the end
    assert done.stdout.startswith(
        "ralph: MAX_TOKENS: the token budget (5,000) is spent: 0 tokens by the runs ended and 6,000 by"
        f" the 1 running; BUILD {task} was stopped"
    )
    assert "tokens: 6,000" in done.stdout
    assert_clean(project)
    assert not (project / "work" / f"{task}.txt").exists()  # set aside: a patch beside a log
    aside = [e for e in events(project) if e.get("event") == "changes_set_aside"]
    assert [e["files"] for e in aside] == [[f"work/{task}.txt"]]
    assert "+ok" in (project / aside[0]["patch"]).read_text()
    assert next(r for r in plan_records(project) if r["t"] == "task")["id"] == task
    assert next(r for r in plan_records(project) if r["t"] == "state")["stage"] == "MAX_TOKENS"


# `make test` has it in process, in stages/test_retries.py:
# test_each_stage_runs_with_its_own_model_and_is_priced_by_it
@pytest.mark.slow
def test_each_stage_runs_with_its_own_model_and_is_priced_by_it(project, tmp_path):
    """--model is every stage's default; --stage-model gives BUILD a cheap model and VERIFY a
    strong one: the agent gets each as $RALPH_MODEL, and each run is priced by its own."""
    add_tasks(project, "A")
    runs = tmp_path / "runs.txt"
    done = construct(
        project,
        "--model", "claude-sonnet-4-5", "--stage-model", "BUILD=claude-haiku-4-5",
        "--stage-model", "verify=claude-opus-4-5", "--stage-model", "check=claude-opus-4-5",
        "--stage-model", "review=claude-haiku-4-5", "--review", "--gate", "",
        agent=streamer(tmp_path), env={"RUNS": str(runs), "TURNS": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    started = [line.split()[::2] for line in runs.read_text().splitlines() if not line.startswith("turn")]
    # The spec check before COMPLETE runs with its own (strong) model too, and the review's
    # aspects (in parallel, in any order) with theirs.
    assert started[:3] == [
        ["BUILD", "claude-haiku-4-5"],
        ["VERIFY", "claude-opus-4-5"],
        ["CHECK", "claude-opus-4-5"],
    ]
    assert started[3:] == [["REVIEW", "claude-haiku-4-5"]] * 5
    # 10,000 input tokens at haiku's $1 per million; VERIFY streamed nothing
    by_stage = (
        "by stage: BUILD (claude-haiku-4-5) 10,000 tokens, cost $0.01;"
        " VERIFY (claude-opus-4-5) 0 tokens, cost $0.00"
    )
    assert by_stage in done.stdout
    begun = [(e["stage"], e.get("model")) for e in events(project) if e["event"] == "agent_begin"]
    assert begun == [
        ("BUILD", "claude-haiku-4-5"),
        ("VERIFY", "claude-opus-4-5"),
        ("CHECK", "claude-opus-4-5"),
        *[("REVIEW", "claude-haiku-4-5")] * 5,
    ]


# --- a money budget that cannot be held --------------------------------------------------------


def test_max_cost_is_refused_up_front_where_ralph_can_tell_no_cost_will_be_known():
    """codex and gemini report no cost: every stage's model needs a known price, or a token budget
    beside; claude and opencode report theirs, and a command of yours may (judged per run)."""
    from ralph.agents.claude import ClaudeAdapter
    from ralph.agents.codex import CodexAdapter
    from ralph.agents.command import CommandAdapter
    from ralph.agents.gemini import GeminiAdapter
    from ralph.loop.preflight import budget_problem
    from ralph.usecases.settings import DEFAULTS

    def refusal(adapter, **settings) -> str | None:
        found = budget_problem(replace(DEFAULTS, spec="specs/app.md", max_cost_usd=2.0, **settings), adapter)
        return None if found is None else str(found)

    assert refusal(CodexAdapter(), model="no-such-model-7") == (
        "--max-cost cannot be held: codex reports no cost and ralph knows no price for model"
        " no-such-model-7; give its price (per million tokens): ralph config set prices"
        ' \'{"no-such-model-7": {"input": USD, "output": USD}}\', or bound the run with --max-tokens'
    )
    assert refusal(GeminiAdapter()) == (
        "--max-cost cannot be held: gemini reports no cost and ralph knows no price for the CLI's"
        " default model (none named); name a model ralph knows the price of (--model, --stage-model),"
        " or bound the run with --max-tokens"
    )
    mixed = refusal(GeminiAdapter(), model="gemini-2.5-flash", stage_models={"VERIFY": ("no-such-model-7",)})
    assert mixed is not None and "no price for model no-such-model-7 (VERIFY);" in mixed
    assert refusal(GeminiAdapter(), model="gemini-2.5-flash") is None  # a price is known
    mine = {"no-such-model-7": {"input": 1.0, "output": 2.0}}
    assert refusal(CodexAdapter(), model="no-such-model-7", prices=mine) is None  # the config gives it
    assert refusal(CodexAdapter(), model="no-such-model-7", max_tokens=100_000) is None  # tokens bound it
    assert refusal(ClaudeAdapter(), model="no-such-model-7") is None  # it reports its cost
    assert refusal(CommandAdapter(["agent"]), model="no-such-model-7") is None  # unknowable: per run
    assert budget_problem(replace(DEFAULTS, spec="x", model="no-such-model-7"), CodexAdapter()) is None


def test_a_max_cost_that_cannot_hold_refuses_to_start_with_one_line(project, tmp_path):
    """The real run: one line on stderr, exit 1, nothing committed, no agent started; --dry-run
    lists the same line among the reasons the run would not start."""
    started = tmp_path / "started"
    program = tmp_path / "codex"
    program.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(started))}\n")
    program.chmod(0o755)
    add_tasks(project, "A")
    head = git(project, "rev-parse", "HEAD")
    argv = ["-C", str(project), "construct", "specs/app.md", "--agent", "codex", "--agent-cmd", str(program)]
    argv += ["--model", "no-such-model-7", "--max-cost", "2", "--gate", ""]
    done = in_process(argv, dict(os.environ))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("ralph: --max-cost cannot be held: codex reports no cost and ralph knows no price")
    assert "model no-such-model-7" in line and line.endswith("or bound the run with --max-tokens")
    assert git(project, "rev-parse", "HEAD") == head and not started.exists()
    dry = in_process([*argv, "--dry-run"], dict(os.environ))
    assert dry.returncode == 1 and line in dry.stderr.splitlines()
    bounded = in_process([*argv, "--dry-run", "--max-tokens", "100000"], dict(os.environ))
    assert bounded.returncode == 0, bounded.stderr


@pytest.mark.slow
def test_a_cost_unknown_mid_run_stops_new_runs_and_ends_max_cost_committed(project, tmp_path):
    """A command agent that reports tokens and no cost, for no model ralph knows: the first run's
    cost is unknown, so no further run starts (it ran 18 runs to COMPLETE under --max-cost 2). With
    a token budget too, the tokens bound the run and it completes."""
    tasks = add_tasks(project, "A", "B")
    agent, runs = tmp_path / "agent.py", tmp_path / "runs.txt"
    agent.write_text(AGENT.replace('"total_cost_usd": 0.4, ', ""))
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    env = {"RUNS": str(runs)}
    done = construct(project, "--max-cost", "2", "--gate", "", "--json", agent=command, env=env)
    assert done.returncode == 10, done.stdout + done.stderr
    (run,) = runs.read_text().splitlines()  # two builds ready side by side: one ran, alone
    first = run.split()[1]
    assert run == f"BUILD {first}" and first in tasks
    report = json.loads(done.stdout)
    assert (report["outcome"], report["ending"], report["cost_usd"]) == ("MAX_COST", "cost_unknown", None)
    assert report["message"].startswith(
        f"the money budget ($2) cannot be held: the cost of BUILD {first} is unknown (no cost reported,"
        " no price known for the agent CLI's default model), so no further run starts"
    )
    assert report["message"] in done.stderr  # said on the console as it happened
    assert [e["item"] for e in events(project) if e["event"] == "cost_unknown"] == [first]
    assert next(r for r in plan_records(project) if r["t"] == "state")["stage"] == "MAX_COST"
    assert_clean(project)

    bounded = construct(
        project, "--max-cost", "2", "--max-tokens", "1000000", "--gate", "", agent=command, env=env
    )
    assert bounded.returncode == 0, bounded.stdout + bounded.stderr


@pytest.mark.slow
def test_a_task_s_builds_after_a_failure_escalate_to_the_next_model_shown_and_recorded(project):
    """--stage-model BUILD=cheap,strong: a task's first build runs with the cheap model and, after
    it failed its gate, the next with the strong one; the console line of each attempt, the
    report and the task's record say which. VERIFY, given no model, runs with the CLI's default."""
    (task_id,) = add_tasks(project, "Flaky [gate-fails-once]")

    done = construct(project, "--stage-model", "BUILD=claude-haiku-4-5,claude-sonnet-4-5")

    assert done.returncode == 0, done.stdout + done.stderr
    begun = [(e["stage"], e.get("model")) for e in events(project) if e["event"] == "agent_begin"]
    assert begun[:3] == [
        ("BUILD", "claude-haiku-4-5"),
        ("BUILD", "claude-sonnet-4-5"),
        ("VERIFY", None),
    ]
    assert (
        f"BUILD {task_id} (Flaky [gate-fails-once]): agent started with claude-haiku-4-5, log" in done.stderr
    )
    assert (
        f"BUILD {task_id} (Flaky [gate-fails-once]): agent started with claude-sonnet-4-5, log" in done.stderr
    )
    assert f"BUILD {task_id}: attempt 1 with claude-haiku-4-5 failed (gate failed)" in done.stderr
    assert f"  {task_id} attempt 1 with claude-haiku-4-5: gate failed: " in done.stdout
    assert "by stage: BUILD (claude-haiku-4-5, claude-sonnet-4-5) " in done.stdout
    failed = git(project, "log", "--format=%H", "-1", f"--grep=^ralph(build): {task_id} attempt 1 failed")
    built = git(project, "log", "--format=%H", "-1", f"--grep=^ralph(build): {task_id} Flaky")
    models = [
        next(r.get("model") for r in plan_records(project, commit.strip()) if r.get("id") == task_id)
        for commit in (failed, built)
    ]
    assert models == ["claude-haiku-4-5", "claude-sonnet-4-5"]
    story = in_process(["-C", str(project), "log", "--task", task_id], dict(os.environ)).stdout
    assert "  attempt 1 with claude-haiku-4-5: gate failed" in story
    assert "  attempt 2 with claude-sonnet-4-5: passed the gate" in story


def test_max_cost_refuses_a_later_step_of_an_escalation_with_no_known_price():
    """Every model an escalation may reach is priced before the run starts, not only its first."""
    from ralph.agents.codex import CodexAdapter
    from ralph.loop.preflight import budget_problem
    from ralph.usecases.settings import DEFAULTS

    prices = {"cheap-model-1": {"input": 1.0, "output": 2.0}}
    stage_models: dict[str, tuple[str, ...]] = {"BUILD": ("cheap-model-1", "no-such-model-9")}
    settings = replace(
        DEFAULTS,
        spec="specs/app.md",
        max_cost_usd=2.0,
        model="cheap-model-1",
        prices=prices,
        stage_models=stage_models,
    )
    refused = budget_problem(settings, CodexAdapter())
    assert refused is not None and "no-such-model-9 (BUILD step 2)" in str(refused), refused
    settings = replace(settings, stage_models={"BUILD": ("cheap-model-1",)})
    assert budget_problem(settings, CodexAdapter()) is None
