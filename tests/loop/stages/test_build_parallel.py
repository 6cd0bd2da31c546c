"""Parallel BUILD: up to --parallel builds at once, each in a worktree on branch ralph/<task id>,
merged into the loop's branch as each finishes; file scope; merge conflicts as verdicts."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ralph.usecases import tasks
from tests.support.construct import (
    add_tasks,
    assert_clean,
    construct,
    events,
    gone,
    plan_records,
    subjects,
    wait_for,
)
from tests.support.gitrepo import git
from tests.support.hooks import config_set
from tests.support.leftovers import persons_ralph_names


@pytest.fixture
def project(app_repo: Callable[[str], Path]) -> Path:
    return app_repo("# App\n\nParts that can be built side by side.\n")


# BUILD writes work/<task>.txt (and what the task's name asks for), waits until $TOGETHER builds
# have started (a file each in $TOGETHER_DIR; at most 30 s: a loop that never runs that many at once
# fails the test's assertions, not the wait) and $BUILD_SLEEP seconds more, marks the task done and
# appends what it saw to $RUNS; VERIFY accepts. The handshake, not a sleep, makes builds overlap,
# whatever the machine's load.
AGENT = r"""
import json, os, pathlib, sys, time
sys.path.insert(0, os.environ["AGENT_KIT_DIR"])
from agent_kit import ralph

stage, task = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID")
if stage == "BUILD":
    start = time.time()
    if os.environ.get("STARTED"):
        part = pathlib.Path(os.environ["STARTED"] + "-" + task + ".part")  # beside: the test lists the folder
        part.write_text(str(os.getpid()))
        os.replace(part, pathlib.Path(os.environ["STARTED"], task))
    name = json.loads(ralph("task", "show", task))["name"]
    pathlib.Path("work").mkdir(exist_ok=True)
    pathlib.Path("work", task + ".txt").write_text("ok\n")
    if "[shared]" in name:
        pathlib.Path("shared.txt").write_text(task + "\n")
    if "[stray]" in name:
        pathlib.Path("stray.txt").write_text("outside the scope\n")
    if os.environ.get("TOGETHER_DIR"):
        together = pathlib.Path(os.environ["TOGETHER_DIR"])
        together.mkdir(exist_ok=True)
        (together / task).touch()
        deadline = time.monotonic() + 30
        while len(list(together.iterdir())) < int(os.environ["TOGETHER"]) and time.monotonic() < deadline:
            time.sleep(0.02)
    time.sleep(float(os.environ.get("BUILD_SLEEP", "0")))  # the stop tests' builds: until stopped
    ralph("task", "done", task)
    seen = {"task": task, "start": start, "end": time.time(), "cwd": os.getcwd(),
            "root": os.environ["RALPH_ROOT"], "head": pathlib.Path("shared.txt").exists()}
    with open(os.environ["RUNS"], "a") as runs:
        runs.write(json.dumps(seen) + "\n")
elif stage == "VERIFY":
    ralph("task", "accept", task)
