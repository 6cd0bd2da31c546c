"""Issue 23, drafts: a build the loop stopped keeps its work on ralph/draft/<task id> (beside the
patch in the logs), recorded on the task, listed by `ralph status`, named in the task's next build
prompt, and deleted once the task is accepted. The person's work tree and index stay as they were.
Real processes: ralph, the fake agent, git."""

from __future__ import annotations

import json
import shlex
import signal
import sys
from pathlib import Path

import pytest

from ralph.store import owned
from ralph.store.git import Repo
from ralph.store.owned import OwnedKind
from tests.support.construct import add_tasks, construct, events, plan_records, wait_for
from tests.support.gitrepo import git


def test_an_interrupted_build_is_kept_as_a_draft_offered_to_the_next_build(project, tmp_path):
    (task,) = add_tasks(project, "Half [work-then-hang-once]")
    (project / "mine.txt").write_text("a person's staged work\n")
    git(project, "add", "mine.txt")
    (project / "check_work.py").write_text((project / "check_work.py").read_text() + "# a person's edit\n")
    index_before = git(project, "diff", "--cached")
    tree_before = git(project, "diff")
    state = tmp_path / "agent-state"
    running = construct(project, "--allow-dirty", wait=False)
    wait_for(lambda: (state / f"{task}.agent.pid").exists(), "the agent never started")

    running.send_signal(signal.SIGINT)
    out, err = running.communicate(timeout=90)

    assert running.returncode == 130, out + err
    draft = f"ralph/draft/{task}"
    assert git(project, "show", f"{draft}:work/{task}.txt") == f"ok {task} half way\n"
    assert "mine.txt" not in git(project, "ls-tree", "-r", "--name-only", draft)
    assert git(project, "diff", "--cached") == index_before  # the person's index, as it was
    assert git(project, "diff") == tree_before  # and their unstaged edit
    assert not (project / "work" / f"{task}.txt").exists()  # set aside: the next build starts clean
    (record,) = [r for r in plan_records(project, "HEAD") if r.get("id") == task]
    assert record["draft"] == draft
    status = json.loads(_status(project))
    assert status["drafts"] == [{"task": task, "branch": draft}]

    again = construct(project, "--allow-dirty")

    assert again.returncode == 0, again.stdout + again.stderr
    prompt = (state / f"{task}.build-2.prompt").read_text()
    assert f"git diff HEAD...{draft}" in prompt
    assert not Repo(project).worktrees.branch_exists(draft)  # accepted: ralph's draft is gone
    assert [o for o in owned.recorded(Repo(project)) if o.kind is OwnedKind.DRAFT] == []


@pytest.mark.slow
def test_a_persons_own_branch_named_like_the_draft_survives(project, tmp_path):
    (task,) = add_tasks(project, "Half [work-then-hang-once]")
    git(project, "branch", f"ralph/draft/{task}")
    theirs = git(project, "rev-parse", f"ralph/draft/{task}").strip()
    state = tmp_path / "agent-state"
    running = construct(project, wait=False)
    wait_for(lambda: (state / f"{task}.agent.pid").exists(), "the agent never started")

    running.send_signal(signal.SIGINT)
    out, err = running.communicate(timeout=90)

    assert running.returncode == 130, out + err
    assert git(project, "rev-parse", f"ralph/draft/{task}").strip() == theirs
    kept = f"ralph/draft/{task}-2"
    assert git(project, "show", f"{kept}:work/{task}.txt") == f"ok {task} half way\n"

    again = construct(project)

    assert again.returncode == 0, again.stdout + again.stderr
    assert f"git diff HEAD...{kept}" in (state / f"{task}.build-2.prompt").read_text()
    assert git(project, "rev-parse", f"ralph/draft/{task}").strip() == theirs  # never ralph's to delete
    assert not Repo(project).worktrees.branch_exists(kept)


def _status(root) -> str:
    from tests.support.cli import ralph_in_process

    done = ralph_in_process(root, "status", "--json")
    assert done.returncode == 0, done.stderr
    return done.stdout


# `make test` has it without a run, in
# test_a_draft_kept_by_a_runner_goes_to_the_remote_and_there_too_once_its_task_is_accepted
# (a run's interruption keeping the draft, and its verdict deleting it, in a real run:
# test_an_interrupted_build_is_kept_as_a_draft_offered_to_the_next_build)
@pytest.mark.slow
def test_a_runners_draft_is_pushed_and_deleted_on_the_remote_once_its_task_is_accepted(repo, tmp_path):
    shared, clone, task = _interrupted_runner(repo, tmp_path)
    draft = f"ralph/draft/{task}"
    pushed = git(shared.origin, "rev-parse", f"refs/heads/{draft}").strip()
    assert pushed == git(clone, "rev-parse", draft).strip()

    again = construct(clone, "--remote", "origin", env={"FAKE_AGENT_STATE": str(tmp_path / "agent-state")})

    assert again.returncode == 0, again.stdout + again.stderr
    assert not Repo(clone).worktrees.branch_exists(draft)
    assert git(shared.origin, "branch", "--list", draft) == ""  # gone where the runners share it too


