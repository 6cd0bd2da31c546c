"""Every failed attempt says why, where the person looks: a construct run whose gate is real
pytest, whose agent once changes nothing and once never marks its task done, and whose verifier
rejects once. The console, the final report, `ralph log` and the HTML report each say which
attempt failed and why (for the gate: pytest's failure, not its progress dots)."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from tests.support.construct import add_tasks, construct, in_process
from tests.support.gitrepo import git
from tests.support.specs import as_checked

# The gate: real pytest over the agent's work files, with some passing tests for its dots.
GATE_TESTS = """
import pathlib

import pytest

WORK = sorted(pathlib.Path("work").glob("*.txt"))


@pytest.mark.parametrize("path", WORK, ids=[path.stem for path in WORK])
def test_the_work_says_ok(path):
    said = path.read_text()
    assert said.startswith("ok"), said


@pytest.mark.parametrize("n", range(30))
def test_something_else(n):
    pass
"""


@pytest.fixture
def pytest_project(repo: Path) -> Path:
    (repo / "specs" / "app.md").write_text(as_checked("# App\n\n- Work\n"))
    (repo / "test_work.py").write_text(GATE_TESTS)
    # as a Python project has it: parallel builds each running the gate would otherwise each
    # commit their own __pycache__, and conflict
    with open(repo / ".gitignore", "a") as ignored:  # beside what `ralph init` put there
        ignored.write("__pycache__/\n")
    git(repo, "add", "specs/app.md", "test_work.py", ".gitignore")
    git(repo, "commit", "-qm", "the app spec and its pytest gate")
    return repo


@pytest.mark.slow
def test_each_failed_attempt_says_why_on_the_console_in_the_reports_and_the_log(pytest_project, tmp_path):
    root = pytest_project
    flaky, lazy, crashy, picky = add_tasks(
        root, "Flaky [gate-fails-once]", "Lazy [no-changes-once]", "Crashy [quit-once]", "Picky [reject-once]"
    )
    pytest_gate = f"{shlex.quote(sys.executable)} -m pytest -p no:cacheprovider -q -o addopts= test_work.py"
    # one build at a time: beside running builds a first failure waits for them, uncounted. The
    # gate's pytest loads none of this venv's plugins (hypothesis, xdist): 0.14 s a run, not 0.4 s.
    quick = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = construct(root, "--gate", pytest_gate, "--parallel", "1", env=quick)
    assert done.returncode == 0, done.stdout + done.stderr
    console, report = done.stderr, done.stdout

    # The console: pytest's failure itself, never its dots; each verdict with its reason.
    assert f"gate for {flaky}: FAILED" in console
    assert re.search(r"\| E +AssertionError: FAIL " + flaky, console), console
    assert f"| FAILED test_work.py::test_the_work_says_ok[{flaky}]" in console
    assert not re.search(r"\| [.F]{5,}", console)  # no progress line
    assert f"BUILD {flaky}: attempt 1 failed (gate failed)" in console
    assert f"BUILD {lazy}: attempt 1 failed (no changes): the agent marked the task done" in console
    assert f"BUILD {crashy}: attempt 1 failed (not marked done): the agent ended (exit 3)" in console
    assert f"VERIFY {picky}: rejected: the fake verifier rejects the first build" in console
    assert f"VERIFY {flaky}: accepted" in console
    assert "agent the agent" not in console

    # The final report: each failed attempt and rejection, with its verdict and why.
    assert "failed attempts and rejections (4):" in report
    failed = report.split("failed attempts and rejections (4):\n", 1)[1].splitlines()[:4]
    assert sorted(failed) == sorted(
        [
            f"  {flaky} attempt 1: gate failed: `{pytest_gate}` exited 1:"
            f" E AssertionError: FAIL {flaky} attempt 1",
            f"  {lazy} attempt 1: no changes: the agent marked the task done but changed no file."
            ' Build it; if it truly needs no change, the task must say so ("no_code": true).',
            f"  {crashy} attempt 1: not marked done: the agent ended (exit 3) without running"
            " `ralph task done`.",
            f"  {picky} rejected by VERIFY: the fake verifier rejects the first build",
        ]
    ), report

    # ralph log: each failed attempt labelled by its verdict; "gate failed" only where it did.
    log = in_process(["-C", str(root), "log", "--json"], dict(os.environ)).stdout
    verdicts = {
        event["id"]: event["verdict"]
        for event in map(json.loads, log.splitlines())
        if event["event"] == "attempt failed"
    }
    assert verdicts == {flaky: "gate_failed", lazy: "no_changes", crashy: "not_done"}
    story = in_process(["-C", str(root), "log", "--task", flaky], dict(os.environ)).stdout
    assert "  attempt 1: gate failed" in story and "  attempt 2: passed the gate" in story
    assert re.search(r"    \| E +AssertionError: FAIL " + flaky, story), story
    assert "attempts: 2, failed: 1 (gate failures: 1)" in story

    # The HTML report: the failures by verdict, and what every stage spent, VERIFY's too.
    page_path = tmp_path / "report.html"
    in_process(["-C", str(root), "report", "-o", str(page_path)], dict(os.environ))
    page = page_path.read_text()
    assert "8 build attempts, 3 failed (38%): " in page  # Picky was built again after its rejection
    assert all(words in page for words in ("gate failed 1", "no changes 1", "not marked done 1"))
    assert "VERIFY rejections: 1" in page
    # the fake agent reports no cost, for no model with a price: unknown, never $0
    assert "Spent in all:</b> 14,000 tokens, cost unknown, in 14 agent runs of every stage" in page
    assert '<th data-label="stage">all stages</th>' in page
