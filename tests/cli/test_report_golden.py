"""Golden files for the final report of `ralph construct` when a run does not complete: what a
person reads first. The reports are made from fixed values (a real run's logs and times vary);
tests/loop covers that real runs fill them in. Regenerate with `pytest --update-goldens`."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

import click
import pytest
from click.testing import CliRunner

from ralph.cli.run_text import print_report
from ralph.loop.construct import Outcome, Report
from ralph.loop.observe.report_data import Spent

REPORTS = Path(__file__).parent / "golden" / "reports"
RESUME = "ralph construct specs/app.md --agent command --agent-cmd 'python agent.py' --max-cost 5"


class Spending(TypedDict):
    """Report's fields of what the runs spent, typed as Report declares them."""

    cost_usd: float | None
    unknown_cost_runs: int
    by_stage: dict[str, Spent]
    by_task: dict[str, Spent]


SPENT: Spending = {
    "cost_usd": 1.25,
    "unknown_cost_runs": 1,
    "by_stage": {
        "BUILD": Spent(runs=3, tokens=30000, cost_usd=1.0, unknown_runs=0),
        "VERIFY": Spent(runs=2, tokens=9000, cost_usd=0.25, unknown_runs=1),
    },
    "by_task": {"t-other0": Spent(runs=2, tokens=21000, cost_usd=0.75, unknown_runs=1)},
}
CASES = {
    "waiting": Report(
        Outcome.WAITING,
        'what is left waits for 1 answer: answer each question with `ralph answer ID "text"`,'
        " then run `ralph construct` again",
        7,
        iterations=2,
        accepted=["t-other0 Other work"],
        remaining=[
            "t-colour blocked: Colour (waiting for the answer to question i-qqqqqq: Blue or green?)",
            "t-after0 pending: After the colour",
        ],
        tokens=39000,
        questions=[
            "i-qqqqqq on t-colour: Blue or green? (asked 2026-11-23T13:00:00+00:00 by BUILD agent,"
            " iteration 1, log build/ralph-logs/ralph-20261123-130000-build-t-colour.log)"
        ],
        resume=RESUME,
        began=True,
        **SPENT,
    ),
    "stuck": Report(
        Outcome.STUCK,
        "what is left is blocked: a person must decide (see below)",
        5,
        iterations=4,
        remaining=["t-toobig blocked: Too big (decomposed 3 times and still failing (timeout))"],
        tokens=39000,
        stopped=["t-toobig BUILD killed (timeout), set aside for DECOMPOSE; log build/ralph-logs/b.log"],
        failed=[
            "t-toobig attempt 1: gate failed: `make verify` exited 2: E AssertionError: assert 0 == 4",
            "t-toobig attempt 2: no changes: the agent marked the task done but changed no file.",
            "t-other0 rejected by VERIFY: the report\x1b[2J has no total line",
        ],
        resume=RESUME,
        began=True,
        **SPENT,
    ),
    # No run's cost known (a CLI that reports none, a model with no price): the total says why
    # once, the rows say only "unknown".
    "tokens_unpriced": Report(
        Outcome.MAX_TOKENS,
        "the next run would pass the token budget (--max-tokens 40,000): 39,000 spent",
        13,
        iterations=2,
        accepted=["t-other0 Other work"],
        remaining=["t-after0 pending: After the colour"],
        tokens=39000,
        resume=RESUME,
        began=True,
        cost_usd=None,
        unknown_cost_runs=5,
        by_stage={
            "BUILD": Spent(runs=3, tokens=30000, cost_usd=None, unknown_runs=3),
            "VERIFY": Spent(runs=2, tokens=9000, cost_usd=None, unknown_runs=2),
        },
        by_task={"t-other0": Spent(runs=2, tokens=21000, cost_usd=None, unknown_runs=2)},
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_report_when_a_run_does_not_complete(name: str, request: pytest.FixtureRequest):
    @click.command()
    def show():
        print_report(CASES[name], as_json=False)

    printed = CliRunner().invoke(show, []).stdout
    golden = REPORTS / f"{name}.txt"
    if request.config.getoption("--update-goldens"):
        golden.write_text(printed, encoding="utf-8")
    assert printed == golden.read_text(encoding="utf-8")