def test_a_draft_kept_by_a_runner_goes_to_the_remote_and_there_too_once_its_task_is_accepted(
    shared, tmp_path
):
    """The loop's work tree with the runners' coordinator, on real git, no run: a draft kept (as
    a run interrupted keeps one) goes to the remote as it is made; its task accepted, it is
    deleted there as here while it is the commit this runner pushed (a lease): a draft someone
    pushed onto stays theirs."""
    from ralph.loop.share.remote import RemoteCoordinator
    from tests.support.work_trees import loop_work_tree

    runner, person = shared.clone("runner"), shared.clone("a-person")
    tree = loop_work_tree(
        runner, tmp_path / "events.jsonl", RemoteCoordinator(runner, None, "origin", "runner")
    )
    drafted = {}
    for task in ("t-one", "t-two"):
        (runner / f"{task}.txt").write_text(f"{task} half way\n")
        drafted[task] = tree.keep_draft(task)
        tree.set_aside(Path("build") / "ralph-logs" / task)
    for task, draft in drafted.items():
        assert draft == f"ralph/draft/{task}"
        assert git(shared.origin, "rev-parse", f"refs/heads/{draft}") == git(runner, "rev-parse", draft)
    git(person, "fetch", "-q", "origin", "ralph/draft/t-two:ralph/draft/t-two")
    git(person, "switch", "-q", "ralph/draft/t-two")
    git(person, "commit", "-q", "--allow-empty", "-m", "a person's work on the draft")
    git(person, "push", "-q", "origin", "ralph/draft/t-two")
    theirs = git(person, "rev-parse", "HEAD")

    tree.drop_drafts([{"id": "t-one"}, {"id": "t-two"}])

    assert not Repo(runner).worktrees.branch_exists("ralph/draft/t-one")
    assert git(shared.origin, "branch", "--list", "ralph/draft/t-one") == ""  # gone where runners share it
    assert git(shared.origin, "rev-parse", "refs/heads/ralph/draft/t-two") == theirs  # theirs: kept


# `make test` has it without a run, in
# test_a_draft_kept_by_a_runner_goes_to_the_remote_and_there_too_once_its_task_is_accepted
@pytest.mark.slow
def test_a_draft_someone_pushed_onto_is_kept_on_the_remote(repo, tmp_path):
    shared, clone, task = _interrupted_runner(repo, tmp_path)
    draft = f"ralph/draft/{task}"
    other = shared.clone("a-person")
    git(other, "fetch", "-q", "origin", f"{draft}:{draft}")
    git(other, "switch", "-q", draft)
    (other / "theirs.txt").write_text("a person's work on the draft\n")
    git(other, "add", "theirs.txt")
    git(other, "commit", "-qm", "theirs")
    git(other, "push", "-q", "origin", draft)
    theirs = git(other, "rev-parse", "HEAD").strip()

    again = construct(clone, "--remote", "origin", env={"FAKE_AGENT_STATE": str(tmp_path / "agent-state")})

    assert again.returncode == 0, again.stdout + again.stderr
    assert git(shared.origin, "rev-parse", f"refs/heads/{draft}").strip() == theirs


def _interrupted_runner(repo, tmp_path):
    """A runner on a shared remote, interrupted in the middle of a build: its draft is pushed."""
    from tests.support.construct import with_app_spec
    from tests.support.gitrepo import Shared

    with_app_spec(repo, "# App\n")
    (task,) = add_tasks(repo, "Half [work-then-hang-once]")
    shared = Shared(repo, tmp_path)
    clone = shared.clone("runner")
    state = tmp_path / "agent-state"
    running = construct(clone, "--remote", "origin", env={"FAKE_AGENT_STATE": str(state)}, wait=False)
    wait_for(lambda: (state / f"{task}.agent.pid").exists(), "the agent never started")
    running.send_signal(signal.SIGINT)
    out, err = running.communicate(timeout=90)
    assert running.returncode == 130, out + err
    return shared, clone, task


@pytest.mark.slow
def test_a_killed_tasks_draft_is_offered_to_its_subtasks_and_goes_once_they_are_accepted(project, tmp_path):
    (task,) = add_tasks(project, "Stubborn [gate-always-fails]")
    draft = f"ralph/draft/{task}"

    done = construct(project, "--max-iterations", "6")

    assert done.returncode == 0, done.stdout + done.stderr
    state = tmp_path / "agent-state"
    prompts = sorted(state.glob("t-*.build-1.prompt"))
    subtask_prompts = [p.read_text() for p in prompts if not p.name.startswith(f"{task}.")]
    assert len(subtask_prompts) == 2  # DECOMPOSE split it in two
    for prompt in subtask_prompts:
        assert f"git diff HEAD...{draft}" in prompt  # the killed build's work, offered to each part
        assert "or of the task it was split from" in prompt
    assert not Repo(project).worktrees.branch_exists(draft)  # both parts accepted: nobody is offered it now
    assert [o for o in owned.recorded(Repo(project)) if o.kind is OwnedKind.DRAFT] == []


