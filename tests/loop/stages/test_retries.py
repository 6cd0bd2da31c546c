"""A stage's agent runs (ralph.loop.stages.retries.AgentRuns) in this process, over the real
AgentRunner and a supervisor that plays scripted runs (tests/support/scripted_runs.py): a rate
limit waited out and the run started again, a run stopped at the context's compact tier continued
in a fresh one, the context warning once per run, and each stage's model. The repository and its
git are real; no agent process starts, and no test sleeps (the waits' clock is faked).

What AgentRuns checks after a run (a removed worktree, a deleted or replaced plan, a permission
violation undone) is tested through the loop in tests/loop/test_odd_moves.py; a run retried when
it failed without doing anything, in test_agent_errors.py."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from ralph.loop.observe.journal import read_events
from ralph.loop.process.hooks import Hooks
from ralph.loop.process.supervisor import Supervisor
from ralph.loop.runs import rate_limits
from ralph.loop.runs.agent_process import LOG_DIR
from ralph.loop.runs.compaction import MAX_COMPACTIONS
from ralph.plan.records import Stage, StopReason
from ralph.text import SCHEMA_VERSION
from ralph.usecases.settings import Settings
from tests.support.construct import add_tasks
from tests.support.hooks import APPEND
from tests.support.reports import assert_costs_unknown
from tests.support.scripted_runs import FakeClock, Reply, Runs, failed, scripted_runs, turn

SPEC = "specs/app.md"  # the command agent's context window is 200,000: warn at 70%, compact at 85%


def events(runs: Runs, kind: str) -> list[dict]:
    return [e for e in read_events(runs.journal.path) if e["event"] == kind]


def test_a_rate_limit_is_waited_out_and_the_run_again_is_not_an_attempt(project, monkeypatch):
    (task_id,) = add_tasks(project, "One")
    clock = FakeClock()
    monkeypatch.setattr(rate_limits, "time", clock)  # the wait, without waiting
    message = 'API Error: 429 {"type":"error","error":{"type":"rate_limit_error"}} Please retry after 1s'
    limited = Reply([failed(429, message)], exit_code=1)
    runs = scripted_runs(project, Settings.resolve(SPEC, {}, {}), {"BUILD": [limited, Reply([turn(1000)])]})

    result = runs.workspace.agents.run_agent(Stage.BUILD, 1, task_id, {})

    (wait,) = events(runs, "limit_wait")
    assert wait["kind"] == "rate_limit" and wait["stage"] == "BUILD" and wait["item"] == task_id
    assert 1 <= wait["seconds"] <= 1.1 and clock.slept == pytest.approx(wait["seconds"], abs=0.001)
    assert f"BUILD {task_id}: waiting for the rate limit until " in runs.console.getvalue()
    # Then the same run again; the stage sees only that one, which ended well: no attempt spent.
    first, again = runs.supervisor.started
    assert (first.stage, again.stage) == ("BUILD", "BUILD") and again.env["RALPH_TASK_ID"] == task_id
    assert result.ok and project / result.log_path == again.log
    assert not events(runs, "agent_failed")


def test_a_rate_limit_wait_reaches_the_limit_wait_hook_as_versioned_json(project, tmp_path, monkeypatch):
    """The hooks on the runs' journal (as the loop has them), a real Supervisor: the wait for a
    rate limit reaches a limit_wait hook as one JSON object on its stdin, with its kind and stage."""
    (task_id,) = add_tasks(project, "One")
    monkeypatch.setattr(rate_limits, "time", FakeClock())  # the wait, without waiting
    received = tmp_path / "events.jsonl"  # beside the work tree, not in it
    hook = [sys.executable, "-c", APPEND, str(received)]
    settings = replace(Settings.resolve(SPEC, {}, {}), hooks={"limit_wait": hook}, hook_timeout_s=60)
    limited = Reply([failed(429, "API Error: 429 rate_limit_error. Please retry after 1s")], exit_code=1)
    runs = scripted_runs(project, settings, {"BUILD": [limited, Reply([turn(1000)])]})
    hooks = Hooks(project, settings, Supervisor(), runs.journal, LOG_DIR)
    runs.journal.listener = hooks.notify

    assert runs.workspace.agents.run_agent(Stage.BUILD, 1, task_id, {}).ok
    hooks.close()

    (got,) = [json.loads(line) for line in received.read_text().splitlines()]
    assert got["event"] == "limit_wait" and got["schema_version"] == SCHEMA_VERSION
    assert (got["kind"], got["stage"], got["item"]) == ("rate_limit", "BUILD", task_id)
    assert [e["hook"] for e in events(runs, "hook_ran")] == ["limit_wait"]


def test_a_run_stopped_to_compact_goes_on_in_a_fresh_run_told_its_context(project):
    (task_id,) = add_tasks(project, "Big")

    def works(root: Path) -> None:
        (root / "work").mkdir()
        (root / "work" / f"{task_id}.txt").write_text("half")

    # 50%, 75% (a warning), 87.5% (compact: stopped, the last turn never read); then 10%.
    grows = Reply([turn(100_000), turn(150_000), turn(175_000), turn(190_000)], act=works)
    runs = scripted_runs(project, Settings.resolve(SPEC, {}, {}), {"BUILD": [grows, Reply([turn(20_000)])]})

    result = runs.workspace.agents.run_agent(Stage.BUILD, 1, task_id, {"task_details": "Criteria: ok"})

    stopped, continued = runs.supervisor.started
    (warn,) = events(runs, "context_warn")
    assert warn["fill"] == pytest.approx(0.75)
    assert "[RALPH] Context pressure: 75% - consider wrapping up" in stopped.log.read_text()
    (compact,) = events(runs, "context_compact")
    assert compact["stage"] == "BUILD" and compact["item"] == task_id
    assert compact["fill_before"] == pytest.approx(0.875) and project / compact["log"] == stopped.log
    assert turn(190_000) not in stopped.log.read_text()  # stopped at the compact tier
    assert continued.prompt.startswith(f"=== COMPACTED CONTEXT ===\nTask: BUILD {task_id} Big\n")
    block = continued.prompt.split("=== END COMPACTED ===")[0]
    for part in ("Progress:", "Current state:", "Key files:", "Blockers:", "Next step:"):
        assert f"\n{part}" in block, part  # the construct spec's form
    assert f"\nKey files: work/{task_id}.txt\n" in block  # what the stopped run left changed
    (after,) = events(runs, "context_after_compaction")
    assert after["fill"] == pytest.approx(0.10)
    assert "[RALPH] Context compacted: 88% -> 10%" in continued.log.read_text()
    # The stage gets the continuation's result: a run that ended by itself, to judge as any other.
    assert result.ok and result.run.stop_reason is None and project / result.log_path == continued.log


def test_a_run_compacted_again_and_again_ends_at_the_context_limit(project):
    (task_id,) = add_tasks(project, "Endless")
    again = [Reply([turn(20_000), turn(175_000)]) for _ in range(MAX_COMPACTIONS)]
    runs = scripted_runs(project, Settings.resolve(SPEC, {}, {}), {"BUILD": [Reply([turn(175_000)]), *again]})

    result = runs.workspace.agents.run_agent(Stage.BUILD, 1, task_id, {})

    assert len(runs.supervisor.started) == MAX_COMPACTIONS + 1  # no run after the last compaction
    assert len(events(runs, "context_compact")) == MAX_COMPACTIONS
    assert result.run.stop_reason is StopReason.CONTEXT_LIMIT  # the stage kills the task for it


def test_the_context_warning_is_given_once_per_run(project):
    (task_id,) = add_tasks(project, "Warm")
    warm = [turn(145_000), turn(150_000), turn(155_000), turn(160_000)]  # 72.5% to 80%: warn, not compact
    runs = scripted_runs(project, Settings.resolve(SPEC, {}, {}), {"BUILD": [Reply(warm), Reply(warm)]})

    for iteration in (1, 2):
        assert runs.workspace.agents.run_agent(Stage.BUILD, iteration, task_id, {}).ok

    warns = events(runs, "context_warn")
    assert [(w["item"], w["iteration"]) for w in warns] == [(task_id, 1), (task_id, 2)]  # one a run
    assert all(w["fill"] == pytest.approx(0.725) for w in warns)
    for started in runs.supervisor.started:
        assert started.log.read_text().count("[RALPH] Context pressure") == 1
    assert not events(runs, "context_compact")


def test_each_stage_runs_with_its_own_model_and_is_priced_by_it(project, capsys):
    """--model is every stage's default; --stage-model gives BUILD a cheap model and VERIFY a
    strong one: the agent gets each as $RALPH_MODEL, and each run is priced by its own."""
    from ralph.cli.run_text import print_report
    from ralph.loop.construct import Outcome, Report, _spending

    (task_id,) = add_tasks(project, "A")
    cheap, strong = ("claude-haiku-4-5",), ("claude-opus-4-5",)
    models = {"BUILD": cheap, "VERIFY": strong, "CHECK": strong, "REVIEW": cheap}
    settings = Settings.resolve(SPEC, {}, {"model": "claude-sonnet-4-5", "stage_models": models})
    # Each its own price, as the config's `prices` gives it: the library's data (the same figures)
    # takes 0.2 s to load, and which price is the library's is test_cost.py's.
    prices = {"claude-haiku-4-5": (1, 5), "claude-sonnet-4-5": (3, 15), "claude-opus-4-5": (5, 25)}
    per_million = {model: {"input": float(i), "output": float(o)} for model, (i, o) in prices.items()}
    settings = replace(settings, prices=per_million)
    stages = [Stage.BUILD, Stage.VERIFY, Stage.CHECK, Stage.REVIEW, Stage.PLAN]
    replies = {str(stage): [Reply()] for stage in stages}
    replies["BUILD"] = [Reply([turn(10_000)])]  # VERIFY and the others stream nothing
    runs = scripted_runs(project, settings, replies)

    for stage in stages:
        item = {Stage.BUILD: task_id, Stage.VERIFY: task_id, Stage.REVIEW: "correctness"}.get(stage)
        assert runs.workspace.agents.run_agent(stage, 1, item, {}).ok

    expected = [
        ("BUILD", "claude-haiku-4-5"),
        ("VERIFY", "claude-opus-4-5"),
        ("CHECK", "claude-opus-4-5"),
        ("REVIEW", "claude-haiku-4-5"),
        ("PLAN", "claude-sonnet-4-5"),  # no model of its own: --model's
    ]
    assert [(started.stage, started.model) for started in runs.supervisor.started] == expected
    assert [(e["stage"], e["model"]) for e in events(runs, "agent_begin")] == expected
    assert f"BUILD {task_id} (A): agent started with claude-haiku-4-5, log " in runs.console.getvalue()
    # 10,000 input tokens at haiku's $1 per million; VERIFY's none at opus's price is a known $0.
    capsys.readouterr()
    print_report(Report(Outcome.COMPLETE, "done", 0, **_spending(runs.workspace.agents.spending)), False)
    printed = capsys.readouterr().out
    assert (
        "by stage: BUILD (claude-haiku-4-5) 10,000 tokens, cost $0.01;"
        " VERIFY (claude-opus-4-5) 0 tokens, cost $0.00;"
        " CHECK (claude-opus-4-5) 0 tokens, cost $0.00;"
        " REVIEW (claude-haiku-4-5) 0 tokens, cost $0.00;"
        " PLAN (claude-sonnet-4-5) 0 tokens, cost $0.00\n"
    ) in printed
    # "by task" names tasks: the review's aspect (its run's item) counts in REVIEW's row alone.
    assert f"by task: {task_id} 10,000 tokens, cost $0.01\n" in printed


def test_runs_of_no_known_price_make_the_json_reports_cost_null_not_zero(project, capsys):
    """The command agent reports tokens and no cost, and runs with no model ralph knows a price
    of: each stage's cost, the task's and the run's are unknown, which --json says as null, never
    as $0 spent, and each run counts as one of unknown cost. (One run a stage: the loop's count
    of runs, five aspects' reviews among them, is test_stages_in_process.py's.)"""
    from ralph.cli.run_text import print_report
    from ralph.loop.construct import Outcome, Report, _spending

    (task_id,) = add_tasks(project, "Fine")
    stages = [
        (Stage.BUILD, task_id),
        (Stage.VERIFY, task_id),
        (Stage.CHECK, None),
        (Stage.REVIEW, "goal"),
    ]
    replies = {str(stage): [Reply([turn(1000)])] for stage, _ in stages}
    runs = scripted_runs(project, Settings.resolve(SPEC, {}, {}), replies)

    for stage, item in stages:
        assert runs.workspace.agents.run_agent(stage, 1, item, {}).ok

    agents = runs.workspace.agents
    capsys.readouterr()
    print_report(
        Report(Outcome.COMPLETE, "done", 0, tokens=agents.tokens, **_spending(agents.spending)), True
    )
    assert_costs_unknown(json.loads(capsys.readouterr().out), len(stages), task_id)
