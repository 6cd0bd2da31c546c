"""`ralph construct --dry-run`: the next iteration's runs, each with its agent argv, prompt size and
first lines, the gate and the budget; no agent or gate runs and the repository, .git included,
stays byte for byte as it was."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.construct import construct, in_process
from tests.support.gitrepo import git

# Any run of it leaves a mark: the dry run must start none.
AGENT = "import pathlib; pathlib.Path(__file__).with_name('agent-ran').write_text('ran')\n"


@pytest.fixture
def project(app_repo: Callable[[str], Path]) -> Path:
    return app_repo("# App\n\n- Do it\n")


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under root, .git included, with a digest of its bytes."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def dry_run(root: Path, tmp_path: Path, *flags: str):
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    argv = [
        "-C", str(root), "construct", "specs/app.md", "--dry-run", "--agent", "command",
        "--agent-cmd", f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}",
        "--gate", f"{shlex.quote(sys.executable)} check_work.py", *flags,
    ]  # fmt: skip
    return in_process(argv, dict(os.environ))


def test_dry_run_lists_each_run_with_its_argv_and_prompt_and_changes_nothing(project, tmp_path):
    from ralph.usecases import issues, questions, tasks

    built, waiting, ready = (
        tasks.add(project, [{"name": n, "accept": "ok"}])[0]["id"] for n in ("Built", "Waits", "Ready")
    )
    tasks.done(project, built)
    issue = issues.add(project, "Is it fast?")["id"]
    question = questions.ask(project, "Red or blue?", waiting, "a person")["id"]
    before, head = tree_digest(project), git(project, "rev-parse", "HEAD")

    done = dry_run(project, tmp_path, "--max-iterations", "4", "--timeout", "90s", "--max-cost", "2.5")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert tree_digest(project) == before and git(project, "rev-parse", "HEAD") == head
    assert not (project / "build" / "ralph-logs").exists() or not list(
        (project / "build" / "ralph-logs").iterdir()
    )
    assert not (tmp_path / "agent-ran").exists()

    assert (
        out.splitlines()[0] == "dry run of ralph construct specs/app.md: nothing is run, written or committed"
    )
    assert (
        "budget: max-iterations 4, max-minutes none, max-cost $2.5, max-tokens none, max-attempts 3,"
        " timeout 90s per agent run" in out
    )
    assert ", max-rebuilds 3 after a rejection, 5 agent failures in a row end the run\n" in out
    assert f"  INVESTIGATE {issue}: Is it fast?" in out
    assert f"  BUILD {ready}: Ready" in out and f"  VERIFY {built}: Built" in out
    assert f"BUILD {waiting}" not in out and f"{question} holds {waiting}: Red or blue?" in out
    assert f"    agent: {shlex.quote(sys.executable)} {shlex.quote(str(tmp_path / 'agent.py'))}" in out
    assert f"    then the gate: {shlex.quote(sys.executable)} check_work.py" in out
    assert f"      | Stage: BUILD. Task {ready}: Ready" in out

    as_json = json.loads(dry_run(project, tmp_path, "--json").stdout)
    build = next(run for run in as_json["runs"] if run["stage"] == "BUILD")
    assert build["prompt_bytes"] > 500 and build["prompt_head"][0] == f"Stage: BUILD. Task {ready}: Ready"
    assert build["argv"][0] == sys.executable and as_json["budget"]["max_iterations"] == 10
    assert tree_digest(project) == before
    assert git(project, "status", "--porcelain") == ""  # last: it refreshes .git/index


def test_dry_run_shows_each_stage_s_model(project, tmp_path):
    from ralph.usecases import config, tasks

    built, ready = (tasks.add(project, [{"name": n, "accept": "ok"}])[0]["id"] for n in ("Built", "Ready"))
    tasks.done(project, built)
    config.set_value(project, "agent", "command")  # the same agent as the flag: its models hold
    config.set_value(project, "stage_models", '{"VERIFY": "claude-opus-4-5", "BUILD": "claude-opus-4-1"}')
    flags = (
        "--model",
        "claude-sonnet-4-5",
        "--stage-model",
        "BUILD=claude-haiku-4-5",
        "--max-tokens",
        "90000",
    )
    done = dry_run(project, tmp_path, *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    models = "models: PLAN claude-sonnet-4-5, INVESTIGATE claude-sonnet-4-5, BUILD claude-haiku-4-5, VERIFY"
    assert (
        f"{models} claude-opus-4-5, DECOMPOSE claude-sonnet-4-5, CHECK claude-sonnet-4-5,"
        " REVIEW claude-sonnet-4-5\n" in done.stdout
    )
    assert f"  BUILD {ready}: Ready\n    model: claude-haiku-4-5\n" in done.stdout
    assert f"  VERIFY {built}: Built\n    model: claude-opus-4-5\n" in done.stdout
    assert "max-tokens 90,000," in done.stdout
    as_json = json.loads(dry_run(project, tmp_path, *flags, "--json").stdout)
    assert [(run["stage"], run["model"]) for run in as_json["runs"]] == [
        ("BUILD", "claude-haiku-4-5"),
        ("VERIFY", "claude-opus-4-5"),
    ]
    assert as_json["models"]["DECOMPOSE"] == "claude-sonnet-4-5" and as_json["budget"]["max_tokens"] == 90000
    assert as_json["origins"]["stage_models"] == "flag"


def test_dry_run_shows_an_escalation_and_the_step_a_task_s_failed_builds_reached(project, tmp_path):
    from ralph.usecases import tasks

    fresh, failed = (tasks.add(project, [{"name": n, "accept": "ok"}])[0]["id"] for n in ("Fresh", "Failed"))
    plan = project / "plan.jsonl"
    records = [json.loads(line) for line in plan.read_text().splitlines()]
    for record in records:
        if record.get("id") == failed:  # as after a build whose gate failed
            record.update(attempts=1, verdict="gate_failed", gate_failure="FAILED: test_it")
    plan.write_text("".join(json.dumps(record) + "\n" for record in records))
    git(project, "commit", "-qam", "Failed failed once")

    done = dry_run(project, tmp_path, "--stage-model", "build=claude-haiku-4-5, claude-sonnet-4-5")

    assert done.returncode == 0, done.stdout + done.stderr
    assert "BUILD claude-haiku-4-5 -> claude-sonnet-4-5, VERIFY (the CLI default)" in done.stdout
    assert f"  BUILD {fresh}: Fresh\n    model: claude-haiku-4-5\n" in done.stdout
    assert f"  BUILD {failed}: Failed\n    model: claude-sonnet-4-5\n" in done.stdout
    as_json = json.loads(dry_run(project, tmp_path, "--stage-model", "BUILD=a,b", "--json").stdout)
    assert as_json["escalations"] == {"BUILD": ["a", "b"]} and as_json["models"]["BUILD"] == "a"
    refused = dry_run(project, tmp_path, "--stage-model", "BUILD=a,,b")
    assert refused.returncode == 2 and "is not STAGE=MODEL or STAGE=MODEL,MODEL,..." in refused.stderr


def test_dry_run_of_an_unplanned_spec_shows_the_plan_run_and_writes_no_plan(project, tmp_path):
    before = tree_digest(project)
    done = dry_run(project, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "  PLAN: specs/app.md" in done.stdout and "      | Stage: PLAN. Spec: specs/app.md" in done.stdout
    assert tree_digest(project) == before


def test_dry_run_of_a_missing_spec_is_one_line_and_exit_2(project, tmp_path):
    done = in_process(
        ["-C", str(project), "construct", "specs/nope.md", "--dry-run", "--agent", "command",
         "--agent-cmd", "true", "--gate", ""],
        dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr == "ralph: no spec file specs/nope.md\n"


def test_dry_run_lists_every_reason_the_real_run_refuses_and_the_real_run_stops_at_the_first(
    project, tmp_path
):
    """A missing `make verify` target (the default gate), a dirty tree and a missing agent: the
    real run refuses for the first it meets, the dry run lists all three, as the real run words them."""
    (project / "Makefile").write_text("test:\n\ttrue\n")
    git(project, "add", "Makefile")
    git(project, "commit", "-qm", "a Makefile without verify")
    (project / "notes.txt").write_text("mine\n")
    before = tree_digest(project)
    common = ["-C", str(project), "construct", "specs/app.md", "--agent", "command"]

    done = in_process([*common, "--agent-cmd", "no-such-agent", "--dry-run"], dict(os.environ))
    missing_agent = (
        "ralph: the agent program 'no-such-agent' is not installed or not executable: check --agent-cmd"
    )
    no_target = (
        "ralph: `make verify` cannot run here: Makefile has no rule to make target 'verify';"
        " set --gate (or the config's gate), or --gate '' for none"
    )
    dirty = "ralph: uncommitted changes: notes.txt; commit or stash them, or pass --allow-dirty"
    said = done.stderr.splitlines()
    assert said == [missing_agent, no_target, dirty]
    assert done.returncode == 6  # the first: the real run ends AGENT_UNAVAILABLE
    assert "the real run would not start: 3 problems, listed on stderr" in done.stdout
    as_json = json.loads(
        in_process([*common, "--agent-cmd", "true", "--dry-run", "--json"], {**os.environ}).stdout
    )
    assert as_json["refusals"] == [
        {"exit_code": 1, "message": no_target.removeprefix("ralph: ")},
        {"exit_code": 1, "message": dirty.removeprefix("ralph: ")},
    ]
    assert tree_digest(project) == before

    head = git(project, "rev-parse", "HEAD")
    real = in_process([*common, "--agent-cmd", "true"], dict(os.environ))
    assert (real.returncode, real.stderr) == (1, no_target + "\n")
    assert (
        git(project, "rev-parse", "HEAD") == head
        and git(project, "status", "--porcelain") == "?? notes.txt\n"
    )
    (project / "Makefile").write_text("verify:\n\ttrue\n")
    git(project, "commit", "-qam", "verify")
    real = in_process([*common, "--agent-cmd", "true"], dict(os.environ))
    assert (real.returncode, real.stderr) == (1, dirty + "\n")
    quiet = in_process([*common, "--agent-cmd", "true", "--dry-run", "--allow-dirty"], dict(os.environ))
    assert (quiet.returncode, quiet.stderr) == (0, "") and "would not start" not in quiet.stdout


def test_dry_run_says_when_another_construct_holds_the_repository(project, tmp_path):
    from ralph.store.lock import exclusive_run

    with exclusive_run(project / ".git" / "ralph-construct.lock", "ralph construct"):
        done = dry_run(project, tmp_path)
    assert done.returncode == 75  # Busy, as the real run's lock would say
    assert done.stderr.startswith(
        f"ralph: another ralph construct is running in this repository (pid {os.getpid()}"
    )


def test_dry_run_says_the_spec_check_would_run_and_not_once_a_check_found_the_spec_met(project, tmp_path):
    from ralph.usecases import tasks

    task = tasks.add(project, [{"name": "Do it"}])[0]
    tasks.done(project, task["id"])
    tasks.accept(project, task["id"])
    before = tree_digest(project)

    done = dry_run(project, tmp_path)

    assert done.returncode == 0, done.stderr
    assert (
        "  CHECK: specs/app.md" in done.stdout and "      | Stage: CHECK. Spec: specs/app.md" in done.stdout
    )
    assert "note: every task is accepted: the spec check (CHECK) runs" in done.stdout
    assert tree_digest(project) == before

    assert construct(project).returncode == 0  # its check (the fake agent's) finds nothing missing
    met = dry_run(project, tmp_path, "--json")
    assert json.loads(met.stdout)["runs"] == []
    assert "a spec check found this spec and code met" in " ".join(json.loads(met.stdout)["notes"])


def test_dry_run_runs_nothing_from_the_repository_not_even_the_makefile(project, tmp_path):
    """make expands `$(shell ...)` even with -n: a committed Makefile is read, never given to make."""
    marker = tmp_path / "ran"
    (project / "Makefile").write_text(f"STAMP := $(shell echo ran >> {marker})\nverify:\n\ttrue\n")
    git(project, "add", "Makefile")
    git(project, "commit", "-qm", "a Makefile a build wrote")
    common = ["-C", str(project), "construct", "specs/app.md", "--agent", "command", "--agent-cmd", "true"]
    done = in_process([*common, "--gate", "make verify", "--dry-run"], dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