@pytest.mark.slow
def test_another_runner_builds_from_a_pushed_draft_and_its_keeper_deletes_it_once_accepted(repo, tmp_path):
    shared, clone, task = _interrupted_runner(repo, tmp_path)
    draft = f"ralph/draft/{task}"
    pushed = git(shared.origin, "rev-parse", f"refs/heads/{draft}").strip()
    other = shared.clone("runner-b")
    state = {"FAKE_AGENT_STATE": str(tmp_path / "agent-state")}

    built = construct(other, "--remote", "origin", env=state)

    assert built.returncode == 0, built.stdout + built.stderr
    prompt = (tmp_path / "agent-state" / f"{task}.build-2.prompt").read_text()
    assert f"git diff HEAD...origin/{draft}" in prompt  # a ref this clone has: the remote's copy
    assert git(other, "rev-parse", f"origin/{draft}").strip() == pushed
    assert not Repo(other).worktrees.branch_exists(draft)  # not made a branch of here: not this runner's

    again = construct(clone, "--remote", "origin", env=state)  # its keeper catches up

    assert again.returncode == 0, again.stdout + again.stderr
    assert not Repo(clone).worktrees.branch_exists(draft)
    assert git(shared.origin, "branch", "--list", draft) == ""


SPLITTING_AGENT = r"""
import json, os, pathlib, shlex, subprocess, sys
ralph = shlex.split(os.environ["RALPH_BIN"])
def run(*args):
    return subprocess.run([*ralph, *args], check=True, capture_output=True, text=True).stdout
stage, task = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID", "")
if stage == "BUILD" and task == "t-parent":  # half of it, never done: set aside with a draft
    pathlib.Path("work").mkdir(exist_ok=True)
    pathlib.Path("work/parent.txt").write_text("ok half of the parent\n")
elif stage == "BUILD" and task == "t-parent-b":  # gives up, changing nothing: split again, no draft
    print("I give up")
elif stage == "BUILD":
    pathlib.Path("work").mkdir(exist_ok=True)
    pathlib.Path(f"work/{task}.txt").write_text(f"ok {task}\n")
    run("task", "done")
elif stage == "DECOMPOSE":
    parts = [{"id": f"{task}-{n}", "name": f"{task} part {n}", "parent": task} for n in "ab"]
    run("task", "add", json.dumps(parts))
    run("task", "delete", task)
elif stage == "VERIFY":
    run("task", "accept")
"""


@pytest.mark.slow
def test_a_draft_offered_through_two_splits_goes_once_the_last_part_is_accepted(project, tmp_path):
    from ralph.usecases import tasks

    tasks.add(project, [{"id": "t-parent", "name": "Parent", "accept": "work file says ok"}])
    agent = tmp_path / "splitting_agent.py"
    agent.write_text(SPLITTING_AGENT)

    done = construct(project, "--max-iterations", "12", agent=f"{shlex.quote(sys.executable)} {agent}")

    assert done.returncode == 0, done.stdout + done.stderr
    accepted = {r["id"] for r in plan_records(project, "HEAD") if r["t"] == "accept"}
    assert accepted == {"t-parent-a", "t-parent-b-a", "t-parent-b-b"}, accepted
    drafted = [e for e in events(project) if e["event"] == "draft_kept"]
    assert [e["item"] for e in drafted] == ["t-parent"]  # the parent's only
    assert not Repo(project).worktrees.branch_exists("ralph/draft/t-parent")
    assert [o for o in owned.recorded(Repo(project)) if o.kind is OwnedKind.DRAFT] == []


def test_a_build_killed_outright_is_undone_at_the_next_start_and_never_taken_for_built(project, tmp_path):
    """kill -9 of the loop while an agent builds in its work tree: the orphaned agent still writes
    its file and marks the task done. The next start undoes that build (its work on the task's
    draft), and the task is built and gated again, its file committed by its own build."""
    (task,) = add_tasks(project, "Slow [slow-build]")
    state = tmp_path / "agent-state"
    running = construct(project, wait=False)
    wait_for(lambda: (state / f"{task}.building").exists(), "the build started")
    running.kill()  # SIGKILL: nothing of ralph's own cleanup runs
    running.communicate(timeout=60)
    wait_for(lambda: '"s": "d"' in (project / "plan.jsonl").read_text(), "the orphaned agent marked it done")

    again = construct(project)

    assert again.returncode == 0, again.stdout + again.stderr
    assert f"the build of {task} on" in again.stderr and "interrupted: undone" in again.stderr, again.stderr
    draft = f"ralph/draft/{task}"
    assert f"git diff HEAD...{draft}" in (state / f"{task}.build-2.prompt").read_text()  # offered
    assert not Repo(project).worktrees.branch_exists(draft)  # and gone once the task was accepted
    assert (state / f"build-{task}").read_text() == "2"  # built again, not taken for built
    (build,) = [c for c in git(project, "log", "--format=%H %s").splitlines() if f"ralph(build): {task}" in c]
    assert f"work/{task}.txt" in git(project, "show", "--format=", "--name-only", build.split()[0]).split()
    assert git(project, "status", "--porcelain") == ""
