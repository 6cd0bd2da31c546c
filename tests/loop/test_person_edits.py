"""A person works beside a run: runs ralph's own commands, edits plan.jsonl by hand. What their
commands did is theirs: never undone, never credited to an agent, committed under their own
messages. A hand edit nobody can attribute is never lost. Real processes: ralph, the fake agent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.support.construct import add_tasks, construct, events, in_process, plan_records, subjects, wait_for
from tests.support.gitrepo import git

BY_HAND = {"t": "task", "id": "t-byhand", "name": "Added beside the run", "accept": "work file says ok"}


def draft_file(project, spec: str) -> str:
    """A file of a branch as `git show` gives it; "" where the branch or the file is missing."""
    done = subprocess.run(["git", "show", spec], cwd=project, capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else ""


def ralph(project, *args: str) -> subprocess.CompletedProcess:
    """A person's ralph command, through the CLI in this process: the run beside it is a process of
    its own either way, and a Python start-up of ralph costs some 0.15 s of CPU."""
    done = in_process(["-C", str(project), *args], dict(os.environ))
    assert done.returncode == 0, done.stderr
    return done


def person_edits(project, by_hand: bool) -> None:
    """A task added (by hand, or with `ralph task add`), then `ralph config set`."""
    if by_hand:
        with open(project / "plan.jsonl", "a") as plan:
            plan.write(json.dumps(BY_HAND) + "\n")
    else:
        added = ralph(project, "task", "add", json.dumps({k: v for k, v in BY_HAND.items() if k != "t"}))
        assert "runs in this work tree: it commits this change" in added.stderr
    ralph(project, "config", "set", "max_attempts", "7")


def assert_config_kept_and_committed_as_theirs(project) -> None:
    config = next(r for r in plan_records(project, "HEAD") if r["t"] == "config")
    assert config["max_attempts"] == 7
    (theirs,) = [
        c
        for c in git(project, "log", "--format=%H", "HEAD").split()
        if "config set" in git(project, "log", "-1", "--format=%B", c)
    ]
    assert git(project, "show", "--format=", "--name-only", theirs).split() == ["plan.jsonl"]


@pytest.mark.slow
def test_a_persons_commands_and_hand_edit_during_verify_stay_and_the_verdict_stands(project, tmp_path):
    (task,) = add_tasks(project, "Slow to judge [slow-verify]")
    state = tmp_path / "agent-state"
    running = construct(project, wait=False)
    wait_for(lambda: (state / f"verify-{task}").exists(), "the verifier started")

    person_edits(project, by_hand=True)
    out, err = running.communicate(timeout=120)

    assert running.returncode == 0, out + err
    assert_config_kept_and_committed_as_theirs(project)
    assert [r["t"] for r in plan_records(project, "HEAD") if r.get("id") == BY_HAND["id"]] == ["accept"]
    assert (state / f"verify-{task}").read_text() == "1"  # its verdict stood: judged once
    verify = next(s for s in subjects(project) if s.startswith("ralph(verify): accepted " + task))
    assert BY_HAND["id"] not in verify  # not credited to the verifier
    assert not [e for e in events(project) if e["event"] == "permission_violation"]


@pytest.mark.parametrize(
    "parallel",
    [pytest.param("1", id="serial", marks=pytest.mark.slow), pytest.param("2", id="in-a-worktree")],
)
def test_a_persons_commands_during_a_build_are_theirs_and_the_build_goes_on(project, tmp_path, parallel):
    (task,) = add_tasks(project, "Slow to build [slow-build]")
    state = tmp_path / "agent-state"
    running = construct(project, "--parallel", parallel, wait=False)
    wait_for(lambda: (state / f"{task}.building").exists(), "the build started")

    person_edits(project, by_hand=False)
    out, err = running.communicate(timeout=120)

    assert running.returncode == 0, out + err
    assert_config_kept_and_committed_as_theirs(project)
    assert [r["t"] for r in plan_records(project, "HEAD") if r.get("id") == BY_HAND["id"]] == ["accept"]
    assert (state / f"build-{task}").read_text() == "1"  # the build was not undone
    assert not [e for e in events(project) if e["event"] == "permission_violation"]
    assert "committed a change made beside the run: ralph: 2 changes made beside the run" in err
    (theirs,) = [
        c
        for c in git(project, "log", "--format=%H", "HEAD").split()
        if "changes made beside" in git(project, "log", "-1", "--format=%s", c)
    ]
    body = git(project, "log", "-1", "--format=%B", theirs)
    assert 'Ralph-Op: {"op":"add_tasks"' in body and 'Ralph-Op: {"op":"set_config"' in body, body


@pytest.mark.slow
def test_a_hand_edit_during_a_build_is_kept_beside_its_log_when_the_attempt_is_undone(project, tmp_path):
    (task,) = add_tasks(project, "Slow to build [slow-build]")
    state = tmp_path / "agent-state"
    running = construct(project, "--parallel", "1", wait=False)
    wait_for(lambda: (state / f"{task}.building").exists(), "the build started")

    person_edits(project, by_hand=True)  # a line nobody can tell from the agent's own hand edit
    out, err = running.communicate(timeout=120)

    assert running.returncode == 0, out + err
    assert_config_kept_and_committed_as_theirs(project)  # their command's change stays
    (violation,) = [e for e in events(project) if e["event"] == "permission_violation"]
    assert violation["did"] == [f"added tasks in BUILD: {BY_HAND['id']}"]
    (kept,) = [e["path"] for e in events(project) if e["event"] == "plan_kept"]
    assert json.dumps(BY_HAND) in (project / kept).read_text()  # never lost


def test_a_persons_command_beside_a_run_that_died_is_committed_as_theirs_by_the_next(project, tmp_path):
    from ralph.store import beside
    from ralph.store.git import Repo
    from tests.support.runlock import hold_the_run_lock

    holder = hold_the_run_lock(project)  # a run that dies before it commits what was added beside it
    ralph(project, "task", "add", json.dumps({"id": "t-mine", "name": "Mine", "accept": "work file says ok"}))
    holder.kill()
    holder.wait()

    done = construct(project)

    assert done.returncode == 0, done.stdout + done.stderr
    (theirs,) = [
        c
        for c in git(project, "log", "--format=%H %s").splitlines()
        if c.endswith("ralph: task add t-mine Mine")
    ]
    assert git(project, "show", "--format=", "--name-only", theirs.split()[0]).split() == ["plan.jsonl"]
    assert [r["t"] for r in plan_records(project, "HEAD") if r.get("id") == "t-mine"] == ["accept"]
    assert beside.entries(Repo(project)) == ([], 0)  # the ledger starts afresh


FENCED_AGENT = r"""
import os, pathlib, time, sys
stage, task = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID")
sys.path.insert(0, os.environ["AGENT_KIT_DIR"])
from agent_kit import ralph
if stage == "BUILD":
    time.sleep(2)  # while a person commits beside it
    pathlib.Path("work").mkdir(exist_ok=True)
    pathlib.Path("work", task + ".txt").write_text("ok " + task + "\n")
    ralph("task", "done", task)
