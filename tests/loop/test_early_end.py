"""A run that ends before its first iteration (its PLAN added nothing, or only questions are left)
is still a run: its report goes to stdout with the command that resumes it. Only a run refused
before it began is one line on stderr."""

from __future__ import annotations

import sys

from tests.support.construct import construct, events

# A planner that also changes ralph's config, which no agent may: every PLAN run of it is undone.
CONFIG_SETTER = """import json, os, sys
sys.path.insert(0, os.environ["AGENT_KIT_DIR"])
from agent_kit import ralph
if os.environ["RALPH_STAGE"] == "PLAN":
    ralph("task", "add", "--json", json.dumps({"name": "Parse input", "accept": "ok"}))
    ralph("config", "set", "max_attempts", "9")
"""


def test_a_run_whose_plan_adds_nothing_reports_on_stdout(project):
    done = construct(project, agent="true")
    assert done.returncode == 5, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "ralph: STUCK: the PLAN stage added no tasks; see its log"
    assert lines[1].startswith("iterations run: 0; tokens: 0; cost: ")
    assert lines[-2].startswith("logs: build/ralph-logs/")
    assert lines[-1].startswith("to resume: ralph construct specs/app.md --agent command --agent-cmd true")
    assert "ralph: STUCK" not in done.stderr
    assert events(project)[-1]["ending"] == "plan_empty"


def test_a_run_whose_every_plan_run_breaks_the_rules_runs_it_max_attempts_times_and_says_so(
    project, tmp_path
):
    agent = tmp_path / "planner.py"
    agent.write_text(CONFIG_SETTER)
    done = construct(project, agent=f"{sys.executable} {agent}")
    assert done.returncode == 5, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "ralph: STUCK: the PLAN stage added no tasks: its runs broke the stage's rules (below)"
    did = "permission violation, undone: changed ralph's config in PLAN: max_attempts; log"
    failures = [line.split(": ", 1)[1] for line in lines if line.startswith("  specs/app.md PLAN run ")]
    assert [line.rsplit(" ", 1)[0] for line in failures] == [did] * 3  # the report's, each with its log
    assert [e["run"] for e in events(project) if e["event"] == "plan_again"] == [2, 3]
    assert events(project)[-1]["ending"] == "plan_failed"


def test_a_run_left_with_only_questions_lists_them_on_stdout(project):
    from ralph.usecases import questions, tasks

    task = tasks.add(project, [{"name": "Pick a database", "accept": "ok"}])[0]["id"]
    asked = questions.ask(project, "SQLite or Postgres?", task, "a person")["id"]
    done = construct(project, agent="true")
    assert done.returncode == 9, done.stdout + done.stderr
    assert done.stdout.startswith("ralph: WAITING: what is left waits for 1 answer:")
    assert f"  {asked} on {task}: SQLite or Postgres?" in done.stdout
    assert "to resume: answer the questions above, then ralph construct specs/app.md" in done.stdout
    assert "WAITING" not in done.stderr


def test_a_run_refused_before_it_began_is_one_line_on_stderr(project):
    done = construct(project, agent="/nonexistent/agent")
    assert (done.returncode, done.stdout) == (6, "")
    assert done.stderr.startswith("ralph: AGENT_UNAVAILABLE: ") and done.stderr.count("\n") == 1
