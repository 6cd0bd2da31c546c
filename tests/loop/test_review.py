"""The review by aspect before COMPLETE (ralph/loop/stages/review.py), with real construct runs of
the scripted fake agent: one reviewer per aspect on the change since the run's base, its findings
built and verified, one more round for critical findings only and never a third, the rounds kept
in the plan's state, the aspects' texts read from the run's first commit."""

from __future__ import annotations

import json
from pathlib import Path

from ralph.loop.runs.aspects import DEFAULT_ASPECTS
from ralph.usecases import config, tasks
from tests.support.construct import construct, events, plan_records, subjects, with_app_spec
from tests.support.gitrepo import git


def _state(root: Path) -> dict:
    return next(r for r in plan_records(root) if r["t"] == "state")


def _review_runs(root: Path) -> list[str]:
    return sorted(e["item"] for e in events(root) if e["event"] == "agent_end" and e["stage"] == "REVIEW")


def _agent_state(root: Path) -> Path:
    return root.parent / "agent-state"


def test_every_default_aspect_reviews_the_change_once_and_a_clean_review_ends_complete(repo: Path):
    project = with_app_spec(repo, "# App\n\n- Parse input\n")
    base = git(project, "rev-parse", "HEAD").strip()

    done = construct(project, "--review", "--json")

    assert done.returncode == 0, done.stdout + done.stderr
    assert _review_runs(project) == sorted(DEFAULT_ASPECTS)
    state = _state(project)
    assert state["base"] == base and state["review_rounds"] == 1
    assert f"ralph(review): specs/app.md: round 1: nothing found" in subjects(project)
    prompt = (_agent_state(project) / "review-goal-1.prompt").read_text()
    assert f"git diff {base}...HEAD" in prompt and "Aspect: the goal." in prompt
    assert "the review's last round" not in prompt
    report = json.loads(done.stdout)
    assert report["outcome"] == "COMPLETE" and "the review found nothing more" in report["message"]

    again = construct(project, "--review")  # COMPLETE: a new base, no change since, no review

    assert again.returncode == 0, again.stdout + again.stderr
    assert _review_runs(project) == sorted(DEFAULT_ASPECTS)


def test_findings_are_built_then_reviewed_once_more_for_critical_findings_only_and_never_again(repo: Path):
    spec = "# App\n\n- Parse input\n\n[review-finds:docs] [review-critical:tests] [review-critical:docs]\n"
    project = with_app_spec(repo, spec)

    done = construct(project, "--review", "--json")

    assert done.returncode == 0, done.stdout + done.stderr
    accepted = {r["name"]: r for r in plan_records(project) if r["t"] == "accept"}
    assert accepted["Fix what the docs review found"]["aspect"] == "docs"
    assert accepted["Fix the docs review's critical finding"]["aspect"] == "docs"
    assert accepted["Fix the tests review's critical finding"]["aspect"] == "tests"
    assert "Fix what the tests review found" not in accepted  # its first round found nothing
    assert _state(project)["review_rounds"] == 2  # the critical round's findings are not reviewed again
    assert _review_runs(project) == sorted([*DEFAULT_ASPECTS, *DEFAULT_ASPECTS])
    second = (_agent_state(project) / "review-docs-2.prompt").read_text()
    assert "the review's last round" in second
    checks = [e for e in events(project) if e["event"] == "agent_end" and e["stage"] == "CHECK"]
    assert len(checks) == 1  # the review's findings are reviewed again, not checked again
    log = subjects(project)
    assert any(s.startswith("ralph(review): specs/app.md: round 1: 1 found") for s in log)
    assert any(s.startswith("ralph(review): specs/app.md: round 2: 2 found") for s in log)


def test_no_review_runs_none_and_the_config_s_list_runs_only_the_aspects_named(repo: Path):
    project = with_app_spec(repo, "# App\n\n- Parse input\n")

    done = construct(project, "--no-review")

    assert done.returncode == 0, done.stdout + done.stderr
    assert _review_runs(project) == []
    assert not _state(project).get("review_rounds")

    tasks.add(project, [{"name": "Print report", "accept": "ok"}])
    config.set_value(project, "review", "goal,docs")
    configured = construct(project, "--review")  # on, with the aspects the config names

    assert configured.returncode == 0, configured.stdout + configured.stderr
    assert _review_runs(project) == ["docs", "goal"]
