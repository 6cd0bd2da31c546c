"""A run that ends before its first iteration (its PLAN added nothing, or only questions are left)
is still a run: its report goes to stdout with the command that resumes it. Only a run refused
before it began is one line on stderr."""

from __future__ import annotations

from tests.support.construct import construct, events


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


def test_a_run_left_with_only_questions_lists_them_on_stdout(project):
    from ralph.ops import questions, tasks

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
