"""`ralph construct` end to end: real git repositories, the real CLI, and a scripted fake agent
(tests/support/scripts/fake_agent.py) that calls the real `ralph` commands.

A run the test waits for goes through the click app in the test's own process: the loop, its
agents, gates and git are the same, only ralph's own Python start-up is saved. Runs the test
signals, and tests about ralph as a program, start it as a real process."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ralph.usecases import pullrequest
from tests.support.cli import ralph_in_process
from tests.support.construct import (
    FAKE_AGENT,
    add_tasks,
    alive,
    assert_clean,
    construct,
    default_signals,
    events,
    gone,
    in_process,
    limited_once,
    plan_records,
    ralph_server,
    subjects,
    wait_for,
)
from tests.support.gitrepo import git
from tests.support.hooks import config_set


def test_plans_builds_and_verifies_dependent_tasks_to_complete(project):
    # ralph runs as a program, and the agent runs $RALPH_BIN for the commands its prompt names, as a
    # real agent would (the other tests save those Python start-ups: see the module's docstring).
    # The fake agent's look at its task, which a real agent has in its prompt, is served.
    env = {"AGENT_RALPH": "subprocess", "AGENT_RALPH_SERVER": ralph_server()}
    done = construct(project, env=env, process=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "COMPLETE" in done.stdout

    records = plan_records(project)
    accepted = [r for r in records if r["t"] == "accept"]
    assert sorted(r["name"] for r in accepted) == ["Compute result", "Parse input", "Print report"]
    assert not [r for r in records if r["t"] in ("task", "issue")]
    # The final report lists each accepted task under its heading.
    listed = done.stdout.split("accepted (3):\n", 1)[1].splitlines()[:3]
    assert sorted(listed) == sorted(f"  {r['id']} {r['name']}" for r in accepted), done.stdout

    log = subjects(project)
    builds = [s for s in log if s.startswith("ralph(build): ")]
    assert len(builds) == 3
    assert any(s.startswith("ralph(plan): specs/app.md: 3 tasks") for s in log)
    assert any(s.startswith("ralph(verify): accepted") for s in log)
    # Dependency order: the chain is built first link first.
    built_names = [s.split(" ", 2)[2] for s in reversed(builds)]
    assert built_names == ["Parse input", "Compute result", "Print report"]

    for commit in git(project, "log", "--format=%H", "--grep=^ralph(build): ").split():
        files = git(project, "show", "--name-only", "--format=", commit).split()
        assert sorted(files)[0] == "plan.jsonl" and len(files) == 2 and files[1].startswith("work/t-")
        task_id = files[1].removeprefix("work/").removesuffix(".txt")
        built = next(r for r in plan_records(project, commit) if r.get("id") == task_id)
        assert built["s"] == "d" and built["files"] == [files[1]] and built["attempts"] == 1
        assert built["tokens"] == 1000  # what the fake agent's stream-json reported
        # The agent's own `ralph task done` is named in its build commit, for a runner to replay.
        body = git(project, "log", "-1", "--format=%B", commit)
        assert f'Ralph-Op: {{"op":"done","args":["{task_id}",' in body, body
    build_commits = set(git(project, "log", "--format=%H", "--grep=^ralph(build): ").split())
    assert {r["commit"] for r in accepted} == build_commits  # each accepted task names its build
    assert git(project, "ls-files", "build") == ""
    assert_clean(project)

    journal = events(project)
    kinds = [e["event"] for e in journal]
    for kind in (
        "construct_begin",
        "construct_end",
        "iteration_begin",
        "iteration_end",
        "gate_begin",
        "gate_end",
    ):
        assert kind in kinds
    runs = [e for e in journal if e["event"] == "agent_end"]
    assert [e["stage"] for e in runs].count("BUILD") == 3 and [e["stage"] for e in runs].count("VERIFY") == 3
    assert all(e["exit_code"] == 0 and e["tokens"]["input_tokens"] == 1000 for e in runs)
    for run in runs:
        log_file = project / run["log"]
        assert log_file.name.startswith("ralph-") and f"-{run['stage'].lower()}" in log_file.name
        assert log_file.read_text().strip()  # written while it ran: it holds the agent's output
    assert journal[-1]["event"] == "construct_end" and journal[-1]["outcome"] == "COMPLETE"


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_a_gate_failure_is_an_attempt_and_the_next_build_passes
@pytest.mark.slow
def test_gate_failure_is_retried_and_then_passes(project):
    (task_id,) = add_tasks(project, "Flaky [gate-fails-once]")
    done = construct(project)
    assert done.returncode == 0, done.stdout + done.stderr
    failed = git(project, "log", "--format=%H", f"--grep=^ralph(build): {task_id} attempt 1 failed").split()
    assert len(failed) == 1
    after_failure = next(r for r in plan_records(project, failed[0]) if r.get("id") == task_id)
    assert after_failure["s"] == "p" and after_failure["attempts"] == 1
    assert "FAILED:" in after_failure["gate_failure"]
    assert (project / "work" / f"{task_id}.txt").read_text().startswith("ok")
    assert any(r.get("id") == task_id for r in plan_records(project) if r["t"] == "accept")


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_repeated_gate_failures_set_the_work_aside_and_are_decomposed
@pytest.mark.slow
def test_repeated_gate_failures_are_decomposed_into_subtasks(project):
    (task_id,) = add_tasks(project, "Hard [gate-always-fails]")
    done = construct(project, "--max-attempts", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    killed = [e for e in events(project) if e["event"] == "task_killed"]
    assert killed and killed[0]["item"] == task_id and killed[0]["kill_reason"] == "doom_loop"
    set_aside = [e for e in events(project) if e["event"] == "changes_set_aside"]
    assert set_aside and (project / set_aside[0]["patch"]).read_text().count("FAIL") >= 1
    assert any(s.startswith(f"ralph(decompose): {task_id} -> ") for s in subjects(project))
    accepted = sorted(r["name"] for r in plan_records(project) if r["t"] == "accept")
    assert accepted == ["Hard (part 1)", "Hard (part 2)"]
    assert_clean(project)


@pytest.mark.slow
def test_timeout_kills_agent_and_grandchild_then_decomposes(project):
    (task_id,) = add_tasks(project, "Slow [hang]")
    started = time.monotonic()
    done = construct(project, "--timeout", "2s")
    assert done.returncode == 0, done.stdout + done.stderr
    state = project.parent / "agent-state"
    for pid_file in (f"{task_id}.agent.pid", f"{task_id}.grandchild.pid"):
        assert not alive(int((state / pid_file).read_text())), pid_file
    killed = [e for e in events(project) if e["event"] == "task_killed"]
    assert killed[0]["kill_reason"] == "timeout"
    kill_commit = git(
        project, "log", "--format=%H", f"--grep=^ralph(build): {task_id} killed (timeout)"
    ).split()
    killed_task = next(r for r in plan_records(project, kill_commit[0]) if r.get("id") == task_id)
    assert killed_task["kill_reason"] == "timeout" and killed_task["kill_log"].startswith("build/ralph-logs/")
    assert "stopping the agent's process group: timeout" in (project / killed_task["kill_log"]).read_text()
    assert sorted(r["name"] for r in plan_records(project) if r["t"] == "accept") == [
        "Slow (part 1)",
        "Slow (part 2)",
    ]
    assert time.monotonic() - started < 120


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_a_rejected_task_is_built_again_and_then_accepted
@pytest.mark.slow
def test_rejected_task_is_rebuilt_then_accepted(project):
    (task_id,) = add_tasks(project, "Picky [reject-once]")
    done = construct(project)
    assert done.returncode == 0, done.stdout + done.stderr
    records = plan_records(project)
    assert {"t": "reject", "id": task_id, "reason": "the fake verifier rejects the first build"} in records
    assert any(r["t"] == "accept" and r["id"] == task_id for r in records)
    assert (project.parent / "agent-state" / f"build-{task_id}").read_text() == "2"


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_a_task_rejected_max_attempts_times_is_decomposed_and_its_parts_accepted
@pytest.mark.slow
def test_a_task_rejected_max_attempts_times_is_decomposed(project):
    (task_id,) = add_tasks(project, "Contested [reject-always]")
    done = construct(project, "--max-attempts", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project.parent / "agent-state" / f"verify-{task_id}").read_text() == "2"
    killed = [e for e in events(project) if e["event"] == "task_killed"]
    assert killed[0]["item"] == task_id and killed[0]["kill_reason"] == "doom_loop" and killed[0]["rejected"]
    accepted = sorted(r["name"] for r in plan_records(project) if r["t"] == "accept")
    assert accepted == ["Contested (part 1)", "Contested (part 2)"]


# `make test` has it in process, in test_stages_in_process.py:
# test_parallel_verifiers_run_at_once_and_the_loop_ends
# (the --json report: tests/loop/test_report_json.py)
@pytest.mark.slow
def test_parallel_verify_overlaps_and_the_loop_ends(project):
    ids = add_tasks(project, *(f"Check {n} [slow-verify]" for n in range(4)))
    done = construct(project, "--parallel", "4", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["outcome"] == "COMPLETE" and report["exit_code"] == 0
    expected = sorted(f"{task_id} Check {n} [slow-verify]" for n, task_id in enumerate(ids))
    assert sorted(report["accepted"]) == expected
    verify = [e for e in events(project) if e["event"].startswith("agent_") and e["stage"] == "VERIFY"]
    begins = [e["ts"] for e in verify if e["event"] == "agent_begin"]
    ends = [e["ts"] for e in verify if e["event"] == "agent_end"]
    assert len(begins) == 4 and max(begins) < min(ends), "all four verifiers ran at once"
    assert len([r for r in plan_records(project) if r["t"] == "accept"]) == 4


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_the_iteration_budget_ends_the_run
@pytest.mark.slow
def test_iteration_budget_ends_with_its_exit_code(project):
    add_tasks(project, "Undecided [no-verdict]")
    done = construct(project, "--max-iterations", "1")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "MAX_ITERATIONS" in done.stdout and "Undecided" in done.stdout
    assert_clean(project)


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_without_progress_ends_stuck
@pytest.mark.slow
def test_no_progress_ends_as_stuck(project):
    add_tasks(project, "Undecided [no-verdict]")
    done = construct(project)
    assert done.returncode == 5, done.stdout + done.stderr
    assert "STUCK" in done.stdout
    assert events(project)[-1]["ending"] == "no_progress"  # which of STUCK's endings, as data
    assert [e["event"] for e in events(project)].count("no_verdict") >= 2
    assert_clean(project)


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_a_time_budget_spent_between_runs_ends_max_minutes_before_the_next_run
# (a budget spent while an agent runs: the deadline test below)
@pytest.mark.slow
def test_time_budget_ends_with_its_exit_code(project):
    add_tasks(project, "One", "Two", "Three")
    done = construct(project, "--max-minutes", "0.005")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "MAX_MINUTES" in done.stdout
    assert_clean(project)


# Each signal's exit code: SIGINT here, SIGTERM in the stop during VERIFY, SIGHUP in tests/loop/
# test_stops.py run in `make test`; the other pairs (a second whole run each) with the slow suites.
STOPS = pytest.mark.parametrize(
    ("sig", "code"),
    [
        pytest.param(signal.SIGINT, 130, id="SIGINT"),
        pytest.param(signal.SIGTERM, 143, id="SIGTERM", marks=pytest.mark.slow),
        pytest.param(signal.SIGHUP, 129, id="SIGHUP", marks=pytest.mark.slow),
    ],
)


def assert_stopped_cleanly(root: Path, sig: int) -> None:
    """After a stop: plan.jsonl is as HEAD has it, the tree is clean, the journal says why."""
    assert (root / "plan.jsonl").read_text() == git(root, "show", "HEAD:plan.jsonl")
    assert_clean(root)
    interrupted = [e for e in events(root) if e["event"] == "interrupted"]
    assert len(interrupted) == 1 and interrupted[0]["signal"] == sig


def unmark(root: Path, *markers: str) -> None:
    """A person edits the plan so the rerun does not hang again."""
    text = (root / "plan.jsonl").read_text()
    for marker in markers:
        text = text.replace(f" {marker}", "")
    (root / "plan.jsonl").write_text(text)
    git(root, "commit", "-qam", "person: the tasks no longer hang")


@STOPS
def test_interrupt_by_a_signal_stops_the_agent_and_a_rerun_resumes(project, sig, code):
    (task_id,) = add_tasks(project, "Long [hang]")
    running = construct(project, wait=False)
    state = project.parent / "agent-state"
    wait_for(lambda: (state / f"{task_id}.agent.pid").exists(), "the agent never started")
    (project / "work").mkdir(exist_ok=True)
    (project / "work" / "half-done.txt").write_text("partial work by the agent\n")
    running.send_signal(sig)
    out, err = running.communicate(timeout=60)
    assert running.returncode == code, out + err
    assert "INTERRUPTED" in out
    assert gone(int((state / f"{task_id}.agent.pid").read_text())), "the agent outlived ralph"
    assert gone(int((state / f"{task_id}.grandchild.pid").read_text())), "the grandchild outlived ralph"
    assert not (project / "work" / "half-done.txt").exists()  # set aside as a patch
    assert_stopped_cleanly(project, sig)

    assert next(r for r in plan_records(project) if r.get("id") == task_id)["s"] == "p"
    unmark(project, "[hang]")
    again = construct(project)
    assert again.returncode == 0, again.stdout + again.stderr
    assert any(r["t"] == "accept" and r["id"] == task_id for r in plan_records(project))


def test_the_runs_the_tests_signal_start_with_the_stop_signals_a_parent_may_have_ignored_undone():
    """A parent that ignores SIGINT (the shell of `(pytest &)`) or SIGHUP (nohup) passes SIG_IGN
    down, and ralph keeps a signal it was started ignoring (process/test_signals.py): the runs the
    tests signal (construct(wait=False)) start through default_signals, which undoes it, so the
    signals the tests send reach them. Checked on a stand-in program, as the kernel has it."""
    stops = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in stops}
    try:
        undone = subprocess.Popen(["sleep", "60"], preexec_fn=default_signals)
        inherited = subprocess.Popen(["sleep", "60"])  # what a run would get without it
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    try:  # Popen returns once the child has exec'd: its dispositions are final
        assert stops <= ignored_signals(inherited.pid)
        assert not stops & ignored_signals(undone.pid)
        undone.send_signal(signal.SIGINT)
        assert undone.wait(timeout=60) == -signal.SIGINT
    finally:
        for child in (undone, inherited):
            child.kill()
            child.wait()


# `make test` has it in this file's
# test_the_runs_the_tests_signal_start_with_the_stop_signals_a_parent_may_have_ignored_undone
# (ralph stopped by SIGINT, exit 130: test_interrupt_by_a_signal_stops_the_agent_and_a_rerun_resumes[SIGINT])
@pytest.mark.slow
def test_interrupt_reaches_ralph_even_from_a_parent_that_ignores_it(project):
    """The parent of `(pytest &)` ignores SIGINT; default_signals must undo that for ralph."""
    (task_id,) = add_tasks(project, "Long [hang]")
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited by the child, as from that shell
    try:
        running = construct(project, wait=False)
    finally:
        signal.signal(signal.SIGINT, previous)
    state = project.parent / "agent-state"
    wait_for(lambda: (state / f"{task_id}.agent.pid").exists(), "the agent never started")
    running.send_signal(signal.SIGINT)
    out, err = running.communicate(timeout=60)
    assert running.returncode == 130, out + err


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_a_stop_in_the_gate_is_no_verdict_and_the_build_is_set_aside
# (gates' processes stopped: test_parallel_stops.py's cut-short gates; a signal stopping a run's
# processes from the main thread: the SIGINT stop above)
@pytest.mark.slow
def test_interrupt_during_the_gate_stops_it_and_sets_the_build_aside(project, tmp_path):
    (task_id,) = add_tasks(project, "Gated")
    state = tmp_path / "agent-state"
    gate = tmp_path / "slow_gate.py"
    gate.write_text(
        "import os, pathlib, subprocess, time\n"
        f"state = pathlib.Path({str(state)!r})\n"
        "(state / 'gate-grandchild.pid').write_text(str(subprocess.Popen(['sleep', '600']).pid))\n"
        "(state / 'gate.pid.part').write_text(str(os.getpid()))\n"
        "os.replace(state / 'gate.pid.part', state / 'gate.pid')\n"  # whole once it exists
        "time.sleep(600)\n"
    )
    running = construct(project, "--gate", f"{sys.executable} {gate}", wait=False)
    wait_for(lambda: (state / "gate.pid").exists(), "the gate never started")
    running.send_signal(signal.SIGTERM)
    out, err = running.communicate(timeout=60)
    assert running.returncode == 143, out + err
    assert gone(int((state / "gate.pid").read_text())), "the gate outlived ralph"
    assert gone(int((state / "gate-grandchild.pid").read_text())), "the gate's child outlived ralph"
    assert_stopped_cleanly(project, signal.SIGTERM)
    # The build the gate never passed is set aside as a patch; the task is pending again.
    assert not (project / "work" / f"{task_id}.txt").exists()
    assert [e for e in events(project) if e["event"] == "changes_set_aside"]
    assert next(r for r in plan_records(project) if r.get("id") == task_id)["s"] == "p"
    # The gate is recorded as cut short (no verdict), never as the build's failure.
    journal = events(project)
    assert [e["item"] for e in journal if e["event"] == "gate_cut_short"] == [task_id]
    assert [e.get("cut_short") for e in journal if e["event"] == "gate_end"] == [True]
    assert not [e for e in journal if e["event"] == "build_failed"]


def ignored_signals(pid: int) -> set[int]:
    """The signals the process ignores, as the kernel has it (SigIgn in /proc/<pid>/status)."""
    with open(f"/proc/{pid}/status") as status:
        mask = int(next(line.split()[1] for line in status if line.startswith("SigIgn:")), 16)
    return {sig for sig in range(1, 65) if mask >> (sig - 1) & 1}


def test_no_interrupt_by_a_hangup_when_ralph_starts_ignoring_it(project):
    """`nohup ralph construct ...`: closing the terminal must not stop the run; SIGTERM still does."""
    (task_id,) = add_tasks(project, "Long [hang]")

    def nohup() -> None:
        default_signals()
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    running = construct(project, wait=False, preexec_fn=nohup)
    state = project.parent / "agent-state"
    wait_for(lambda: (state / f"{task_id}.agent.pid").exists(), "the agent never started")
    # Checked while the run is under way, so its handlers are in place: the kernel drops a SIGHUP.
    ignored = ignored_signals(running.pid)
    assert signal.SIGHUP in ignored and signal.SIGTERM not in ignored
    running.send_signal(signal.SIGHUP)
    running.send_signal(signal.SIGTERM)
    out, err = running.communicate(timeout=60)
    assert running.returncode == 143, out + err
    assert_stopped_cleanly(project, signal.SIGTERM)


def test_interrupt_by_signals_in_a_row_stops_the_run_once_and_cleans_up(project):
    """systemd sends SIGHUP right after SIGTERM, and people press Ctrl-C twice: the second signal
    must not land in the cleanup after the first and leave the agent running."""
    (task_id,) = add_tasks(project, "Long [hang]")
    running = construct(project, wait=False)
    state = project.parent / "agent-state"
    wait_for(lambda: (state / f"{task_id}.agent.pid").exists(), "the agent never started")
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        running.send_signal(sig)
    out, err = running.communicate(timeout=60)
    # Whichever ralph saw first (Python runs pending handlers lowest number first) is the one reported.
    assert running.returncode in (129, 130, 143), out + err
    assert gone(int((state / f"{task_id}.agent.pid").read_text())), "the agent outlived ralph"
    assert gone(int((state / f"{task_id}.grandchild.pid").read_text())), "the grandchild outlived ralph"
    assert_stopped_cleanly(project, running.returncode - 128)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "code"),
    [
        pytest.param(signal.SIGINT, 130, id="SIGINT", marks=pytest.mark.slow),
        pytest.param(signal.SIGTERM, 143, id="SIGTERM"),
    ],
)
def test_interrupt_during_verify_stops_every_verifier_at_once(project, sig, code):
    from ralph.usecases import tasks

    ids = add_tasks(project, *(f"Check {n} [verify-hang]" for n in range(4)))
    for task_id in ids:
        tasks.done(project, task_id)  # straight to VERIFY
    running = construct(project, "--parallel", "3", "--timeout", "120s", wait=False)
    state = project.parent / "agent-state"
    wait_for(lambda: len(list(state.glob("*.verify.pid"))) == 3, "three verifiers never ran at once")
    running.send_signal(sig)
    out, err = running.communicate(timeout=150)  # a hang guard only: the verifiers sleep 30 s
    assert running.returncode == code, out + err
    started = sorted(state.glob("*.verify.pid"))
    assert len(started) == 3, "the queued verifier was started after the stop"
    for pid_file in started:
        grandchild = pid_file.with_name(pid_file.name.replace(".verify.", ".verify-grandchild."))
        assert gone(int(pid_file.read_text())) and gone(int(grandchild.read_text())), pid_file.name
    # Stopped, not waited for: no verifier got to the end of its sleep.
    assert not list(state.glob("*.verify.finished"))
    ends = [e for e in events(project) if e["event"] == "agent_end" and e["stage"] == "VERIFY"]
    assert [e.get("stop_reason") for e in ends] == ["interrupted"] * 3
    assert_stopped_cleanly(project, sig)
    assert all(r["s"] == "d" for r in plan_records(project) if r["t"] == "task")

    unmark(project, "[verify-hang]")
    again = construct(project)
    assert again.returncode == 0, again.stdout + again.stderr
    assert sorted(r["id"] for r in plan_records(project) if r["t"] == "accept") == sorted(ids)


def test_missing_agent_binary_is_a_clear_failure(project):
    add_tasks(project, "Anything")
    before = (project / "plan.jsonl").read_bytes()
    done = construct(project, agent="/nonexistent/agent-binary --flag")
    assert done.returncode == 6, done.stdout + done.stderr
    assert done.stdout == ""  # the failure is one line on stderr
    assert done.stderr.startswith("ralph: AGENT_UNAVAILABLE: ") and "/nonexistent/agent-binary" in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert [r for r in plan_records(project) if r["t"] == "task"] == [
        r for r in (json.loads(line) for line in before.decode().splitlines()) if r["t"] == "task"
    ]
    assert_clean(project)


# A variant of test_agent_failures.py's test_an_agent_that_crashes_three_times_then_works_spends_no_
# attempt, which asserts all this one does (a crash signal seen, no failed attempt, accepted) in
# `make test`.
@pytest.mark.slow
def test_an_agent_crashing_at_once_is_run_again_and_spends_no_attempt(project):
    (task_id,) = add_tasks(project, "Fragile [crash]")
    config_set(project, "agent_retry_ms", "10ms")
    done = construct(project)
    assert done.returncode == 0, done.stdout + done.stderr
    ends = [e for e in events(project) if e["event"] == "agent_end" and e.get("item") == task_id]
    assert ends[0]["exit_code"] == -9  # killed by SIGKILL: a crash, waited out
    assert not any(s.endswith("attempt 1 failed") for s in subjects(project))
    assert any(r["t"] == "accept" and r["id"] == task_id for r in plan_records(project))


def test_agent_that_corrupts_the_plan_is_undone(project):
    (task_id,) = add_tasks(project, "Careless [corrupt-plan]")
    done = construct(project)
    assert done.returncode == 0, done.stdout + done.stderr
    restored = [e for e in events(project) if e["event"] == "plan_restored"]
    assert restored and "plan.jsonl:" in restored[0]["problem"]
    assert '"broken' in (project / restored[0]["broken_copy"]).read_text()
    assert any(r["t"] == "accept" and r["id"] == task_id for r in plan_records(project))
    assert_clean(project)


# `make test` has the refusal in loop/test_dryrun.py (the real run stops at the first reason) and
# --allow-dirty never committing a person's edit in test_loop_safety.py's bracketed-file test.
@pytest.mark.slow
def test_refuses_a_dirty_tree_unless_allowed_and_never_commits_it(project):
    add_tasks(project, "Anything")
    (project / "README").write_text("the user's unfinished edit\n")
    refused = construct(project)
    assert refused.returncode == 1 and "uncommitted changes: README" in refused.stderr
    base = git(project, "rev-parse", "HEAD").strip()
    allowed = construct(project, "--allow-dirty")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert (project / "README").read_text() == "the user's unfinished edit\n"
    assert git(project, "status", "--porcelain").splitlines() == [" M README"]
    committed = git(project, "log", "--name-only", "--format=", f"{base}..HEAD").split()
    assert "plan.jsonl" in committed and "README" not in committed


@pytest.mark.slow
def test_issues_are_investigated_into_tasks_with_the_agent_from_the_config_record(project):
    from ralph.usecases import issues

    agent_cmd = [sys.executable, str(FAKE_AGENT)]
    config = {
        "t": "config",
        "agent": "command",
        "agent_cmd": agent_cmd,
        "gate": [sys.executable, "check_work.py"],
    }
    with open(project / "plan.jsonl", "a") as plan_file:
        plan_file.write(json.dumps(config) + "\n")
    git(project, "commit", "-qam", "configure ralph")
    add_tasks(project, "Existing work")
    issue = issues.add(project, "The report prints nothing for empty input")
    env = {**os.environ, "FAKE_AGENT_STATE": str(project.parent / "agent-state")}
    done = in_process(["-C", str(project), "construct", "specs/app.md"], env)
    assert done.returncode == 0, done.stdout + done.stderr
    accepted = sorted(r["name"] for r in plan_records(project) if r["t"] == "accept")
    assert accepted == ["Existing work", f"Fix what {issue['id']} found"]
    assert any(s.startswith(f"ralph(investigate): {issue['id']}") for s in subjects(project))
    stages = [e["stage"] for e in events(project) if e["event"] == "agent_begin"]
    assert stages.index("INVESTIGATE") < stages.index("BUILD")


def test_plan_command_runs_only_the_planning_stage(project):
    agent = f"{shlex.quote(sys.executable)} {shlex.quote(str(FAKE_AGENT))}"
    done = in_process(["-C", str(project), "plan", "specs/app.md", "--agent-cmd", agent], dict(os.environ))
    assert done.returncode == 0, done.stdout + done.stderr
    tasks = [r for r in plan_records(project) if r["t"] == "task"]
    assert [t["name"] for t in tasks] == ["Parse input", "Compute result", "Print report"]
    assert all(t["s"] == "p" and t.get("priority") for t in tasks)
    assert [e["stage"] for e in events(project) if e["event"] == "agent_begin"] == ["PLAN"]
    # It says what happened: planned, not COMPLETE (the spec is far from complete), in its report
    # as in its commit; a later `ralph pr` would open a draft.
    assert done.stdout.splitlines()[0] == "ralph: PLANNED: planned 3 tasks"
    assert pullrequest.last_report(project)["outcome"] == "PLANNED"
    assert subjects(project)[0] == "ralph: construct specs/app.md ended: PLANNED"
    ended = events(project)[-1]
    assert (
        ended["event"] == "construct_end" and ended["outcome"] == "PLANNED" and ended["ending"] == "planned"
    )
    assert next(r for r in plan_records(project) if r["t"] == "state")["stage"] == "PLANNED"
    assert_clean(project)


# `make test` has it in process, in stages/test_retries.py:
# test_a_run_stopped_to_compact_goes_on_in_a_fresh_run_told_its_context
@pytest.mark.slow
def test_context_pressure_warns_then_compacts_and_the_task_continues(project):
    (task_id,) = add_tasks(project, "Big [context-grow]")
    done = construct(project)
    assert done.returncode == 0, done.stdout + done.stderr
    journal = events(project)
    warn = next(e for e in journal if e["event"] == "context_warn")
    assert warn["fill"] == pytest.approx(0.75)
    compact = next(e for e in journal if e["event"] == "context_compact")
    assert compact["item"] == task_id and compact["fill_before"] == pytest.approx(0.875)
    after = next(e for e in journal if e["event"] == "context_after_compaction")
    assert after["fill"] == pytest.approx(0.10)
    assert (
        "Context pressure: 75% - consider wrapping up"
        in (project / warn_log(journal, task_id, 0)).read_text()
    )
    continuation = project / warn_log(journal, task_id, 1)
    prompt = continuation.with_suffix(".prompt.md").read_text()
    assert prompt.startswith("=== COMPACTED CONTEXT ===\nTask: BUILD " + task_id + " Big [context-grow]")
    block = prompt.split("=== END COMPACTED ===")[0]
    for part in ("Progress:", "Current state:", "Key files:", "Blockers:", "Next step:"):
        assert f"\n{part}" in block, part  # the construct spec's form
    assert "[RALPH] Context compacted: 88% -> 10%" in continuation.read_text()
    assert not [e for e in journal if e["event"] == "task_killed"]
    assert any(r["t"] == "accept" and r["id"] == task_id for r in plan_records(project))


@pytest.mark.slow
def test_a_verifier_is_compacted_and_continues_too(project):
    (task_id,) = add_tasks(project, "Checked at length [verify-context-grow]")
    done = construct(project)
    assert done.returncode == 0, done.stdout + done.stderr
    journal = events(project)
    compact = next(e for e in journal if e["event"] == "context_compact")
    assert compact["stage"] == "VERIFY" and compact["item"] == task_id
    verifiers = [e for e in journal if e["event"] == "agent_begin" and e["stage"] == "VERIFY"]
    assert len(verifiers) == 2  # the stopped one, and its continuation that gave the verdict
    prompt = (project / verifiers[1]["log"]).with_suffix(".prompt.md").read_text()
    assert prompt.startswith(f"=== COMPACTED CONTEXT ===\nTask: VERIFY {task_id}")
    assert "it gave no verdict yet" in prompt
    assert any(r["t"] == "accept" and r["id"] == task_id for r in plan_records(project))


# `make test` has it in process, in stages/test_retries.py:
# test_the_context_warning_is_given_once_per_run
@pytest.mark.slow
def test_context_warning_is_given_once_per_run(project):
    (task_id,) = add_tasks(project, "Warm [context-warm]")
    done = construct(project)
    assert done.returncode == 0, done.stdout + done.stderr
    journal = events(project)
    warns = [e for e in journal if e["event"] == "context_warn"]
    assert len(warns) == 1, warns  # four turns above the threshold, one warning
    assert warns[0]["item"] == task_id and warns[0]["fill"] == pytest.approx(0.725)
    assert (project / warn_log(journal, task_id, 0)).read_text().count("[RALPH] Context pressure") == 1
    assert not [e for e in journal if e["event"] in ("context_compact", "task_killed")]
    assert any(r["t"] == "accept" and r["id"] == task_id for r in plan_records(project))


# `make test` has it in process/test_gate.py::test_the_gate_sees_no_ralph_variables and
# runs/test_agent_process.py::test_agents_get_the_repository_as_pwd_and_the_item_in_their_environment
@pytest.mark.slow
def test_the_gate_gets_no_ralph_variables_but_the_agent_does(project, tmp_path):
    recorded = tmp_path / "gate-env.json"
    gate = tmp_path / "record_env.py"
    gate.write_text(
        "import json, os, pathlib\n"
        f"pathlib.Path({str(recorded)!r}).write_text("
        "json.dumps(sorted(k for k in os.environ if k.startswith('RALPH_'))))\n"
    )
    (task_id,) = add_tasks(project, "Observed [record-env]")
    # As when ralph itself runs inside an agent's shell: stale loop variables in its environment.
    stale = {"RALPH_TASK_ID": "t-stale0", "RALPH_STAGE": "BUILD"}
    done = construct(project, "--gate", f"{sys.executable} {gate}", env=stale)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(recorded.read_text()) == []
    agent_env = json.loads((project.parent / "agent-state" / f"{task_id}.agent-env.json").read_text())
    assert {"RALPH_TASK_ID", "RALPH_STAGE", "RALPH_COMMIT", "RALPH_SPEC", "RALPH_BIN"} <= set(agent_env)


def warn_log(journal: list[dict], task_id: str, index: int) -> str:
    runs = [
        e
        for e in journal
        if e["event"] == "agent_begin" and e.get("item") == task_id and e["stage"] == "BUILD"
    ]
    return runs[index]["log"]


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_a_build_stopped_at_the_context_limit_is_killed_set_aside_and_its_parts_accepted
# (both cases end in a kill at the context limit through the same stop; which fills are a kill is
# tests/loop/runs/test_pressure.py's, the compaction before it stages/test_retries.py's)
@pytest.mark.slow
@pytest.mark.parametrize("marker", ["[context-explode]", "[context-stuck]"])
def test_context_kill_or_failed_compaction_kills_the_task_for_decompose(project, marker):
    (task_id,) = add_tasks(project, f"Huge {marker}")
    done = construct(project)
    assert done.returncode == 0, done.stdout + done.stderr
    killed = [e for e in events(project) if e["event"] == "task_killed"]
    assert killed[0]["item"] == task_id and killed[0]["kill_reason"] == "context_limit"
    if marker == "[context-stuck]":
        after = next(e for e in events(project) if e["event"] == "context_after_compaction")
        assert after["fill"] == pytest.approx(0.85)
    kill_commit = git(
        project, "log", "--format=%H", f"--grep=^ralph(build): {task_id} killed (context_limit)"
    ).split()
    assert kill_commit
    accepted = sorted(r["name"] for r in plan_records(project) if r["t"] == "accept")
    assert accepted == ["Huge (part 1)", "Huge (part 2)"]


def test_the_time_budget_stops_a_running_agent_at_the_deadline_not_at_its_timeout(project):
    (task_id,) = add_tasks(project, "Slow [hang]")
    # 0.6 s of budget, doubled for another run while the budget ran out before the agent started
    # (a loaded machine's start-up can take longer): the test is about an agent running then.
    for minutes in (0.01, 0.02, 0.04, 0.08, 0.16):
        done = construct(project, "--max-minutes", str(minutes), "--timeout", "30s")
        assert done.returncode == 4, done.stdout + done.stderr
        if any(e["event"] == "agent_begin" for e in events(project)):
            break
    assert "the running agent was stopped" in done.stdout
    # Stopped by the budget, not by its 30 s timeout: no timeout kill, the stop in the agent's log.
    task = json.loads(ralph_in_process(project, "task", "show", task_id).stdout)
    assert "kill_reason" not in task and not task.get("attempts")  # not held against the task
    assert "budget_spent" in [e["event"] for e in events(project)]
    assert not [e for e in events(project) if e["event"] == "task_killed"]
    assert_clean(project)


# `make test` has it in process, in stages/test_retries.py:
# test_a_rate_limit_is_waited_out_and_the_run_again_is_not_an_attempt
@pytest.mark.slow
def test_a_rate_limit_is_waited_out_and_is_not_an_attempt(project, tmp_path):
    add_tasks(project, "One")
    message = 'API Error: 429 {"type":"error","error":{"type":"rate_limit_error"}} Please retry after 1s'
    agent = limited_once(tmp_path, 429, message)
    done = construct(project, "--max-attempts", "1", agent=agent)  # one failed attempt would kill it
    assert done.returncode == 0, done.stdout + done.stderr
    assert "BUILD t-" in done.stderr and "waiting for the rate limit until" in done.stderr  # the console
    (wait,) = [e for e in events(project) if e["event"] == "limit_wait"]
    assert wait["kind"] == "rate_limit" and 1 <= wait["seconds"] < 2 and wait["stage"] == "BUILD"
    assert "task_killed" not in [e["event"] for e in events(project)]
    assert_clean(project)


def test_an_authentication_error_stops_the_run_with_its_own_outcome_and_a_hint(project, tmp_path):
    (task_id,) = add_tasks(project, "One")
    agent = limited_once(tmp_path, 401, "Invalid API key · Please run /login")
    done = construct(project, agent=agent)
    assert done.returncode == 7, done.stdout + done.stderr
    assert "AGENT_AUTH: the agent could not authenticate (Invalid API key" in done.stdout
    task = json.loads(ralph_in_process(project, "task", "show", task_id).stdout)
    assert not task.get("attempts") and not task.get("gate_failure")  # not held against the task
    assert_clean(project)


def test_a_usage_limit_that_lifts_after_max_wait_ends_the_run_saying_when(project, tmp_path):
    add_tasks(project, "One")
    config = {"t": "config", "max_wait_ms": 1000}
    plan = project / "plan.jsonl"
    plan.write_text(plan.read_text() + json.dumps(config) + "\n")
    git(project, "commit", "-qam", "max_wait 1 s")
    reset = int(time.time()) + 7200
    done = construct(project, agent=limited_once(tmp_path, 429, f"Claude AI usage limit reached|{reset}"))
    assert done.returncode == 8, done.stdout + done.stderr
    assert "the usage limit lifts at" in done.stdout and "later than max_wait (1s)" in done.stdout
    assert_clean(project)


@pytest.mark.slow  # 13 s: three tasks through gate failures, a rejection and a decomposition
def test_ralph_log_tells_what_the_loop_did(project):
    """issue 11: a construct run's history, read back by `ralph log`, with the right labels. (The
    fast tests in tests/cli/test_log.py make the loop's plan changes through its Plan methods.)"""
    flaky, picky, hard = add_tasks(
        project, "Flaky [gate-fails-once]", "Picky [reject-once]", "Hard [gate-always-fails]"
    )
    # one build at a time: beside running builds a first failure waits for them, uncounted
    done = construct(project, "--max-attempts", "2", "--parallel", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    logged = in_process(["-C", str(project), "log", "--json"], dict(os.environ))
    assert logged.returncode == 0, logged.stderr
    timeline = [json.loads(line) for line in logged.stdout.splitlines()]
    said = [(event["event"], event["id"]) for event in timeline]
    assert ("attempt failed", flaky) in said and ("built", flaky) in said and ("accepted", flaky) in said
    failed = next(event for event in timeline if event["event"] == "attempt failed" and event["id"] == flaky)
    assert failed["verdict"] == "gate_failed"
    assert ("rejected", picky) in said and ("accepted", picky) in said
    killed = next(event for event in timeline if event["event"] == "killed")
    assert (killed["id"], killed["kill_reason"]) == (hard, "doom_loop")
    decomposed = next(event for event in timeline if event["event"] == "decomposed")
    assert decomposed["id"] == hard and len(decomposed["into"]) == 2
    assert all(("accepted", child) in said for child in decomposed["into"])
    assert not [event for event in timeline if event["event"] == "deleted"]
    assert not [event for event in timeline if event["by_hand"]]
    built = next(event for event in timeline if event["event"] == "build commit" and event["id"] == flaky)
    assert git(project, "cat-file", "-t", built["build_commit"]).strip() == "commit"
    story = in_process(["-C", str(project), "log", "--task", flaky, "--json"], dict(os.environ))
    summary = json.loads(story.stdout.splitlines()[-1])
    assert (summary["now"], summary["gate_failures"], len(summary["attempts"])) == ("accepted", 1, 2)
    assert summary["files"] == [f"work/{flaky}.txt"]