elif stage == "VERIFY":
    ralph("task", "accept", task)
"""


@pytest.mark.slow
def test_in_the_sandbox_a_persons_git_commit_during_a_build_is_theirs_and_the_build_goes_on(
    project, tmp_path
):
    from ralph.loop.process.sandbox import unavailable_reason

    if unavailable_reason()[0] is None:
        pytest.skip(f"no sandbox here: {unavailable_reason()[1]}")
    (task,) = add_tasks(project, "Built while a person commits")
    agent = tmp_path / "fenced_agent.py"
    agent.write_text(FENCED_AGENT)
    command = f"{sys.executable} {agent}"
    running = construct(project, "--parallel", "1", "--sandbox=required", agent=command, wait=False)
    wait_for(
        lambda: any(e["event"] == "agent_begin" and e.get("stage") == "BUILD" for e in events(project)),
        "the build started",
    )

    (project / "notes.txt").write_text("a person's notes\n")
    git(project, "add", "notes.txt")
    git(project, "commit", "-qm", "a person's commit beside the run")
    theirs = git(project, "rev-parse", "HEAD").strip()
    out, err = running.communicate(timeout=120)

    assert running.returncode == 0, out + err
    git(project, "merge-base", "--is-ancestor", theirs, "HEAD")  # kept: its .git was read-only to the agent
    assert [r["t"] for r in plan_records(project, "HEAD") if r.get("id") == task] == ["accept"]
    assert not [e for e in events(project) if e["event"] == "permission_violation"]
    assert [e["on"] for e in events(project) if e["event"] == "sandbox"] == [True]


# A person's command while the build runs in the work tree: test_a_persons_commands_during_a_build_are_
# theirs_and_the_build_goes_on[serial]; this serial case runs with the slow suites.
@pytest.mark.slow
@pytest.mark.parametrize(
    "parallel",
    [pytest.param("1", id="serial", marks=pytest.mark.slow), pytest.param("2", id="in-a-worktree")],
)
def test_a_task_a_person_deletes_while_it_is_built_keeps_its_work_on_a_draft_and_the_run_goes_on(
    project, tmp_path, parallel
):
    doomed, other = add_tasks(project, "Deleted while built [slow-build]", "Built beside it [slow-build]")
    state = tmp_path / "agent-state"
    running = construct(project, "--parallel", parallel, wait=False)
    wait_for(lambda: (state / f"{doomed}.building").exists(), "the build started")

    ralph(project, "task", "delete", doomed)
    out, err = running.communicate(timeout=120)

    assert running.returncode == 0, out + err
    assert f"ralph: task delete {doomed} Deleted while built [slow-build]" in subjects(project)
    assert not [r for r in plan_records(project, "HEAD") if r.get("id") == doomed]
    assert git(project, "ls-files", "work").split() == [f"work/{other}.txt"]  # never merged or swept in
    draft = f"ralph/draft/{doomed}"
    assert git(project, "show", f"{draft}:work/{doomed}.txt").startswith("ok")  # its work, kept
    assert [r["t"] for r in plan_records(project, "HEAD") if r.get("id") == other] == ["accept"]


# The run sees the task changed under its verifier whichever command did it: the rejection (built
# again after it) stays in `make test`, a person's delete and accept run with the slow suites.
@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        "reject",
        pytest.param("delete", marks=pytest.mark.slow),
        pytest.param("accept", marks=pytest.mark.slow),
    ],
)
def test_a_person_who_judges_or_removes_a_task_while_it_is_verified_has_the_last_word(
    project, tmp_path, command
):
    (task,) = add_tasks(project, "Judged slowly [slow-verify]")
    state = tmp_path / "agent-state"
    running = construct(project, wait=False)
    wait_for(lambda: (state / f"verify-{task}").exists(), "the verifier started")

    args = {
        "reject": ["reject", task, "a person says no"],
        "delete": ["delete", task],
        "accept": ["accept", task],
    }
    ralph(project, "task", *args[command])
    out, err = running.communicate(timeout=120)

    assert running.returncode == 0, out + err  # the run went on
    assert f"VERIFY {task}: verdict not taken: a person judged or removed the task meanwhile" in err
    assert any(s.startswith(f"ralph: task {command} {task}") for s in subjects(project))
    kinds = [r["t"] for r in plan_records(project, "HEAD") if r.get("id") == task]
    if command == "delete":
        assert kinds == []
    else:  # accepted: by the person, or (after their rejection) by the next build's verifier
        assert kinds[-1] == "accept"
        assert (state / f"build-{task}").read_text() == ("2" if command == "reject" else "1")


@pytest.mark.slow
def test_a_branch_switched_under_a_run_gets_none_of_its_commits_and_the_run_stops_in_one_line(
    project, tmp_path
):
    tasks = add_tasks(project, "Slow to build [slow-build]", "Slow too [slow-build]")  # two: in worktrees
    task = tasks[0]
    main = git(project, "rev-parse", "HEAD").strip()
    state = tmp_path / "agent-state"
    running = construct(project, "--parallel", "2", wait=False)
    wait_for(lambda: (state / f"{task}.building").exists(), "the build started")
    started = git(project, "rev-parse", "HEAD").strip()

    git(project, "switch", "-q", "-c", "persons-feature")
    out, err = running.communicate(timeout=120)

    assert running.returncode == 1, out + err
    lines = [line for line in err.splitlines() if line.startswith("ralph: ")]
    assert lines[-1].startswith("ralph: the work tree switched from main to persons-feature during the run")
    assert git(project, "rev-parse", "persons-feature").strip() == started  # none of the run's commits
    git(project, "merge-base", "--is-ancestor", main, "main")
    # The build whose merge was refused keeps its work on its draft branch. Which build that is
    # depends on which finished first: the other one, interrupted as the run stops, may have
    # written nothing yet.
    kept = [draft_file(project, f"ralph/draft/{each}:work/{each}.txt") for each in tasks]
    assert any(text.startswith("ok") for text in kept), kept

    git(project, "switch", "-q", "main")
    again = construct(project, "--parallel", "2")

    assert again.returncode == 0, again.stdout + again.stderr  # as the message says: switch back, run again
    assert len([r for r in plan_records(project, "HEAD") if r["t"] == "accept"]) == 2
    assert git(project, "rev-parse", "persons-feature").strip() == started


MINE = {"id": "t-mine", "name": "Mine", "accept": "work file says ok"}


def add_mine(project) -> None:
    """A person's `ralph task add` while the run goes on: written down for the run to commit."""
    added = ralph(project, "task", "add", json.dumps(MINE))
    assert "runs in this work tree: it commits this change" in added.stderr


