"""A parallel build's merge, the loop's commit of a build and PLAN's output cut in half (SIGKILL,
a full disk) at every git step, then `ralph construct` again: never a task accepted without its
code, never files left staged or untracked, never "unchanged" when something changed.

A wrapper `git` first on PATH counts the git commands the construct process runs in the
repository from the merge's first one (`rev-list --reverse`), and at the Nth runs it, then
SIGKILLs ralph (or fails it as a full disk would). The merge's steps are counted first
(test_the_merge_steps_are_counted): the parametrized kills cover each of them."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ralph.usecases import tasks
from tests.support.construct import construct, plan_records, wait_for, with_app_spec
from tests.support.gitrepo import git

# Each BUILD writes work/<task>.txt and marks its task done; VERIFY accepts; PLAN (when asked for)
# adds two tasks, or with $PLAN_HANGS, writes one and waits to be killed.
AGENT = r"""
import json, os, pathlib, sys, time
sys.path.insert(0, os.environ["AGENT_KIT_DIR"])
from agent_kit import ralph

stage, task = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID")
if stage == "PLAN":
    ralph("task", "add", json.dumps({"id": "t-one", "name": "One"}))
    if os.environ.get("PLAN_HANGS"):
        hang = pathlib.Path(os.environ["PLAN_HANGS"])  # whole or not there: the test reads it
        hang.with_name(hang.name + ".part").write_text(str(os.getpid()))
        os.replace(hang.with_name(hang.name + ".part"), hang)
        time.sleep(600)
    ralph("task", "add", json.dumps({"id": "t-two", "name": "Two"}))
elif stage == "BUILD":
    pathlib.Path("work").mkdir(exist_ok=True)
    pathlib.Path("work", task + ".txt").write_text("built " + task + "\n")
    if task == "t-one" and os.environ.get("BIG_FILE_BYTES"):  # incompressible: git stores it whole
        pathlib.Path("work", "t-one.bin").write_bytes(os.urandom(int(os.environ["BIG_FILE_BYTES"])))
    ralph("task", "done", task)
elif stage == "VERIFY":
    ralph("task", "accept", task)
"""

# Counts the construct process's git commands in the repository, from the merge's first one.
WRAPPER = r"""#!/bin/sh
case "$(tr '\0' ' ' < /proc/$PPID/cmdline)" in *" construct "*) ;; *) exec "$REAL_GIT" "$@";; esac
[ "$(pwd -P)" = "$CRASH_ROOT" ] || exec "$REAL_GIT" "$@"
if [ -n "$CRASH_ON" ]; then  # a pattern: the first command it matches runs, then ralph is killed
    case "$*" in $CRASH_ON) ;; *) exec "$REAL_GIT" "$@";; esac
    mkdir "$CRASH_DIR/killed" 2>/dev/null || exec "$REAL_GIT" "$@"
    echo "$*" >> "$CRASH_DIR/steps"
    "$REAL_GIT" "$@"
    code=$?
    kill -9 "$PPID"
    exit $code
fi
if [ ! -e "$CRASH_DIR/merging" ]; then
    case "$*" in "$CRASH_FROM"*) : > "$CRASH_DIR/merging";; *) exec "$REAL_GIT" "$@";; esac
fi
echo "$*" >> "$CRASH_DIR/steps"
n=$(wc -l < "$CRASH_DIR/steps")
[ "$n" -ge "${CRASH_AT:-999999}" ] || exec "$REAL_GIT" "$@"
if [ "$CRASH_MODE" = kill ]; then
    [ "$n" -eq "$CRASH_AT" ] || exec "$REAL_GIT" "$@"
    "$REAL_GIT" "$@"
    code=$?
    kill -9 "$PPID"
    exit $code