"""


def run(project: Path, tmp_path: Path, *flags: str, together: int = 0):
    """The loop with AGENT; each build waits until `together` builds have started (itself too)."""
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    runs = tmp_path / "runs.jsonl"
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    env = {"RUNS": str(runs), "TOGETHER": str(together), "TOGETHER_DIR": str(tmp_path / "together")}
    done = construct(project, *flags, agent=command, env=env)
    seen = [json.loads(line) for line in runs.read_text().splitlines()] if runs.exists() else []
    return done, seen


def add(project: Path, *items: dict) -> list[str]:
    return [record["id"] for record in tasks.add(project, list(items))]


def assert_no_worktrees_or_branches(project: Path, drafts: tuple[str, ...] = ()) -> None:
    """No build's worktree or branch is left; of ralph's branches, only drafts of `drafts`."""
    assert len(git(project, "worktree", "list", "--porcelain").strip().split("\n\n")) == 1
    left = git(project, "branch", "--list", "--format=%(refname:short)", "ralph/*").split()
    assert set(left) <= {f"ralph/draft/{task}" for task in drafts}, left


def test_ready_tasks_build_at_once_in_worktrees_and_merge_one_commit_each(project, tmp_path):
    ids = add(project, *({"name": f"Part {n}"} for n in range(4)))
    done, seen = run(project, tmp_path, "--parallel", "4", together=4)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(run["task"] for run in seen) == sorted(ids)
    assert max(run["start"] for run in seen) < min(run["end"] for run in seen), "all four built at once"
    for run_seen in seen:  # each in a worktree of its own, where its ralph commands act
        assert (
            run_seen["cwd"] == run_seen["root"]
            and Path(run_seen["cwd"]).name == f"ralph-build-{run_seen['task']}"
        )
    builds = [s for s in subjects(project) if s.startswith("ralph(build):")]
    assert sorted(builds) == sorted(f"ralph(build): {task_id} Part {n}" for n, task_id in enumerate(ids))
    assert sorted(p.name for p in (project / "work").iterdir()) == sorted(f"{i}.txt" for i in ids)
    accepted = [r for r in plan_records(project) if r["t"] == "accept"]
    assert sorted(r["id"] for r in accepted) == sorted(ids)
    journal = events(project)
    workers = {e["item"]: e["worker"] for e in journal if e["event"] == "build_begin"}
    assert len(set(workers.values())) == 4  # the journal's spans say which worker built what
    for kind in ("agent_begin", "gate_begin"):
        spans = [e for e in journal if e["event"] == kind and e.get("stage", "BUILD") == "BUILD"]
        assert {(e["item"], e["worker"]) for e in spans} == set(workers.items())
    state = next(r for r in plan_records(project) if r["t"] == "state")
    assert state["spent"]["BUILD"]["runs"] == 4  # every build's spending reached the loop's record
    assert_no_worktrees_or_branches(project)
    assert_clean(project)
    assert_build_commits_recorded_are_the_merged(project, ids)


# Its assertions are also those of the test above (four builds at once), which `make test` runs.
@pytest.mark.slow
def test_build_commit_recorded_on_the_task_is_the_merged_commit(project, tmp_path):
    ids = add(project, {"name": "One"}, {"name": "Two"})
    done, _ = run(project, tmp_path, "--parallel", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert_build_commits_recorded_are_the_merged(project, ids)


def assert_build_commits_recorded_are_the_merged(project: Path, ids: list[str]) -> None:
    history = git(project, "log", "--format=%H").split()
    # The commit goes on the task with the loop's next commit, and on into its accept record. When
    # the other build's merge comes between, that next commit is VERIFY's: the task record that
    # carried it is already an accept record there. Every record that names one names the merged.
    recorded: dict[str, set[str]] = {}
    for commit in git(project, "log", "--format=%H", "--", "plan.jsonl").split():
        for record in plan_records(project, commit):
            if record.get("t") in ("task", "accept") and record.get("commit"):
                recorded.setdefault(record["id"], set()).add(record["commit"])
    merged = {e["item"]: e["commit"] for e in events(project) if e["event"] == "build_merged"}
    assert sorted(merged) == sorted(ids)
    for task_id, commit in merged.items():  # the loop's commits, not the build branches'
        assert commit in history
        assert git(project, "log", "-1", "--format=%s", commit).startswith(f"ralph(build): {task_id} ")
    assert recorded == {task_id: {commit} for task_id, commit in merged.items()}


@pytest.mark.slow
def test_conflicting_builds_are_a_verdict_and_the_task_is_built_again_from_the_new_head(project, tmp_path):
    ids = add(project, *({"name": f"Shared {n} [shared]"} for n in range(2)))
    done, seen = run(project, tmp_path, "--parallel", "2", together=2)
    assert done.returncode == 0, done.stdout + done.stderr
    conflicts = [s for s in subjects(project) if "merge conflict in shared.txt" in s]
    assert len(conflicts) == 1, subjects(project)
    loser = conflicts[0].split()[1]
    assert loser in ids and [run["task"] for run in seen].count(loser) == 2
    assert seen[-1]["task"] == loser and seen[-1]["head"], "built again on the code merged meanwhile"
    failed = [e for e in events(project) if e["event"] == "build_failed"]
    assert [(e["item"], e["verdict"], e["files"]) for e in failed] == [
        (loser, "merge_conflict", ["shared.txt"])
    ]
    history = [r for r in plan_records(project, "HEAD~2") if r.get("id") == loser]
    assert not (project / ".git" / "MERGE_HEAD").exists()
    assert_no_worktrees_or_branches(project)
    assert_clean(project)
    assert history == [] or "merge_conflict" not in history[0]  # cleared once it built


@pytest.mark.slow
def test_tasks_with_overlapping_scopes_are_not_built_at_the_same_time(project, tmp_path):
    a, b, c = add(
        project,
        {"name": "Auth login", "scope": ["work/**", "src/auth/**"]},
        {"name": "Auth logout", "scope": ["src/auth/logout.py", "work/**"]},
        {"name": "Docs", "scope": ["docs/**"]},
    )
    (project / "docs").mkdir()
    done, seen = run(project, tmp_path, "--parallel", "3", together=2)
    by_task = {run["task"]: run for run in reversed(seen)}  # each task's first build
    first, second = sorted((by_task[a], by_task[b]), key=lambda r: r["start"])
    assert first["end"] <= second["start"], "the two auth tasks ran one after the other"
    assert by_task[c]["start"] < first["end"], "the docs task ran beside them"
    # the docs task wrote work/<id>.txt, outside its scope: a scope violation each attempt
    task_c = next(r for r in plan_records(project) if r.get("id") == c)
    assert task_c["kill_reason"] == "doom_loop" or task_c["gate_failure"].startswith("scope_violation")
    verdicts = {e["verdict"] for e in events(project) if e["event"] == "build_failed" and e["item"] == c}
    assert verdicts == {"scope_violation"}
    assert done.returncode != 0


# `make test` has it in process, in test_stages_in_process.py:
# test_a_build_outside_its_tasks_scope_fails_naming_the_strays_and_commits_none_of_them
# (a parallel build's worktree commit path: the parallel builds above)
@pytest.mark.slow
def test_a_build_outside_its_scope_fails_with_the_files_named(project, tmp_path):
    (task_id,) = add(project, {"name": "Stray [stray]", "scope": ["work/**"]})
    done, _ = run(project, tmp_path, "--parallel", "1", "--max-iterations", "1")
    record = next(r for r in plan_records(project) if r.get("id") == task_id)
    failures = [e for e in events(project) if e["event"] == "build_failed"]
    assert failures and all(e["verdict"] == "scope_violation" for e in failures)
    assert "stray.txt" in (record.get("gate_failure") or "") or record.get("kill_reason") == "doom_loop"
    assert done.returncode != 0


@pytest.mark.slow
def test_a_stop_signal_stops_every_build_and_a_rerun_builds_them_all(project, tmp_path):
    ids = add(project, *({"name": f"Part {n}"} for n in range(3)))
    agent, started = tmp_path / "agent.py", tmp_path / "started"
    agent.write_text(AGENT)
    started.mkdir()
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    env = {"RUNS": str(tmp_path / "runs.jsonl"), "BUILD_SLEEP": "600", "STARTED": str(started)}
    before = git(project, "rev-parse", "HEAD")
    running = construct(project, "--parallel", "3", agent=command, env=env, wait=False)
    wait_for(lambda: len([p for p in started.iterdir() if p.read_text()]) == 3, "three builds at once")
    pids = [int(path.read_text()) for path in started.iterdir()]
    running.send_signal(signal.SIGTERM)
    out, err = running.communicate(timeout=60)
    assert running.returncode == 143, out + err
    assert all(gone(pid) for pid in pids), "every build's agent was stopped"
    # a build's work kept as a draft (one stopped before it wrote a file has none)
    assert_no_worktrees_or_branches(project, drafts=tuple(ids))
    assert not [s for s in subjects(project) if s.startswith("ralph(build):")]
    assert git(project, "status", "--porcelain", "--", "plan.jsonl") == "", "the plan is left committed"
    assert git(project, "rev-parse", "HEAD") != before  # the run's start and its end are recorded
    assert {e["item"] for e in events(project) if e["event"] == "build_not_merged"} == set(ids)

    done, seen = run(project, tmp_path, "--parallel", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted({run["task"] for run in seen}) == sorted(ids)
    assert_no_worktrees_or_branches(project)


@pytest.mark.slow
def test_worktrees_and_branches_a_killed_run_left_are_cleaned_up_by_the_next(project, tmp_path):
    ids = add(project, *({"name": f"Part {n}"} for n in range(2)))
    agent, started = tmp_path / "agent.py", tmp_path / "started"
    agent.write_text(AGENT)
    started.mkdir()
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    env = {"RUNS": str(tmp_path / "runs.jsonl"), "BUILD_SLEEP": "600", "STARTED": str(started)}
    running = construct(project, "--parallel", "2", agent=command, env=env, wait=False)
    wait_for(lambda: len([p for p in started.iterdir() if p.read_text()]) == 2, "two builds at once")
    running.kill()  # SIGKILL: nothing of ralph's cleans up
    running.communicate(timeout=60)
    for pid in (int(path.read_text()) for path in started.iterdir()):
        os.kill(pid, signal.SIGKILL)  # its agents, orphaned
    left = git(project, "worktree", "list", "--porcelain").strip().split("\n\n")
    branches = git(project, "for-each-ref", "--format=%(refname:short)", "refs/heads/ralph/").split()
    assert len(left) == 3 and branches == sorted(f"ralph/{task_id}" for task_id in ids)

    done, _ = run(project, tmp_path, "--parallel", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cleaned up after an earlier run" in done.stderr + done.stdout
    assert_no_worktrees_or_branches(project)
    assert len([e for e in events(project) if e["event"] == "cleaned_up"]) == 4  # 2 worktrees, 2 branches


# --- ownership by record: a person's names are never ralph's --------------------------------------


@pytest.mark.slow
def test_a_persons_branch_named_like_a_build_is_left_as_it_was(project, tmp_path):
    ids = add(project, {"name": "One"}, {"name": "Two"})
    git(project, "branch", f"ralph/{ids[0]}", "HEAD~1")  # a person's, pointing at an older commit
    theirs = git(project, "rev-parse", f"ralph/{ids[0]}").strip()
    done, seen = run(project, tmp_path, "--parallel", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(project, "rev-parse", f"ralph/{ids[0]}").strip() == theirs  # not reset, not deleted
    assert sorted(run["task"] for run in seen) == sorted(ids)  # and the task was built all the same
    assert sorted(r["id"] for r in plan_records(project) if r["t"] == "accept") == sorted(ids)
    assert git(project, "branch", "--list", "ralph/*").split() == [f"ralph/{ids[0]}"]
    assert not list((project / ".git" / "ralph" / "owned").glob("*.json"))  # every record finished


# `make test` has it without a run, in usecases/test_doctor.py:
# test_a_parallel_build_from_start_to_merge_leaves_a_persons_ralph_branches_and_worktrees_alone
# (the run's clean-up at its start and a build checkout's whole life, on real git)
@pytest.mark.slow
def test_construct_start_keeps_a_persons_ralph_branches_and_worktrees(project, tmp_path):
    git(project, "commit", "-qm", "spec", "--allow-empty")
    hotfix = persons_ralph_names(project, tmp_path)
    add(project, {"name": "One"})
    done, _ = run(project, tmp_path, "--parallel", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cleaned up" not in done.stdout + done.stderr
    assert (hotfix / ".env").read_text() == "SECRET=1\n"
    assert set(git(project, "branch", "--list", "ralph/*").split()) == {"ralph/feature", "ralph/unmerged"}


# BUILD of "First" waits until a build beside it has failed and was held back as a stale base (the
# journal says so; at most 60 s), then writes work/first.txt; a build of any other task passes the
# gate only when work/first.txt is in its checkout (it needs First's change); VERIFY accepts.
NEEDS_FIRST_AGENT = r"""
import json, os, pathlib, sys, time
sys.path.insert(0, os.environ["AGENT_KIT_DIR"])
from agent_kit import ralph