def assert_mine_committed_as_theirs(project) -> None:
    (theirs,) = [
        c
        for c in git(project, "log", "--format=%H %s").splitlines()
        if c.endswith("ralph: task add t-mine Mine")
    ]
    assert git(project, "show", "--format=", "--name-only", theirs.split()[0]).split() == ["plan.jsonl"]


@pytest.mark.slow
def test_a_task_a_person_adds_during_investigate_is_neither_counted_nor_cut_as_the_agents(project, tmp_path):
    from ralph.usecases import issues

    add_tasks(project, "Parse input")
    ralph(project, "config", "set", "max_new_items", "1")  # the agent adds one: theirs would be a second
    issue = issues.add(project, "The report is wrong [slow]")["id"]
    running = construct(project, wait=False)
    wait_for(lambda: (tmp_path / "agent-state" / f"investigate-{issue}").exists(), "INVESTIGATE started")

    add_mine(project)
    out, err = running.communicate(timeout=120)

    assert running.returncode == 0, out + err
    assert_mine_committed_as_theirs(project)
    (investigated,) = [s for s in subjects(project) if s.startswith(f"ralph(investigate): {issue}")]
    assert "t-mine" not in investigated and "cut" not in investigated, investigated
    assert not [e for e in events(project) if e["event"] == "new_work_cut"]
    assert [r["t"] for r in plan_records(project, "HEAD") if r.get("id") == "t-mine"] == ["accept"]


