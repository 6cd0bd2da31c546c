"""An agent that fails without doing anything (it crashes at once, exits on a usage error) has not
failed its task: the run is retried after a short wait and spends no attempt; too many such runs
in a row end the loop with AGENT_FAILING (exit 12) and the agent's last error lines."""

from __future__ import annotations

from pathlib import Path

from tests.support.construct import add_tasks, assert_clean, construct, events, plan_records, subjects
from tests.support.hooks import config_set


def quick_retries(root: Path) -> None:
    config_set(root, "agent_retry_ms", "10ms")


def test_an_agent_that_crashes_three_times_then_works_spends_no_attempt(project):
    quick_retries(project)
    (task_id,) = add_tasks(project, "Fragile [crash-thrice]")
    done = construct(project)
    assert done.returncode == 0, done.stdout + done.stderr
    failed = [e for e in events(project) if e["event"] == "agent_failed"]
    assert [(e["item"], e["exit_code"], e["in_a_row"]) for e in failed] == [
        (task_id, 3, n) for n in (1, 2, 3)
    ]
    assert "the agent failed without doing anything (exit 3); running it again" in done.stderr
    assert not any("attempt" in subject and "failed" in subject for subject in subjects(project))
    assert any(r["t"] == "accept" and r["id"] == task_id for r in plan_records(project))
    build = next(s for s in subjects(project) if s.startswith(f"ralph(build): {task_id}"))
    assert build == f"ralph(build): {task_id} Fragile [crash-thrice]"
    # its one passing build is its only attempt; nothing was decomposed
    assert not any(e["event"] == "task_killed" for e in events(project))
    assert_clean(project)


def test_an_agent_that_always_crashes_ends_the_run_with_its_last_error_lines(project):
    quick_retries(project)
    config_set(project, "max_agent_failures", "4")
    ids = add_tasks(project, "Parse input [crash-always]", "Compute result [crash-always]")
    done = construct(project)
    assert done.returncode == 12, done.stdout + done.stderr
    report = done.stdout
    assert report.startswith("ralph: AGENT_FAILING: the agent failed 4 times in a row without doing anything")
    lines = report.split("the agent's last error lines:\n", 1)[1].splitlines()
    assert "  | fake agent: crashing" in lines
    error = next(line for line in lines if "bad flag --frobnicate" in line)
    assert "sk-fake0123456789abcdef" not in error and "[redacted]" in error  # redacted
    assert "\x1b" not in report and "\\x1b[2J" in error  # escaped for the terminal
    tasks = {r["id"]: r for r in plan_records(project) if r["t"] == "task"}
    assert sorted(tasks) == sorted(ids)  # nothing decomposed, nothing set aside
    assert all(task.get("attempts", 0) == 0 and not task.get("kill_reason") for task in tasks.values())
    assert len([e for e in events(project) if e["event"] == "agent_failed"]) == 4
    ended = [e for e in events(project) if e["event"] == "span_end" and e.get("span") == "construct"]
    assert not ended or ended[-1].get("outcome") == "AGENT_FAILING"
    assert_clean(project)


def test_a_crash_after_part_of_the_work_is_a_failed_attempt(project):
    quick_retries(project)
    (task_id,) = add_tasks(project, "Halfway [quit-once]")
    done = construct(project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"ralph(build): {task_id} attempt 1 failed" in subjects(project)
    assert not any(e["event"] == "agent_failed" for e in events(project))