stage, task = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID")
if stage == "BUILD":
    name = json.loads(ralph("task", "show", task))["name"]
    pathlib.Path("work").mkdir(exist_ok=True)
    if name == "First":
        journal = pathlib.Path(os.environ["PROJECT"], "build", "ralph-logs", "events.jsonl")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "build_stale_base" not in journal.read_text():
            time.sleep(0.05)
        pathlib.Path("work", "first.txt").write_text("ok\n")
    else:
        has_first = pathlib.Path("work", "first.txt").exists()
        pathlib.Path("work", task + ".txt").write_text("ok\n" if has_first else "FAIL: no first.txt\n")
        with open(os.environ["RUNS"], "a") as runs:
            runs.write(json.dumps({"task": task, "had_first": has_first}) + "\n")
    ralph("task", "done", task)
elif stage == "VERIFY":
    ralph("task", "accept", task)
"""


@pytest.mark.slow
def test_a_build_that_failed_for_a_running_neighbours_change_waits_and_is_built_again_uncounted(
    project, tmp_path
):
    first, second = add(project, {"name": "First"}, {"name": "Second"})
    agent = tmp_path / "agent.py"
    agent.write_text(NEEDS_FIRST_AGENT)
    runs = tmp_path / "runs.jsonl"
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"

    env = {"RUNS": str(runs), "PROJECT": str(project)}  # First reads the journal: no sandbox
    done = construct(project, "--parallel", "2", "--sandbox=off", agent=command, env=env)

    assert done.returncode == 0, done.stdout + done.stderr
    seen = [json.loads(line) for line in runs.read_text().splitlines()]
    assert seen == [{"task": second, "had_first": False}, {"task": second, "had_first": True}]
    journal = events(project)
    assert [e["item"] for e in journal if e["event"] == "build_stale_base"] == [second]
    assert [e for e in journal if e["event"] == "build_failed"] == []  # no attempt was counted
    accepted = {r["id"] for r in plan_records(project) if r.get("t") == "accept"}
    assert accepted == {first, second}
    assert_no_worktrees_or_branches(project)


@pytest.mark.slow
def test_a_worktree_the_branch_moved_past_before_its_first_attempt_is_made_again(project, monkeypatch):
    """A neighbour merged while the worktree was made: the build is not started on the old base
    but in a fresh worktree from the new HEAD (here the first look at each worktree says it is
    behind, as a merge in that moment would make it)."""
    from ralph.loop.tree.work_tree import WorkTree

    real = WorkTree.behind
    looked: set[str] = set()

    def behind_the_first_time(tree: WorkTree) -> bool:
        key = tree.root.name  # ralph-build-<task id>: the first worktree of each task
        if tree.in_worktree and tree.renew_if_behind and key not in looked:
            looked.add(key)
            return True
        return real(tree)

    monkeypatch.setattr(WorkTree, "behind", behind_the_first_time)
    ids = add_tasks(project, "Parse input", "Compute result")

    done = construct(project, "--parallel", "2")

    assert done.returncode == 0, done.stdout + done.stderr
    renewed = [e["item"] for e in events(project) if e["event"] == "build_checkout_renewed"]
    assert sorted(renewed) == sorted(ids)  # each made again once
    attempts = [e for e in events(project) if e["event"] == "build_attempt"]
    assert sorted(e["item"] for e in attempts) == sorted(ids) and not any(e["behind"] for e in attempts)
    assert {r["id"] for r in plan_records(project) if r["t"] == "accept"} == set(ids)
    assert not [e for e in events(project) if e["event"] == "build_failed"]


# Every build fails its gate; First's waits until a build beside it has failed and was held back
# as a stale base (the journal says so), so that its neighbour fails while it runs.
FAILS_BESIDE_FIRST_AGENT = r"""
import json, os, pathlib, sys, time
sys.path.insert(0, os.environ["AGENT_KIT_DIR"])
from agent_kit import ralph