@pytest.mark.slow
def test_a_task_a_person_adds_during_the_spec_check_is_not_what_the_check_found(repo, tmp_path):
    from tests.support.construct import with_app_spec

    project = with_app_spec(repo, "# App\n\n- Parse input\n\n[check-slow]\n")
    running = construct(project, wait=False)
    wait_for(lambda: (tmp_path / "agent-state" / "check").exists(), "CHECK started")

    add_mine(project)
    out, err = running.communicate(timeout=120)

    assert running.returncode == 0, out + err
    assert_mine_committed_as_theirs(project)
    checks = [s for s in subjects(project) if s.startswith("ralph(check): ")]
    assert checks[-1] == "ralph(check): specs/app.md: nothing missing", (
        checks
    )  # the first: theirs is not its finding
    assert [r["t"] for r in plan_records(project, "HEAD") if r.get("id") == "t-mine"] == ["accept"]


@pytest.mark.slow
def test_a_task_a_person_adds_during_an_investigate_run_that_is_stopped_stays(project, tmp_path):
    from ralph.usecases import issues

    add_tasks(project, "Parse input")
    issue = issues.add(project, "The report is wrong [investigate-hang]")["id"]
    running = construct(project, "--timeout", "3s", "--max-iterations", "1", wait=False)
    wait_for(lambda: (tmp_path / "agent-state" / "investigate.pid").exists(), "INVESTIGATE hangs")

    add_mine(project)
    out, err = running.communicate(timeout=120)

    assert f"INVESTIGATE {issue} stopped (timeout)" in err, out + err
    assert_mine_committed_as_theirs(project)
    mine = [r for r in plan_records(project, "HEAD") if r.get("id") == "t-mine"]
    assert [r["t"] for r in mine] in (["task"], ["accept"]), mine  # kept, whatever the run did with it
    names = [r.get("name") for r in plan_records(project, "HEAD")]
    assert f"Half of what {issue} found" not in names  # the stopped run's own addition is undone


@pytest.mark.slow
def test_a_persons_task_added_during_a_build_stays_when_the_run_is_stopped_by_a_signal(project, tmp_path):
    (task,) = add_tasks(project, "Slow to build [slow-build]")
    running = construct(project, wait=False)
    wait_for(lambda: (tmp_path / "agent-state" / f"{task}.building").exists(), "the build started")

    add_mine(project)
    running.send_signal(signal.SIGTERM)
    out, err = running.communicate(timeout=120)

    assert running.returncode == 143, out + err
    assert_mine_committed_as_theirs(project)
    assert [r["t"] for r in plan_records(project, "HEAD") if r.get("id") == "t-mine"] == ["task"]
    assert git(project, "status", "--porcelain", "--", "plan.jsonl") == ""
    again = construct(project)
    assert again.returncode == 0, again.stdout + again.stderr
    assert [r["t"] for r in plan_records(project, "HEAD") if r.get("id") == "t-mine"] == ["accept"]


