"""The review by aspect before COMPLETE (ralph/loop/stages/review.py), with real construct runs of
the scripted fake agent: one reviewer per aspect on the change since the run's base, its findings
built and verified, one more round for critical findings only and never a third, the rounds kept
in the plan's state, the aspects' texts read from the run's first commit."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from ralph.loop.process.sandbox import unavailable_reason
from ralph.loop.runs.aspects import DEFAULT_ASPECTS
from ralph.usecases import config, tasks
from tests.support.construct import (
    FAKE_AGENT,
    construct,
    events,
    in_process,
    plan_records,
    subjects,
    with_app_spec,
)
from tests.support.gitrepo import git

needs_bwrap = pytest.mark.skipif(
    unavailable_reason()[0] is None, reason=f"no sandbox here: {unavailable_reason()[1]}"
)


def _state(root: Path) -> dict:
    return next(r for r in plan_records(root) if r["t"] == "state")


def _review_runs(root: Path) -> list[str]:
    return sorted(e["item"] for e in events(root) if e["event"] == "agent_end" and e["stage"] == "REVIEW")


def _agent_state(root: Path) -> Path:
    return root.parent / "agent-state"


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_every_default_aspect_reviews_the_change_once_and_a_clean_review_ends_complete
@pytest.mark.slow
def test_every_default_aspect_reviews_the_change_once_and_a_clean_review_ends_complete(repo: Path):
    project = with_app_spec(repo, "# App\n\n- Parse input\n")
    base = git(project, "rev-parse", "HEAD").strip()

    done = construct(project, "--review", "--json")

    assert done.returncode == 0, done.stdout + done.stderr
    assert _review_runs(project) == sorted(DEFAULT_ASPECTS)
    state = _state(project)
    assert state["base"] == base and state["review_rounds"] == 2  # found nothing: no round follows
    assert "ralph(review): specs/app.md: round 1: nothing found" in subjects(project)
    prompt = (_agent_state(project) / "review-goal-1.prompt").read_text()
    assert f"git diff {base}...HEAD" in prompt and "Aspect: the goal." in prompt
    assert "the review's last round" not in prompt
    report = json.loads(done.stdout)
    assert report["outcome"] == "COMPLETE" and "the review found nothing more" in report["message"]

    again = construct(project, "--review")  # COMPLETE: a new base, no change since, no review

    assert again.returncode == 0, again.stdout + again.stderr
    assert _review_runs(project) == sorted(DEFAULT_ASPECTS)


@pytest.mark.slow
def test_a_run_resumed_after_a_round_that_found_nothing_does_not_review_again(repo: Path):
    project = with_app_spec(repo, "# App\n\n- Parse input\n")
    assert construct(project, "--review").returncode == 0
    # As if the run had been interrupted after the review's commit, before its ending's.
    lines = (project / "plan.jsonl").read_text().splitlines()
    state = next(i for i, line in enumerate(lines) if json.loads(line)["t"] == "state")
    lines[state] = json.dumps({**json.loads(lines[state]), "stage": "INTERRUPTED"})
    (project / "plan.jsonl").write_text("\n".join(lines) + "\n")
    git(project, "commit", "-qam", "interrupted")

    resumed = construct(project, "--review")

    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _review_runs(project) == sorted(DEFAULT_ASPECTS)  # no second, critical-only round


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_findings_are_built_then_reviewed_once_more_for_critical_findings_only_and_never_again,
# and cli/test_log.py: test_log_names_the_aspect_that_found_an_item
@pytest.mark.slow
def test_findings_are_built_then_reviewed_once_more_for_critical_findings_only_and_never_again(repo: Path):
    spec = "# App\n\n- Parse input\n\n[review-finds:docs] [review-critical:tests] [review-critical:docs]\n"
    project = with_app_spec(repo, spec)
    config.set_value(project, "review", "docs,tests,goal")  # every default aspect: the first test's

    done = construct(project, "--review", "--json")

    assert done.returncode == 0, done.stdout + done.stderr
    accepted = {r["name"]: r for r in plan_records(project) if r["t"] == "accept"}
    assert accepted["Fix what the docs review found"]["aspect"] == "docs"
    assert accepted["Fix the docs review's critical finding"]["aspect"] == "docs"
    assert accepted["Fix the tests review's critical finding"]["aspect"] == "tests"
    assert "Fix what the tests review found" not in accepted  # its first round found nothing
    assert _state(project)["review_rounds"] == 2  # the critical round's findings are not reviewed again
    assert _review_runs(project) == ["docs", "docs", "goal", "goal", "tests", "tests"]
    second = (_agent_state(project) / "review-docs-2.prompt").read_text()
    assert "the review's last round" in second
    checks = [e for e in events(project) if e["event"] == "agent_end" and e["stage"] == "CHECK"]
    assert len(checks) == 1  # the review's findings are reviewed again, not checked again
    log = subjects(project)
    assert any(s.startswith("ralph(review): specs/app.md: round 1: 1 found") for s in log)
    assert any(s.startswith("ralph(review): specs/app.md: round 2: 2 found") for s in log)
    reviews = json.loads(done.stdout)["reviews"]
    assert len(reviews) == 2 * 3 and {r["end"] for r in reviews} == {"finished"}
    found = {(r["round"], r["aspect"]): r["findings"] for r in reviews if r["findings"]}
    assert set(found) == {(1, "docs"), (2, "docs"), (2, "tests")}
    (docs,) = found[1, "docs"]
    assert docs["fate"] == "accepted" and docs["text"] == "Fix what the docs review found"
    history = in_process(["-C", str(project), "log"], dict(os.environ))
    (created,) = [line for line in history.stdout.splitlines() if f"{docs['id']}  created" in line]
    assert created.endswith("(found by the docs review)")


@pytest.mark.slow
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


def test_a_build_that_rewrites_an_aspect_file_does_not_change_what_the_reviewer_reads(repo: Path):
    """Hostile: a build (its scope names the file, so its change is committed) rewrites the
    repository's docs aspect; the reviewer still reads the aspect as the run's first commit has it."""
    project = with_app_spec(repo, "# App\n")
    own = project / ".ralph" / "review" / "docs.md"
    own.parent.mkdir(parents=True)
    own.write_text("The repository's docs aspect: every command in the README.\n")
    git(project, "add", ".ralph/review/docs.md")
    git(project, "commit", "-qm", "our docs aspect")
    name = "Parse input [rewrites:.ralph/review/docs.md]"
    tasks.add(project, [{"name": name, "accept": "ok", "scope": ["work/**", ".ralph/review/docs.md"]}])
    config.set_value(project, "review", "docs,goal")
    base = git(project, "rev-parse", "HEAD").strip()

    done = construct(project, "--review")

    assert done.returncode == 0, done.stdout + done.stderr
    assert "the build's own review text" in git(project, "show", "HEAD:.ralph/review/docs.md")
    assert _state(project)["base"] == base  # the run's start, where the change it reviews begins
    prompt = (_agent_state(project) / "review-docs-1.prompt").read_text()
    assert f"git diff {base}...HEAD" in prompt
    assert "The repository's docs aspect: every command in the README." in prompt
    assert "the build's own review text" not in prompt
    assert _review_runs(project) == ["docs", "goal"]  # its file replaces ralph's docs aspect, once


@pytest.mark.slow
def test_the_repository_s_own_aspect_file_adds_an_aspect(repo: Path):
    project = with_app_spec(repo, "# App\n\n- Parse input\n\n[review-finds:licences]\n")
    own = project / ".ralph" / "review" / "licences.md"
    own.parent.mkdir(parents=True)
    own.write_text("Every new file carries the licence header.\n")
    git(project, "add", ".ralph/review/licences.md")
    git(project, "commit", "-qm", "our own aspect")

    done = construct(project, "--review")

    assert done.returncode == 0, done.stdout + done.stderr
    assert _review_runs(project) == sorted([*DEFAULT_ASPECTS, "licences", *DEFAULT_ASPECTS, "licences"])
    (found,) = [r for r in plan_records(project) if r.get("aspect") == "licences"]
    assert found["t"] == "accept" and found["name"] == "Fix what the licences review found"


def _review(root: Path, *flags: str):
    """`ralph review` of the app spec with the fake agent, as construct() runs `ralph construct`."""
    agent = f"{shlex.quote(sys.executable)} {shlex.quote(str(FAKE_AGENT))}"
    argv = ["-C", str(root), "review", "specs/app.md", "--agent", "command", "--agent-cmd", agent]
    argv += ["--gate", f"{shlex.quote(sys.executable)} check_work.py", "--timeout", "30s", *flags]
    env = {**os.environ, "FAKE_AGENT_STATE": str(_agent_state(root)), "AGENT_KIT_DIR": str(FAKE_AGENT.parent)}
    return in_process(argv, env)


def test_review_only_reviews_the_branch_since_the_default_branch_and_fix_builds_what_it_found(repo: Path):
    project = with_app_spec(repo, "# App\n\n[review-finds:goal]\n")
    config.set_value(project, "review", "goal,docs")
    main = git(project, "rev-parse", "--abbrev-ref", "HEAD").strip()
    fork = git(project, "rev-parse", "HEAD").strip()
    git(project, "checkout", "-qb", "feature")
    (project / "greet.py").write_text("print('hello')\n")
    git(project, "add", "greet.py")
    git(project, "commit", "-qm", "made by hand, not by ralph")

    done = _review(project, "--json")

    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["outcome"] == "COMPLETE" and report["ending"] == "reviewed", report["message"]
    assert _state(project)["base"] == fork and main in ("main", "master")
    assert f"git diff {fork}...HEAD" in (_agent_state(project) / "review-goal-1.prompt").read_text()
    (goal,) = [r for r in report["reviews"] if r["findings"]]
    assert goal["aspect"] == "goal" and goal["findings"][0]["fate"] == "open"
    assert [t["name"] for t in plan_records(project) if t["t"] == "task"] == [
        "Fix what the goal review found"
    ]
    assert not any(e["stage"] in ("PLAN", "BUILD") for e in events(project) if e["event"] == "agent_end")

    fixed = _review(project, "--fix")  # goes on from the recorded round: no second first round

    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "review by aspect" in fixed.stdout
    accepted = [r["name"] for r in plan_records(project) if r["t"] == "accept"]
    assert accepted == ["Fix what the goal review found"]
    assert _review_runs(project) == ["docs", "docs", "goal", "goal"]  # round 1, then 2
    assert not any(e["stage"] == "PLAN" for e in events(project) if e["event"] == "agent_end")


def test_review_only_on_the_default_branch_itself_is_refused_in_one_line(repo: Path):
    project = with_app_spec(repo, "# App\n")

    done = _review(project)

    assert done.returncode != 0
    assert done.stderr.strip().startswith("ralph: nothing to review: HEAD is where")
    assert len(done.stderr.strip().splitlines()) == 1
    option = _review(project, "--base=--output=x")
    assert option.returncode == 2 and option.stderr == "ralph: --base --output=x: not a commit\n"
    assert not (project / "x").exists()


@pytest.mark.slow
def test_a_failed_aspect_and_one_that_wrote_a_file_keep_nothing_and_the_others_complete_the_round(
    repo: Path,
):
    spec = "# App\n\n- Parse input\n\n[review-crash:goal] [review-writes:docs] [review-finds:docs]\n"
    project = with_app_spec(repo, spec)

    done = construct(project, "--review", "--json")

    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    ends = {r["aspect"]: r["end"] for r in report["reviews"]}
    assert ends == {**dict.fromkeys(DEFAULT_ASPECTS, "finished"), "goal": "failed", "docs": "failed"}
    assert not any(r.get("aspect") for r in plan_records(project))  # the docs finding is not kept
    (wrote,) = [line for line in report["failed"] if line.startswith("REVIEW docs failed")]
    assert "changed code in REVIEW: check_work.py" in wrote
    assert any(line.startswith("REVIEW goal failed") for line in report["failed"])
    assert "reviewer" not in (project / "check_work.py").read_text() and _state(project)["review_rounds"] == 2


@pytest.mark.slow
def test_a_round_where_every_aspect_failed_ends_stuck_uncounted_and_the_next_run_reviews_again(repo: Path):
    crashes = " ".join(f"[review-crash:{aspect}]" for aspect in DEFAULT_ASPECTS)
    project = with_app_spec(repo, f"# App\n\n- Parse input\n\n{crashes}\n")

    done = construct(project, "--review", "--json")

    assert done.returncode == 5, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert (report["outcome"], report["ending"]) == ("STUCK", "review_failed")
    assert _state(project)["review_rounds"] == 0

    again = construct(project, "--review")

    assert again.returncode == 5
    assert _review_runs(project) == sorted([*DEFAULT_ASPECTS, *DEFAULT_ASPECTS])


@pytest.mark.slow
def test_a_resumed_run_builds_the_first_round_s_findings_and_reviews_only_once_more(repo: Path):
    project = with_app_spec(repo, "# App\n\n- Parse input\n\n[review-finds:tests]\n")

    first = construct(project, "--review", "--max-iterations", "1")

    assert first.returncode == 3, first.stdout + first.stderr  # round 1 added work the budget left
    assert _state(project)["review_rounds"] == 1
    assert [r["name"] for r in plan_records(project) if r["t"] == "task"] == [
        "Fix what the tests review found"
    ]

    resumed = construct(project, "--review")

    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _review_runs(project) == sorted([*DEFAULT_ASPECTS, *DEFAULT_ASPECTS])  # rounds 1 and 2 only
    assert "the review's last round" in (_agent_state(project) / "review-tests-2.prompt").read_text()
    assert _state(project)["review_rounds"] == 2


@needs_bwrap
@pytest.mark.slow
def test_fenced_reviewers_read_the_change_add_findings_and_cannot_write_their_checkout(repo: Path):
    project = with_app_spec(repo, "# App\n\n- Parse input\n\n[review-writes:docs] [review-finds:goal]\n")

    done = construct(project, "--review", "--sandbox", "required", "--json")

    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["failed"] == [] and {
        r["aspect"]: r["end"] for r in report["reviews"] if r["round"] == 1
    } == dict.fromkeys(
        DEFAULT_ASPECTS, "finished"
    )  # the docs reviewer's edit was refused by the fence: nothing it may not do was done
    accepted = [r for r in plan_records(project) if r["t"] == "accept" and r.get("aspect") == "goal"]
    assert [r["name"] for r in accepted] == ["Fix what the goal review found"]
    assert "reviewer" not in (project / "check_work.py").read_text()


@pytest.mark.slow
def test_what_several_aspects_found_alike_is_taken_once_the_rest_refused_quietly_as_duplicates(repo: Path):
    project = with_app_spec(repo, "# App\n\n- Parse input\n\n[review-same]\n")

    done = construct(project, "--review", "--json")

    report = json.loads(done.stdout)
    named = [r for r in plan_records(project) if r.get("name") == "Fix the one thing every review found"]
    assert [(r["t"], r["aspect"]) for r in named] == [("accept", "bugs-and-security")]  # the first aspect's
    assert not [r for r in plan_records(project) if r["t"] == "issue"]  # no person asked about them
    assert report["outcome"] == "COMPLETE", report["message"]
    refused = [e for e in events(project) if e["event"] == "review_aspect" and e.get("duplicates")]
    assert len(refused) == len(DEFAULT_ASPECTS) - 1


@pytest.mark.slow
def test_construct_after_a_review_alone_plans_builds_and_checks_the_spec_before_reviewing_again(repo: Path):
    project = with_app_spec(repo, "# App\n\n- Parse input\n\n[review-finds:goal]\n")
    git(project, "checkout", "-qb", "feature")
    (project / "greet.py").write_text("print('hello')\n")
    git(project, "add", "greet.py")
    git(project, "commit", "-qm", "made by hand")
    assert _review(project).returncode == 0  # the goal finding recorded; the spec never planned

    done = construct(project, "--review")

    assert done.returncode == 0, done.stdout + done.stderr
    accepted = sorted(r["name"] for r in plan_records(project) if r["t"] == "accept")
    assert accepted == ["Fix what the goal review found", "Parse input"]
    stages = [e["stage"] for e in events(project) if e["event"] == "agent_end"]
    assert stages.count("PLAN") == 1 and stages.count("CHECK") == 1  # planned and checked, though reviewed
    assert _review_runs(project) == sorted([*DEFAULT_ASPECTS, *DEFAULT_ASPECTS])


@pytest.mark.slow
def test_the_dry_run_after_a_review_round_lists_the_review_again_not_the_spec_check(repo: Path):
    """Once a review round ran after a spec check that found nothing, the loop reviews what the
    round found again instead of checking the spec again: the dry run says so, and lists no CHECK."""
    project = with_app_spec(repo, "# App\n\n- Parse input\n\n[review-finds:docs]\n")
    assert construct(project, "--review").returncode == 0
    lines = (project / "plan.jsonl").read_text().splitlines()
    state = next(i for i, line in enumerate(lines) if json.loads(line)["t"] == "state")
    lines[state] = json.dumps({**json.loads(lines[state]), "review_rounds": 1})  # as after round 1
    (project / "plan.jsonl").write_text("\n".join(lines) + "\n")
    git(project, "commit", "-qam", "the review's first round only")

    done = construct(project, "--review", "--dry-run", "--json")

    assert done.returncode == 0, done.stdout + done.stderr
    preview = json.loads(done.stdout)
    assert sorted(run["stage"] for run in preview["runs"]) == ["REVIEW"] * len(DEFAULT_ASPECTS)
    assert any("reviewed once more" in note for note in preview["notes"]), preview["notes"]


def test_a_review_is_due_only_with_a_change_to_read_and_a_base_git_does_not_know_is_left_to_it(repo):
    """The claim of a review round (nothing_to_review): an empty change since the base is nothing
    to review; a change is; and a base git cannot find leaves the round to the review stage,
    which says what is wrong, rather than fail the claim's round."""
    from ralph.loop.stages.review import nothing_to_review
    from ralph.plan.loader import load
    from ralph.plan.plan import Plan
    from ralph.store.git import Repo
    from ralph.usecases.settings import Settings

    settings = Settings(spec="specs/app.md")
    start = git(repo, "rev-parse", "HEAD").strip()

    def plan_since(base: str) -> Plan:
        state = json.dumps({"t": "state", "spec": "specs/app.md", "base": base, "review_rounds": 0})
        return Plan(load((repo / "plan.jsonl").read_bytes() + state.encode() + b"\n", "plan.jsonl"))

    assert nothing_to_review(plan_since(start), settings, Repo(repo), ("HEAD",))
    (repo / "app.py").write_text("print('hi')\n")
    git(repo, "add", "app.py")
    git(repo, "commit", "-qm", "app")
    assert not nothing_to_review(plan_since(start), settings, Repo(repo), ("HEAD",))
    assert not nothing_to_review(plan_since("0" * 39 + "1"), settings, Repo(repo), ("HEAD",))
    written = repo / "written"  # a base that reads as an option writes nothing
    assert not nothing_to_review(plan_since(f"--output={written}"), settings, Repo(repo), ("HEAD",))
    assert not list(repo.glob("written*"))
    assert nothing_to_review(
        plan_since(start), Settings(spec="specs/app.md", review=False), Repo(repo), ("HEAD",)
    )