stage, task = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID")
if stage == "BUILD":
    name = json.loads(ralph("task", "show", task))["name"]
    pathlib.Path("work").mkdir(exist_ok=True)
    pathlib.Path("work", task + ".txt").write_text("FAIL: never right\n")
    journal = pathlib.Path(os.environ["PROJECT"], "build", "ralph-logs", "events.jsonl")
    waited = 0.0
    while name == "First" and waited < 60 and "build_stale_base" not in journal.read_text():
        time.sleep(0.05)
        waited += 0.05
    with open(os.environ["RUNS"], "a") as runs:
        runs.write(json.dumps({"task": task}) + "\n")
    ralph("task", "done", task)
"""


@pytest.mark.slow
def test_a_failure_held_back_beside_a_neighbour_counts_when_the_neighbour_changed_no_code(project, tmp_path):
    """Second fails while First builds: it may lack First's change, so it is not counted yet. First
    fails too and merges nothing: rebuilt on the same code, Second would fail the same way, so its
    held-back failure counts, and it has exactly its max_attempts builds."""
    config_set(project, "max_attempts", "2")
    first, second = add(project, {"name": "First"}, {"name": "Second"})
    agent = tmp_path / "agent.py"
    agent.write_text(FAILS_BESIDE_FIRST_AGENT)
    runs = tmp_path / "runs.jsonl"
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    env = {"RUNS": str(runs), "PROJECT": str(project)}

    construct(project, "--parallel", "2", "--max-iterations", "1", "--sandbox=off", agent=command, env=env)

    built = [json.loads(line)["task"] for line in runs.read_text().splitlines()]
    assert built.count(second) == 2 and built.count(first) == 2
    journal = events(project)
    held = [e for e in journal if e["event"] == "build_stale_base"]
    assert [(e["item"], e["moved"], e["waits_for"]) for e in held] == [(second, False, [first])]
    counted = [e["attempts"] for e in journal if e["event"] == "build_failed" and e["item"] == second]
    assert counted == [1, 2]
    killed = {r["id"]: r.get("kill_reason") for r in plan_records(project) if r["t"] == "task"}
    assert killed[second] is not None


@pytest.mark.slow
def test_the_gate_lines_of_builds_side_by_side_name_their_task(project, tmp_path):
    """Both builds fail their gate once, side by side: every line the gates' failures print
    names the task whose gate printed it (they interleave on the console)."""
    ids = add_tasks(project, "One [gate-fails-once]", "Two [gate-fails-once]")
    done = construct(project, "--parallel", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    said = [line.split("] ", 1)[1] for line in done.stderr.splitlines() if "] " in line]
    failed = [
        line.split()[2].rstrip(":") for line in said if line.startswith("gate for ") and "FAILED" in line
    ]
    assert sorted(failed) == sorted(ids), done.stderr
    tagged = {task_id: [line for line in said if line.startswith(f"  {task_id} | ")] for task_id in ids}
    for task_id, other in (ids, ids[::-1]):
        assert f"  {task_id} | FAILED: {task_id}.txt" in tagged[task_id]
        assert not [line for line in tagged[task_id] if other in line.split(" | ", 1)[1]]
    assert not [line for line in said if line.startswith("  | ")]  # no line of theirs without its task


# "Needs C" reports an error (as Claude Code's stream-json does, after a tool call) until
# work/c.txt is in its checkout; "Fails" waits until that error was held back as a stale base,
# then fails its gate; "Provides C" (whose scope keeps it from building beside "Fails") waits
# until "Needs C" was deferred, then writes work/c.txt.
NEEDS_C_AGENT = r"""
import json, os, pathlib, sys, time
sys.path.insert(0, os.environ["AGENT_KIT_DIR"])
from agent_kit import ralph