def test_a_persons_task_added_during_plan_stays_when_the_run_is_killed(repo, tmp_path):
    """A kill -9 during PLAN: the next start undoes PLAN's half-written output, and keeps what a
    person added meanwhile with ralph's commands, committed as theirs."""
    from tests.support.construct import with_app_spec

    project = with_app_spec(repo, "# App [slow]\n\n- Parse input\n")  # PLAN takes 2 s
    running = construct(project, wait=False)
    wait_for(lambda: (tmp_path / "agent-state" / "plan").exists(), "PLAN started")
    add_mine(project)
    running.kill()  # SIGKILL: nothing of ralph's own cleanup runs
    running.communicate(timeout=60)
    wait_for(lambda: "Parse input" in (project / "plan.jsonl").read_text(), "the orphaned agent's output")

    again = construct(project)

    assert again.returncode == 0, again.stdout + again.stderr
    assert "PLAN" in again.stderr and "undone" in again.stderr, again.stderr
    assert_mine_committed_as_theirs(project)
    names = {r["name"]: r["t"] for r in plan_records(project, "HEAD") if r["t"] in ("task", "accept")}
    # PLAN's half-written task is undone; the spec counts as planned by hand (a person's task),
    # so the spec check is what finds what is missing.
    assert names == {"Mine": "accept"}, again.stderr


@pytest.mark.slow
def test_a_half_typed_hand_edit_during_verify_is_not_blamed_on_an_agent_and_is_kept(project, tmp_path):
    (task,) = add_tasks(project, "Slow to judge [slow-verify]")
    running = construct(project, wait=False)
    wait_for(lambda: (tmp_path / "agent-state" / f"verify-{task}").exists(), "the verifier started")

    with open(project / "plan.jsonl", "a") as plan:
        plan.write('{"t": "task", "id": "t-hand", "name": "half typ\n')  # saved mid-edit
    out, err = running.communicate(timeout=120)

    assert running.returncode == 0, out + err
    assert "the agent left plan.jsonl invalid" not in err, err
    assert "plan.jsonl was made invalid" in err and "not by a verifier" in err, err
    (restored,) = [e for e in events(project) if e["event"] == "plan_restored"]
    assert restored["by_agent"] is False
    assert '"name": "half typ' in (project / restored["broken_copy"]).read_text()  # kept for them
    assert [r["t"] for r in plan_records(project, "HEAD") if r.get("id") == task] == ["accept"]


@pytest.mark.slow
def test_a_task_a_person_adds_on_a_task_being_decomposed_is_committed_as_written_then_moved(
    project, tmp_path
):
    """While DECOMPOSE splits A, a person adds C needing A. C goes in under their message as they
    wrote it (needing A, which HEAD has), and the decomposition's commit moves it onto A's parts:
    every commit's plan is valid, and the run ends with C built."""
    from tests.support.construct import assert_clean

    (stubborn,) = add_tasks(project, "Stubborn [gate-always-fails] [slow-decompose]")
    running = construct(project, "--max-iterations", "8", wait=False)
    wait_for(lambda: (tmp_path / "agent-state" / f"decompose-{stubborn}").exists(), "DECOMPOSE started")

    added = ralph(project, "task", "add", json.dumps({"id": "t-cccccc", "name": "C", "deps": [stubborn]}))
    assert "it commits this change" in added.stderr
    out, err = running.communicate(timeout=120)

    assert running.returncode == 0, out + err
    (theirs,) = [
        c
        for c in git(project, "log", "--format=%H %s").splitlines()
        if c.endswith("ralph: task add t-cccccc C")
    ]
    at_theirs = [
        json.loads(line) for line in git(project, "show", f"{theirs.split()[0]}:plan.jsonl").splitlines()
    ]
    assert next(r for r in at_theirs if r.get("id") == "t-cccccc")["deps"] == [stubborn]  # as written
    assert any(s.startswith(f"ralph(decompose): {stubborn} -> ") for s in subjects(project))
    assert [r["t"] for r in plan_records(project, "HEAD") if r.get("id") == "t-cccccc"] == ["accept"]
    assert_clean(project)