fi
echo "fatal: unable to write new index file: No space left on device" >&2
exit 128
"""

# The git commands of one build's merge, from the first to HEAD moved (counted with the wrapper:
# test_the_merge_steps_are_counted fails when the merge changes, and says the new count).
MERGE_STEPS = 12


@pytest.fixture
def project(repo: Path) -> Path:
    with_app_spec(repo, "# App\n\nTwo parts.\n")
    tasks.add(repo, [{"id": "t-one", "name": "One"}, {"id": "t-two", "name": "Two"}])
    return repo


def wrapper(tmp_path: Path) -> Path:
    folder = tmp_path / "wrapped-bin"
    folder.mkdir(exist_ok=True)
    (folder / "git").write_text(WRAPPER)
    (folder / "git").chmod(0o755)
    return folder


def run(
    project: Path,
    tmp_path: Path,
    crash: dict | None = None,
    parallel: int = 2,
    process: bool = True,
    **env: str,
):
    """`ralph construct --parallel 2` as a real process (in this one with process=False: a rerun,
    which the wrapper never kills); with `crash`, through the wrapper git, counting from the
    merge's first git command (or crash["CRASH_FROM"])."""
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    env = dict(env)
    if crash is not None:
        (tmp_path / "crash").mkdir(exist_ok=True)
        env |= {
            "PATH": f"{wrapper(tmp_path)}{os.pathsep}{os.environ['PATH']}",
            "REAL_GIT": shutil.which("git") or "git",
            "CRASH_ROOT": str(project.resolve()),
            "CRASH_DIR": str(tmp_path / "crash"),
            "CRASH_FROM": "rev-list --reverse ",
            **{key: str(value) for key, value in crash.items()},
        }
    return construct(project, "--parallel", str(parallel), agent=command, env=env, process=process)


def steps(tmp_path: Path) -> list[str]:
    path = tmp_path / "crash" / "steps"
    return path.read_text().splitlines() if path.exists() else []