def wait_for(event):
    journal = pathlib.Path(os.environ["PROJECT"], "build", "ralph-logs", "events.jsonl")
    for _ in range(1200):
        if event in journal.read_text():
            return
        time.sleep(0.05)

stage, task = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID")
if stage == "BUILD":
    name = json.loads(ralph("task", "show", task))["name"]
    pathlib.Path("work").mkdir(exist_ok=True)
    if name == "Needs C" and not pathlib.Path("work", "c.txt").exists():
        call = {"type": "tool_use", "name": "Bash", "input": {"command": "cat work/c.txt"}}
        print(json.dumps({"type": "assistant", "message": {"content": [call]}}), flush=True)
        said = "work/c.txt is not there yet: this task needs it"
        print(json.dumps({"type": "result", "is_error": True, "result": said}), flush=True)
        sys.exit(1)
    if name == "Fails":
        wait_for('"build_stale_base"')
    if name == "Provides C":
        wait_for('"build_deferred"')
    own = {"Needs C": "a", "Fails": "b", "Provides C": "c"}[name]
    pathlib.Path("work", own + ".txt").write_text("FAIL: never\n" if name == "Fails" else "ok\n")
    with open(os.environ["RUNS"], "a") as runs:
        runs.write(json.dumps({"task": name}) + "\n")
    ralph("task", "done", task)
