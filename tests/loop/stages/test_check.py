"""The spec check before COMPLETE (ralph/loop/stages/check.py), PLAN for a spec never planned, and
new work bounded per run (ralph/plan/new_work.py), end to end with the scripted fake agent."""

from __future__ import annotations

import json

import pytest

from ralph.usecases import issues
from tests.support.construct import (
    add_tasks,
    assert_clean,
    construct,
    events,
    plan_records,
    subjects,
    with_app_spec,
)
from tests.support.gitrepo import git


def _runs(root, stage: str) -> list[dict]:
    return [e for e in events(root) if e["event"] == "agent_end" and e["stage"] == stage]


def _spec_record(root) -> dict:
    return next(r for r in plan_records(root) if r["t"] == "spec")


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_a_spec_never_planned_is_planned_first_whatever_issues_the_plan_holds
@pytest.mark.slow
def test_a_spec_never_planned_is_planned_whatever_issues_the_plan_holds(repo):
    requirements = ["Parse input", "Validate input", "Compute result", "Format output", "Print report", "Log"]
    project = with_app_spec(repo, "# App\n\n" + "".join(f"- {name}\n" for name in requirements))
    issues.add(project, "Crash on empty input")  # before any PLAN: it used to count as planned work

    done = construct(project)

    assert done.returncode == 0, done.stdout + done.stderr
    assert any(s.startswith("ralph(plan): specs/app.md: 6 tasks") for s in subjects(project))
    accepted = {r["name"] for r in plan_records(project) if r["t"] == "accept"}
    assert set(requirements) <= accepted and len(accepted) == 7  # and the issue's task
    assert _spec_record(project)["planned"] is True
    assert_clean(project)


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_a_check_that_finds_a_gap_adds_a_task_and_builds_it_before_complete
@pytest.mark.slow
def test_a_check_that_finds_a_gap_adds_a_task_and_builds_it_before_complete(repo):
    project = with_app_spec(repo, "# App\n\n- Parse input\n- Print report [missing]\n")

    done = construct(project, "--json")

    assert done.returncode == 0, done.stdout + done.stderr
    log = list(reversed(subjects(project)))
    first_check = next(i for i, s in enumerate(log) if s.startswith("ralph(check): specs/app.md: added t-"))
    added = log[first_check].split("added ", 1)[1]
    built = next(i for i, s in enumerate(log) if s == f"ralph(build): {added} Print report")
    met = log.index("ralph(check): specs/app.md: nothing missing")
    assert first_check < built < met, log
    assert sorted(r["name"] for r in plan_records(project) if r["t"] == "accept") == [
        "Parse input",
        "Print report",
    ]
    assert len(_runs(project, "CHECK")) == 2
    assert json.loads(done.stdout)["outcome"] == "COMPLETE"


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_a_check_that_adds_nothing_ends_complete_and_a_rerun_checks_again_only_for_a_new_spec
# (a real CHECK run that finds nothing ends every other construct run of `make test` that completes)
@pytest.mark.slow
def test_a_check_that_adds_nothing_ends_complete_after_one_run_and_a_rerun_does_not_check_again(repo):
    project = with_app_spec(repo, "# App\n\n- Parse input\n")  # one task to build before the check
    done = construct(project)

    assert done.returncode == 0, done.stdout + done.stderr
    assert len(_runs(project, "CHECK")) == 1
    spec = _spec_record(project)
    checked = spec["checked_commit"]
    assert git(project, "rev-parse", f"{checked}^{{commit}}").strip() == checked
    assert len(spec["checked_spec"]) == 64  # the spec's SHA-256
    assert "ralph(check): specs/app.md: nothing missing" in subjects(project)

    again = construct(project)

    assert again.returncode == 0, again.stdout + again.stderr
    assert "COMPLETE" in again.stdout
    assert len(_runs(project, "CHECK")) == 1  # the journal holds both runs: no second check
    assert [e["event"] for e in events(project)].count("check_skipped") == 1

    # A spec that changed is checked again, though the code did not change.
    (project / "specs" / "app.md").write_text((project / "specs" / "app.md").read_text() + "\nMore words.\n")
    git(project, "commit", "-qam", "the spec says more")
    third = construct(project)
    assert third.returncode == 0, third.stdout + third.stderr
    assert len(_runs(project, "CHECK")) == 2


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_a_stopped_check_is_counted_and_ends_stuck
@pytest.mark.slow
def test_a_stopped_check_is_counted_and_ends_stuck(repo):
    project = with_app_spec(repo, "# App\n\n- Parse input\n\n[check-hang]\n")

    done = construct(project, "--timeout", "3s", "--json")

    assert done.returncode == 5, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["outcome"] == "STUCK" and report["ending"] == "check_stopped"
    assert any("CHECK stopped (timeout)" in line for line in report["stopped"])
    spec = _spec_record(project)
    assert spec["check_kills"] == 1 and spec["check_kill_reason"] == "timeout"
    assert "checked_commit" not in spec
    assert_clean(project)


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_a_check_whose_agent_fails_is_no_pass_and_keeps_nothing (the JSON report's keys and
# shapes for every outcome: tests/loop/test_report_json.py)
@pytest.mark.slow
def test_a_check_whose_agent_fails_is_no_pass_and_keeps_nothing(repo):
    project = with_app_spec(repo, "# App\n\n- Parse input\n\n[check-crash]\n")

    done = construct(project, "--json")

    assert done.returncode == 5, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["outcome"] == "STUCK" and report["ending"] == "check_failed"
    assert any("CHECK failed: the agent ended (exit 3)" in line for line in report["failed"])
    assert not [r for r in plan_records(project) if r["t"] == "task"]  # its half a finding is not kept
    assert "checked_commit" not in _spec_record(project)
    assert_clean(project)


# `make test` has it in process, in test_stages_in_process.py:
# test_a_verifier_adding_30_tasks_leaves_5_and_one_issue_naming_the_rest
@pytest.mark.slow
def test_a_verifier_adding_30_tasks_leaves_5_and_one_issue_naming_the_rest(project):
    # Two is verified after One (VERIFY takes its verifiers in plan order): One's duplicate of it is seen.
    one, two = add_tasks(project, "One [verify-adds-30]", "Two", chain=True)

    done = construct(project, "--max-iterations", "1")

    assert done.returncode == 3, done.stdout + done.stderr  # the iteration budget: the gaps wait
    verify = next(s for s in subjects(project) if s.startswith("ralph(verify): accepted"))
    records = plan_records(project, "HEAD")
    new = [r for r in records if r["t"] == "task" and r["id"] not in (one, two)]
    assert [r["name"] for r in new] == ["Gap 1", "Gap 2", "Gap 3", "Gap 4", "Gap 5"]
    (cut,) = [r for r in records if r["t"] == "issue"]
    assert cut["keep_open"]
    text = cut["text"]
    assert all(f"Gap {n}" in text for n in range(6, 31)) and "Gap 5" not in text
    assert f"(duplicate of {two}): TWO" in text and "GAP 1" in text
    # The subject names what was added, not only the verdicts.
    assert (
        verify
        == f"ralph(verify): accepted {one}, {two}; added {', '.join(r['id'] for r in new)}, {cut['id']}"
    )
    assert_clean(project)


@pytest.mark.slow
def test_investigate_keeps_an_out_of_scope_reason_in_its_commit_the_plan_and_the_report(project):
    add_tasks(project, "Parse input")
    issue = issues.add(project, "Dark mode [out-of-scope]")

    done = construct(project, "--json")

    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["resolved"] == [
        {
            "id": issue["id"],
            "text": "Dark mode [out-of-scope]",
            "note": "out of scope: the spec does not ask for it",
        }
    ]
    body = git(project, "log", "-1", "--format=%B", f"--grep=^ralph(investigate): {issue['id']}")
    assert "resolved: out of scope: the spec does not ask for it" in body
    assert [r["note"] for r in plan_records(project) if r["t"] == "resolve"] == [
        "out of scope: the spec does not ask for it"
    ]
    text = construct(project).stdout  # a rerun resolves nothing: its report lists none
    assert "issues resolved" not in text


@pytest.mark.slow
def test_progress_counts_the_tasks_a_stage_adds_as_it_goes(project):
    """INVESTIGATE turns an issue into a task mid-iteration: the progress shown from then on counts
    it, and never shows more accepted than there are tasks."""
    add_tasks(project, "Parse input")
    issues.add(project, "The report is wrong")

    done = construct(project)

    assert done.returncode == 0, done.stdout + done.stderr
    shown = [(e["accepted"], e["total"]) for e in events(project) if e["event"] == "progress"]
    assert all(accepted <= total for accepted, total in shown), shown
    assert (0, 2) in shown and shown[-1] == (2, 2), shown