def assert_every_task_accepted_with_its_code(project: Path) -> None:
    records = plan_records(project)
    accepted = {r["id"]: r for r in records if r["t"] == "accept"}
    assert set(accepted) == {"t-one", "t-two"}, records
    for task_id in accepted:
        assert git(project, "show", f"HEAD:work/{task_id}.txt") == f"built {task_id}\n", task_id
        # The commit recorded as its build holds its code.
        commit = accepted[task_id].get("commit")
        assert commit and git(project, "show", f"{commit}:work/{task_id}.txt"), accepted[task_id]
    assert git(project, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(project, "show", "HEAD:plan.jsonl") == (project / "plan.jsonl").read_text()


def assert_nothing_left(project: Path, said: str = "", merged: str | None = None) -> None:
    """No worktree, no record of a change; the merged build's branch deleted. A build killed
    before its merge keeps its branch (unmerged work is a person's to judge), and the run says so."""
    assert len(git(project, "worktree", "list", "--porcelain").strip().split("\n\n")) == 1
    for branch in git(project, "branch", "--list", "ralph/*", "--format=%(refname:short)").split():
        assert branch != f"ralph/{merged}"
        assert f"{branch}: a branch of a ralph run with 1 commit not merged" in said, said
    assert not records(project)


def records(project: Path) -> list[dict]:
    """The records of changes under way (ralph.store.intent)."""
    common = Path(git(project, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    return [json.loads(path.read_text()) for path in (common / "ralph" / "intent").glob("*.json")]


@pytest.mark.slow  # MERGE_STEPS bounds the kill-at-any-step tests, and the doctor test below: all slow
def test_the_merge_steps_are_counted(project: Path, tmp_path: Path):
    done = run(project, tmp_path, crash={"CRASH_MODE": "count"})
    assert done.returncode == 0, done.stderr
    counted = steps(tmp_path)
    moved = next(
        i for i, step in enumerate(counted) if step.startswith("update-ref -m ") and " HEAD " in step
    )
    assert moved + 1 == MERGE_STEPS, counted[: moved + 1]
    assert counted[MERGE_STEPS - 2].startswith("read-tree -m -u "), counted[:MERGE_STEPS]


def kill_and_rerun(project: Path, tmp_path: Path, at: int) -> None:
    killed = run(project, tmp_path, crash={"CRASH_MODE": "kill", "CRASH_AT": at})
    assert killed.returncode == -signal.SIGKILL, (at, killed.stdout, killed.stderr)
    assert len(steps(tmp_path)) == at
    merging = [record["data"]["task"] for record in records(project) if record["kind"] == "merge"]
    again = run(project, tmp_path)
    assert again.returncode == 0, (at, again.stdout, again.stderr)
    assert "unchanged" not in again.stdout + again.stderr
    assert_every_task_accepted_with_its_code(project)
    assert_nothing_left(project, again.stdout + again.stderr, *merging)
    if merging:
        assert f"a merge of {merging[0]} into " in again.stderr, again.stderr


@pytest.mark.slow
def test_a_kill_between_read_tree_and_update_ref_is_finished_by_the_next_run(project: Path, tmp_path: Path):
    """The issue's case: index and work tree at the merge, HEAD behind. The rerun moves HEAD,
    records the build's commit on its task, and deletes the build's branch as merged."""
    kill_and_rerun(project, tmp_path, MERGE_STEPS - 1)
    assert steps(tmp_path)[-1].startswith("read-tree -m -u "), steps(tmp_path)  # killed right after it


@pytest.mark.slow
@pytest.mark.parametrize("at", range(1, MERGE_STEPS + 1))
def test_a_kill_at_any_git_step_of_a_merge_ends_right(project: Path, tmp_path: Path, at: int):
    kill_and_rerun(project, tmp_path, at)


def disk_full_then_rerun(project: Path, tmp_path: Path, at: int) -> None:
    full = run(project, tmp_path, crash={"CRASH_MODE": "enospc", "CRASH_AT": at})
    assert full.returncode != 0, full.stdout
    said = full.stdout + full.stderr
    moved = any(
        step.startswith("update-index") or step.startswith("read-tree") for step in steps(tmp_path)[: at - 1]
    )
    if moved:  # something had changed when the disk filled: never "unchanged"
        assert "unchanged" not in said, said
    again = run(project, tmp_path)
    assert again.returncode == 0, (at, again.stdout, again.stderr)
    assert_every_task_accepted_with_its_code(project)
    assert_nothing_left(project, again.stdout + again.stderr)


@pytest.mark.slow
def test_a_full_disk_at_read_tree_undoes_the_merge_and_says_so(project: Path, tmp_path: Path):
    disk_full_then_rerun(project, tmp_path, MERGE_STEPS - 1)


@pytest.mark.slow
@pytest.mark.parametrize("at", range(1, MERGE_STEPS + 1))
def test_a_full_disk_at_any_git_step_of_a_merge_ends_right(project: Path, tmp_path: Path, at: int):
    disk_full_then_rerun(project, tmp_path, at)


# A serial build's commit: `git add` of its files, what is staged with the plan's blobs before and
# after (for the operations behind it: one `diff --cached --raw`; the two blobs, on which ralph's
# own record of operations is replayed before it becomes trailers, are read from their loose object
# files), `git commit`, then the next git command (HEAD is read from the ref files, and the
# parent's date is known). Counted with the wrapper:
# test_the_serial_commit_steps_are_counted fails when the commit changes.
COMMIT_STEPS = 4


@pytest.mark.slow  # COMMIT_STEPS bounds the slow kill-at-any-step tests; the fast one (at 1) checks its step
def test_the_serial_commit_steps_are_counted(project: Path, tmp_path: Path):
    done = run(project, tmp_path, crash={"CRASH_MODE": "count", "CRASH_FROM": "add -A -- "}, parallel=1)
    assert done.returncode == 0, done.stderr
    counted = steps(tmp_path)
    committed = next(i for i, step in enumerate(counted) if step.startswith("commit --no-verify"))
    assert committed + 2 == COMMIT_STEPS, counted[: committed + 2]


@pytest.mark.parametrize(
    "at", [pytest.param(at, marks=[pytest.mark.slow] * (at != 1)) for at in range(1, COMMIT_STEPS + 1)]
)
def test_a_kill_at_any_git_step_of_a_serial_builds_commit_ends_right(project: Path, tmp_path: Path, at: int):
    """At 1 the issue's case: the build's files staged, the plan saying the task is built; the
    rerun accepted it with its code staged forever. Now the rerun commits them first."""
    crash = {"CRASH_MODE": "kill", "CRASH_AT": at, "CRASH_FROM": "add -A -- "}
    killed = run(project, tmp_path, crash=crash, parallel=1)
    assert killed.returncode == -signal.SIGKILL, (killed.stdout, killed.stderr)
    assert steps(tmp_path)[0].startswith("add -A -- ") and len(steps(tmp_path)) == at
    if at == COMMIT_STEPS:
        assert steps(tmp_path)[-2].startswith("commit --no-verify")
    again = run(project, tmp_path, parallel=1, process=False)
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert_every_task_accepted_with_its_code(project)
    assert_nothing_left(project, again.stdout + again.stderr)
    # Killed inside the commit, the rerun finishes it; killed at the git command after it (the
    # commit made and its record closed), there is nothing of it to finish.
    assert ("a commit of t-" in again.stderr) == (at < COMMIT_STEPS), again.stderr


# A worktree's set-up and removal, for a build (on a branch of its own) and for a verifier
# (detached): ralph is killed right after the git command of each step.
WORKTREE_STEPS = {
    "build set up": "worktree add -q -b ralph/t-* *",  # hooks off: every git call of ralph's
    "build removed": "worktree remove --force --force *ralph-build-*",
    "build branch deleted": "update-ref -d refs/heads/ralph/t-*",
    "verifier set up": "worktree add -q --detach *ralph-verify-*",
    "verifier removed": "worktree remove --force --force *ralph-verify-*",
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "step",
    [pytest.param(step, marks=[pytest.mark.slow] * (step != "build set up")) for step in WORKTREE_STEPS],
)
def test_a_kill_at_each_step_of_a_worktrees_set_up_and_removal_leaves_nothing_behind(
    project: Path, tmp_path: Path, step: str
):
    """The worktree and its branch are ralph's by record (ralph.store.owned) before git makes
    them, and forgotten only once gone: the rerun removes what the kill left, builds every task
    with its code, and no folder of ralph's stays in the temporary folder."""
    temp = tmp_path / "temp"
    temp.mkdir()
    crash = {"CRASH_MODE": "kill", "CRASH_ON": WORKTREE_STEPS[step]}
    killed = run(project, tmp_path, crash=crash, TMPDIR=str(temp))
    assert killed.returncode == -signal.SIGKILL, (step, killed.stdout, killed.stderr)
    assert len(steps(tmp_path)) == 1, steps(tmp_path)
    again = run(project, tmp_path, TMPDIR=str(temp))
    assert again.returncode == 0, (step, again.stdout, again.stderr)
    assert_every_task_accepted_with_its_code(project)
    said = again.stdout + again.stderr
    assert len(git(project, "worktree", "list", "--porcelain").strip().split("\n\n")) == 1
    assert not records(project)
    assert [p.name for p in temp.iterdir() if p.name.startswith("ralph-")] == [], said
    left = git(project, "branch", "--list", "ralph/*", "--format=%(refname:short)").split()
    for branch in left:  # a build killed before its merge: unmerged work is a person's to judge
        assert f"{branch}: a branch of a ralph run with 1 commit not merged" in said, said


@pytest.fixture
def small_disk(repo: Path, tmp_path: Path):
    """The project on a tmpfs of its own, a few megabytes (root only; skipped where mount fails)."""
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount_point)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        project = mount_point / "repo"
        shutil.copytree(repo, project, symlinks=True)
        git(project, "update-index", "-q", "--refresh")
        with_app_spec(project, "# App\n\nTwo parts.\n")
        tasks.add(project, [{"id": "t-one", "name": "One"}, {"id": "t-two", "name": "Two"}])
        yield project, mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


@pytest.mark.slow
def test_a_real_full_disk_during_a_merge_changes_nothing_and_says_so(small_disk, tmp_path: Path):
    """A build's file that fits in git's object store but not twice (its checkout in the work
    tree): git fails in the merge's `read-tree`, half the work tree written. The merge is undone
    at once, and the error says nothing was merged; with room again, the rerun ends right."""
    project, mount_point = small_disk
    free = os.statvfs(project).f_bavail * os.statvfs(project).f_frsize
    outside = tmp_path / "worktrees"  # the builds' worktrees on the big disk: only the merge fills this one
    outside.mkdir()
    big = int(free * 0.6)
    full = run(project, tmp_path, BIG_FILE_BYTES=str(big), TMPDIR=str(outside))
    said = full.stdout + full.stderr
    assert full.returncode != 0, said
    assert "git read-tree failed" in said and "unchanged" not in said, said
    assert "nothing was merged: HEAD, the index and the work tree are as they were" in said, said
    assert "work/" not in git(project, "status", "--porcelain", "--untracked-files=all")  # none left behind
    subprocess.run(["mount", "-o", "remount,size=64m", str(mount_point)], check=True)
    again = run(project, tmp_path, BIG_FILE_BYTES=str(big), TMPDIR=str(outside))
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert_every_task_accepted_with_its_code(project)
    assert_nothing_left(project, again.stdout + again.stderr)
    assert int(git(project, "cat-file", "-s", "HEAD:work/t-one.bin")) == big


@pytest.mark.slow
def test_a_kill_during_plan_is_undone_and_the_rerun_plans_again(repo: Path, tmp_path: Path):
    """The issue's case: PLAN killed with its tasks written but not committed; every rerun at
    --parallel built them in worktrees that had only the committed plan (`no task t-...`)."""
    project = with_app_spec(repo, "# App\n\nTwo parts.\n")
    hang = tmp_path / "plan-agent.pid"
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    running = construct(project, "--parallel", "2", agent=command, wait=False, env={"PLAN_HANGS": str(hang)})
    try:
        wait_for(hang.exists, "PLAN's agent waits")
        running.kill()  # SIGKILL: the loop gets no say
        running.communicate()
    finally:
        if hang.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(hang.read_text()), signal.SIGKILL)
    assert "t-one" in (project / "plan.jsonl").read_text()  # written, never committed
    again = run(project, tmp_path)
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert "PLAN of specs/app.md (agent running), interrupted: undone" in again.stderr, again.stderr
    assert_every_task_accepted_with_its_code(project)
    assert_nothing_left(project)
    kept = list((project / "build" / "ralph-logs" / "doctor").glob("plan-app*.plan.jsonl"))
    assert len(kept) == 1 and '"t-one"' in kept[0].read_text()


# The git commands of PLAN's commit, of plan.jsonl alone: the look for changes beside it, the commit
# (its blob and tree written by ralph), HEAD moved, the index updated, then the next git command.
PLAN_COMMIT_STEPS = ["status", "commit-tree", "update-ref", "add", "show-ref"]


@pytest.mark.slow
@pytest.mark.parametrize("at", range(1, len(PLAN_COMMIT_STEPS) + 1))
def test_a_kill_at_any_git_step_of_plans_commit_keeps_its_tasks_once(repo: Path, tmp_path: Path, at: int):
    """PLAN's agent had finished: its tasks are committed by the rerun (or were), never planned
    twice, never left uncommitted for builds in worktrees to miss."""
    project = with_app_spec(repo, "# App\n\nTwo parts.\n")
    crash = {"CRASH_MODE": "kill", "CRASH_AT": at, "CRASH_FROM": "status --porcelain=v1 "}
    killed = run(project, tmp_path, crash=crash)
    assert killed.returncode == -signal.SIGKILL, (killed.stdout, killed.stderr)
    assert [step.split()[0] for step in steps(tmp_path)] == PLAN_COMMIT_STEPS[:at], steps(tmp_path)
    assert at < 3 or steps(tmp_path)[2].startswith("update-ref -m ralph(plan): "), steps(tmp_path)
    again = run(project, tmp_path)
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert_every_task_accepted_with_its_code(project)
    assert_nothing_left(project, again.stdout + again.stderr)
    added = [r["id"] for r in plan_records(project) if r["t"] == "task" or r["t"] == "accept"]
    assert sorted(added) == ["t-one", "t-two"]  # planned once
    plans = [s for s in git(project, "log", "--format=%s").splitlines() if s.startswith("ralph(plan)")]
    assert len(plans) <= 1, plans


# `make test` has it in usecases/test_doctor.py (its words: tests/cli/golden/doctor/interrupted.yml):
# test_an_interrupted_merge_of_a_build_is_finished_by_fix_its_commit_recorded_its_branch_deleted
@pytest.mark.slow
def test_doctor_reports_an_interrupted_merge_and_fix_finishes_it(project: Path, tmp_path: Path):
    killed = run(project, tmp_path, crash={"CRASH_MODE": "kill", "CRASH_AT": MERGE_STEPS - 1})
    assert killed.returncode == -signal.SIGKILL
    head = git(project, "rev-parse", "HEAD")
    (merging,) = [record["data"]["task"] for record in records(project)]
    found = json.loads(ralph_doctor(project, "--json").stdout)["findings"]
    interrupted = [f for f in found if f["kind"] == "interrupted"]
    assert len(interrupted) == 1 and interrupted[0]["fix"].startswith("finishes it"), found
    assert git(project, "rev-parse", "HEAD") == head  # a report changes nothing
    fixed = ralph_doctor(project, "--fix")
    assert "fixed (--fix finished it: HEAD at " in fixed.stdout, fixed.stdout
    assert git(project, "rev-parse", "HEAD") != head
    # doctor commits nothing: the build's commit is recorded on its task for the loop's next commit.
    assert git(project, "status", "--porcelain", "--untracked-files=all") == " M plan.jsonl\n"
    task = next(r for r in plan_records(project) if r.get("id") == merging)
    assert task["s"] == "d" and git(project, "show", f"{task['commit']}:work/{merging}.txt")
    assert f"ralph/{merging}" not in git(project, "branch", "--list", "ralph/*")  # merged: deleted


def ralph_doctor(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ralph", "-C", str(project), "doctor", *args], capture_output=True, text=True
    )


# ralph's own write failing for want of room, in a real process: the record of the build's commit
# (ralph.store.intent), the first thing its commit writes.
NO_ROOM_FOR_THE_COMMIT = r"""
import errno, sys
from ralph.store import intent

real = intent.begin

def begin(repo, kind, root, **data):
    if kind is intent.IntentKind.COMMIT and data.get("task"):
        raise OSError(errno.ENOSPC, "No space left on device", str(intent.folder(repo)))
    return real(repo, kind, root, **data)

intent.begin = begin
from ralph.cli.main import main
sys.argv[0] = "ralph"
main()
"""


def full_disk_run(project: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    launcher = tmp_path / "no_room.py"
    launcher.write_text(NO_ROOM_FOR_THE_COMMIT)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    argv = [
        sys.executable, str(launcher), "-C", str(project), "construct", "specs/app.md", "--agent", "command",
        "--agent-cmd", command, "--gate", "", "--parallel", "1", "--timeout", "30s",
    ]  # fmt: skip
    env = {**os.environ, "AGENT_KIT_DIR": str(Path(__file__).parents[1] / "support" / "scripts")}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)


def assert_disk_full_said_once(full: subprocess.CompletedProcess) -> None:
    assert full.returncode == 14, (full.stdout, full.stderr)
    said = [line for line in (full.stdout + full.stderr).splitlines() if "No space left" in line]
    assert len(said) == 1 and said[0].startswith("ralph: DISK_FULL: the disk is full ("), (
        full.stdout,
        full.stderr,
    )
    assert "Traceback" not in full.stderr


@pytest.mark.slow
def test_a_full_disk_as_ralph_records_a_builds_commit_is_disk_full_and_the_rerun_undoes_the_build(
    project: Path, tmp_path: Path
):
    """The build's files were left and its record closed: the next run called them the person's
    uncommitted changes. Now the build stays recorded as interrupted: doctor says --fix undoes it,
    the rerun undoes it onto its draft and builds the task again."""
    full = full_disk_run(project, tmp_path)
    assert_disk_full_said_once(full)
    assert [record["kind"] for record in records(project)] == ["build"]
    found = json.loads(ralph_doctor(project, "--json").stdout)["findings"]
    assert [(f["kind"], f["fix"].split(" (")[0]) for f in found] == [("interrupted", "undoes it")], found
    again = run(project, tmp_path, parallel=1)
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert "uncommitted changes" not in again.stderr
    assert "the build of t-one on " in again.stderr and "interrupted: undone" in again.stderr, again.stderr
    assert_every_task_accepted_with_its_code(project)
    assert not records(project)


@pytest.mark.slow
def test_a_full_disk_as_git_stages_a_builds_commit_is_disk_full_and_the_rerun_commits_it(
    project: Path, tmp_path: Path
):
    full = run(
        project,
        tmp_path,
        crash={"CRASH_MODE": "enospc", "CRASH_AT": 1, "CRASH_FROM": "add -A -- "},
        parallel=1,
    )
    assert_disk_full_said_once(full)
    assert sorted(record["kind"] for record in records(project)) == ["build", "commit"]
    said = ralph_doctor(project).stdout
    assert (
        "the build of t-one on " in said
        and "interrupted by a full disk (its ralph run ended DISK_FULL)" in said
    )
    again = run(project, tmp_path, parallel=1)
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert "uncommitted changes" not in again.stderr
    assert_every_task_accepted_with_its_code(project)
    assert not records(project)