elif stage == "VERIFY":
    ralph("task", "accept", task)
"""


@pytest.mark.slow
def test_an_agent_error_held_back_beside_a_failing_neighbour_waits_for_another_tasks_code(project, tmp_path):
    """Needs C's agent says it cannot do it yet, beside Fails: held back. Fails changes no code,
    but Provides C is ready and may bring what Needs C lacks: Needs C waits for it, uncounted,
    and is then built."""
    config_set(project, "max_attempts", "2")
    needs, fails, provides = add(
        project,
        {"name": "Needs C"},
        {"name": "Fails", "scope": ["work/"]},
        {"name": "Provides C", "scope": ["work/"]},
    )
    agent = tmp_path / "agent.py"
    agent.write_text(NEEDS_C_AGENT)
    runs = tmp_path / "runs.jsonl"
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    env = {"RUNS": str(runs), "PROJECT": str(project)}

    construct(project, "--parallel", "2", "--max-iterations", "1", "--sandbox=off", agent=command, env=env)

    journal = events(project)
    assert [e["item"] for e in journal if e["event"] == "build_deferred"] == [needs]
    assert not [e for e in journal if e["event"] == "build_failed" and e["item"] == needs]
    merged = [e["item"] for e in journal if e["event"] == "build_merged"]
    assert merged.index(provides) < merged.index(needs)
    built = [json.loads(line)["task"] for line in runs.read_text().splitlines()]
    assert built.count("Needs C") == 1 and fails not in merged


def test_a_stop_during_parallel_builds_leaves_a_persons_edit_in_the_work_tree_as_it_is(project, tmp_path):
    """Every agent of a parallel BUILD works in a worktree of its own: what changes in the work
    tree meanwhile is a person's, and a stop leaves it where it is, not reverted into a patch
    (nor kept as some task's draft)."""
    add(project, *({"name": f"Part {n}"} for n in range(2)))
    agent, started = tmp_path / "agent.py", tmp_path / "started"
    agent.write_text(AGENT)
    started.mkdir()
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    env = {"RUNS": str(tmp_path / "runs.jsonl"), "BUILD_SLEEP": "600", "STARTED": str(started)}
    running = construct(project, "--parallel", "2", agent=command, env=env, wait=False)
    wait_for(lambda: len([p for p in started.iterdir() if p.read_text()]) == 2, "two builds at once")
    mine = "# App\n\nWhat I am writing while it builds.\n"
    (project / "specs" / "app.md").write_text(mine)
    (project / "notes.txt").write_text("my notes\n")

    running.send_signal(signal.SIGTERM)
    out, err = running.communicate(timeout=60)

    assert running.returncode == 143, out + err
    assert (project / "specs" / "app.md").read_text() == mine
    assert (project / "notes.txt").read_text() == "my notes\n"
    assert git(project, "status", "--porcelain", "--", "plan.jsonl") == "", "the plan is left committed"
