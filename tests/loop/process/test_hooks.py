"""Config hooks through the real loop: each hook event reaches the hook's stdin as JSON with the
schema version; a hook that fails, hangs past its timeout or cannot start is journalled and the
run goes on. The scripted agents are tests/support/scripts/fake_agent.py's. Where a hook's program
is looked up, the hooks and a real supervisor are enough: no run."""

from __future__ import annotations

import json
import os
import signal
import sys

import pytest

from ralph.loop.observe.journal import Journal, read_events
from ralph.loop.process.hooks import Hooks
from ralph.loop.process.supervisor import Supervisor
from ralph.loop.runs.agent_process import LOG_DIR
from ralph.store.git import Repo
from ralph.usecases.settings import Settings
from tests.support.construct import (
    add_tasks,
    assert_clean,
    construct,
    events,
    gone,
    limited_once,
    wait_for,
)
from tests.support.gitrepo import git
from tests.support.hooks import APPEND, HANG, config_set, received_events, script


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_each_hook_event_reaches_the_hook_as_versioned_json_on_its_stdin (each event's JSON, each
# hook run journalled) and stages/test_retries.py:
# test_a_rate_limit_wait_reaches_the_limit_wait_hook_as_versioned_json; a real run's hooks reading
# their JSON on stdin, the run waiting for run_ended's, their logs ignored by git:
# test_stops.py's test_the_run_ended_hook_runs_when_the_time_budget_ends_the_run, this module's
# test_a_hook_script_in_the_work_tree_runs_as_the_commit_the_run_started_on_has_it and
# test_a_failing_hanging_or_missing_hook_is_journalled_and_the_run_completes
@pytest.mark.slow
def test_each_hook_event_reaches_the_hook_as_json_on_stdin(project, tmp_path):
    received = tmp_path / "events.jsonl"
    config_set(
        project, "hooks", {"any": [sys.executable, script(tmp_path, "append.py", APPEND), str(received)]}
    )
    one, colour, hard = add_tasks(project, "One", "Colour [ask]", "Hard [gate-always-fails]")
    limited = limited_once(tmp_path, 429, "API Error: 429 rate_limit_error. Please retry after 1s")
    done = construct(project, "--max-attempts", "1", agent=limited)  # one failed gate kills Hard
    assert done.returncode == 9, done.stdout + done.stderr  # WAITING: the question is not answered
    got, by_event = received_events(received, project)
    assert set(by_event) == {"limit_wait", "task_accepted", "question_asked", "task_killed", "run_ended"}
    assert by_event["limit_wait"][0]["kind"] == "rate_limit" and by_event["limit_wait"][0]["stage"] == "BUILD"
    assert {event["item"] for event in by_event["task_accepted"]} >= {one}
    assert [event["item"] for event in by_event["question_asked"]] == [colour]
    assert [(e["item"], e["kill_reason"]) for e in by_event["task_killed"]] == [(hard, "doom_loop")]
    assert [e["outcome"] for e in by_event["run_ended"]] == ["WAITING"]
    assert got[-1]["event"] == "run_ended"  # the run waited for its end's hooks
    assert len([e for e in events(project) if e["event"] == "hook_ran"]) == len(got)
    assert_clean(project)  # hook logs are under build/ralph-logs/, which git ignores


def test_a_failing_hanging_or_missing_hook_is_journalled_and_the_run_completes(project, tmp_path):
    pid_file = tmp_path / "hang.pid"
    config_set(project, "hook_timeout_ms", "5s")  # long enough for the hang script to start under load
    config_set(
        project,
        "hooks",
        {
            "task_accepted": [sys.executable, "-c", "import sys; sys.exit(1)"],
            "run_ended": f"{sys.executable} {script(tmp_path, 'hang.py', HANG)} {pid_file}",
            "any": [str(tmp_path / "no-such-hook")],
        },
    )
    add_tasks(project, "One")
    done = construct(project)
    assert done.returncode == 0 and "COMPLETE" in done.stdout, done.stdout + done.stderr
    failed = [e for e in events(project) if e["event"] == "hook_failed"]
    assert {(e["hook"], e.get("exit_code"), e.get("stop_reason")) for e in failed if "error" not in e} == {
        ("task_accepted", 1, None),
        ("run_ended", None, "timeout"),
    }
    missing = [e for e in failed if "error" in e]
    assert {e["hook"] for e in missing} == {"task_accepted", "run_ended"}
    assert all("cannot start" in e["error"] for e in missing)
    assert gone(int(pid_file.read_text()))  # the hanging hook was stopped, not left behind
    hung = next(e for e in failed if e.get("stop_reason") == "timeout")
    assert "stopping the agent's process group: timeout" in (project / hung["log"]).read_text()
    assert_clean(project)


# `make test` has it without a run, in
# test_a_hook_named_by_its_program_alone_is_looked_up_on_a_path_without_the_work_tree_or_relative_entries
# (the Hooks and a real Supervisor); a hook that cannot start in a run that goes on:
# test_a_failing_hanging_or_missing_hook_is_journalled_and_the_run_completes
@pytest.mark.slow
def test_a_hook_never_runs_a_program_from_the_work_tree_or_a_relative_path(project, tmp_path):
    """A hook named by its program alone, with ./bin and the work tree's bin on PATH: not the
    one there (an agent's to write), which never runs; the hook cannot start and the run goes on."""
    ran = tmp_path / "ran"
    program = project / "bin" / "notify-me"
    program.parent.mkdir()
    program.write_text(f"#!/bin/sh\necho ran >> {ran}\n")
    program.chmod(0o755)
    with open(project / ".git" / "info" / "exclude", "a") as exclude:
        exclude.write("/bin/\n")
    config_set(project, "hooks", {"run_ended": ["notify-me"]})
    add_tasks(project, "One")
    path = os.pathsep.join([str(project / "bin"), "bin", os.environ["PATH"]])
    done = construct(project, env={"PATH": path})
    assert done.returncode == 0 and "COMPLETE" in done.stdout, done.stdout + done.stderr
    assert not ran.exists()
    failed = [e for e in events(project) if e["event"] == "hook_failed"]
    assert [e["hook"] for e in failed] == ["run_ended"] and "cannot start" in failed[0]["error"]


def test_a_hook_named_by_its_program_alone_is_looked_up_on_a_path_without_the_work_tree_or_relative_entries(
    repo, tmp_path, monkeypatch
):
    """ralph's PATH has the work tree's bin and a relative bin first, each with a program of the
    hook's name (an agent's to write): the hook is looked up past both, really started by the
    supervisor, so one found nowhere else cannot start and says so; one of the same PATH outside
    the work tree runs."""
    ran = tmp_path / "ran"
    for folder in (repo / "bin", tmp_path / "tools"):
        folder.mkdir()
        for name in ("notify-me", "notify-outside"):
            (folder / name).write_text(f"#!/bin/sh\necho {folder.name} >> {ran}\n")
            (folder / name).chmod(0o755)
    (tmp_path / "tools" / "notify-me").unlink()  # found nowhere but in the work tree
    monkeypatch.setenv(
        "PATH", os.pathsep.join([str(repo / "bin"), "bin", str(tmp_path / "tools"), os.environ["PATH"]])
    )
    Repo(repo)  # the work tree is fenced, as by the run's first Repo
    journal = Journal(tmp_path / "events.jsonl")
    settings = Settings(hooks={"run_ended": ["notify-me"], "any": ["notify-outside"]}, hook_timeout_s=60)
    hooks = Hooks(repo, settings, Supervisor(), journal, LOG_DIR)
    journal.listener = hooks.notify

    journal.event("construct_end", outcome="COMPLETE")
    hooks.close()

    assert ran.read_text().splitlines() == ["tools"]  # the one outside ran; none of the work tree's
    told = [e for e in read_events(journal.path) if e["event"].startswith("hook_")]
    assert [(e["event"], e["argv"]) for e in told] == [
        ("hook_failed", ["notify-me"]),
        ("hook_ran", ["notify-outside"]),
    ]
    assert "cannot start" in told[0]["error"]


def test_sigterm_stops_a_running_hook_with_the_run(project, tmp_path):
    pid_file = tmp_path / "hang.pid"
    config_set(project, "hook_timeout_ms", "5m")  # only the signal can stop it in time
    config_set(
        project,
        "hooks",
        {"question_asked": [sys.executable, script(tmp_path, "hang.py", HANG), str(pid_file)]},
    )
    add_tasks(project, "Colour [ask]", "Other")
    running = construct(project, wait=False)
    wait_for(pid_file.exists, "the hook never started")
    wait_for(lambda: pid_file.read_text().strip(), "the hook never wrote its pid")
    running.send_signal(signal.SIGTERM)
    out, err = running.communicate(timeout=60)
    assert running.returncode == 143, out + err
    assert gone(int(pid_file.read_text())), "the hook outlived ralph"


SLOW_NOTIFY = """import json, pathlib, sys, time
payload = json.load(sys.stdin)
folder = pathlib.Path(sys.argv[1])
(folder / "started").write_text(payload["outcome"])
time.sleep(2)
(folder / "sent").write_text(payload["outcome"])
"""


def test_a_signal_during_the_last_hook_of_a_finished_run_neither_changes_its_outcome_nor_stops_the_notice(
    project, tmp_path
):
    """The run ended COMPLETE (committed) and its run_ended hook is notifying when SIGTERM comes
    (a CI job's end): the notification still goes out, bounded by its timeout, and the report,
    last-report.json and the exit code say COMPLETE."""
    config_set(
        project,
        "hooks",
        {"run_ended": [sys.executable, script(tmp_path, "notify.py", SLOW_NOTIFY), str(tmp_path)]},
    )
    add_tasks(project, "One")
    running = construct(project, "--json", wait=False)
    wait_for((tmp_path / "started").exists, "the run_ended hook never started")

    running.send_signal(signal.SIGTERM)
    out, err = running.communicate(timeout=60)

    assert running.returncode == 0, out + err
    assert (tmp_path / "sent").read_text() == "COMPLETE"  # the notification went out whole
    assert json.loads(out)["outcome"] == "COMPLETE"
    last = json.loads((project / "build" / "ralph-logs" / "last-report.json").read_text())
    assert last["outcome"] == "COMPLETE"


REWRITER = """import os, sys
sys.path.insert(0, os.environ["AGENT_KIT_DIR"])
from pathlib import Path
from agent_kit import ralph

stage, task = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID")
if stage == "BUILD":  # rewrites the hook's script, then does its task
    Path("scripts/hook.py").write_text("import sys\\nopen(sys.argv[1], 'a').write('rewritten\\\\n')\\n")
    Path("work").mkdir(exist_ok=True)
    Path("work", f"{task}.txt").write_text("ok\\n")
    ralph("task", "done", task)
elif stage == "VERIFY":
    ralph("task", "accept", task)
"""


def test_a_hook_script_in_the_work_tree_runs_as_the_commit_the_run_started_on_has_it(project, tmp_path):
    """The docs' own example (`python3 scripts/slack_hook.py`): a BUILD rewrites the script, and
    ralph commits it with the build; every hook of the run still runs the script it started with."""
    ran = tmp_path / "ran"
    (project / "scripts").mkdir()
    (project / "scripts" / "hook.py").write_text("import sys\nopen(sys.argv[1], 'a').write('committed\\n')\n")
    git(project, "add", "scripts")
    git(project, "commit", "-qm", "a hook script")
    hook = [sys.executable, "scripts/hook.py", str(ran)]
    config_set(project, "hooks", {"task_accepted": hook, "run_ended": hook})
    add_tasks(project, "One")
    agent = tmp_path / "rewriter.py"
    agent.write_text(REWRITER)
    done = construct(project, agent=f"{sys.executable} {agent}")
    assert done.returncode == 0 and "COMPLETE" in done.stdout, done.stdout + done.stderr
    assert "rewritten" in (project / "scripts" / "hook.py").read_text()  # committed by the build
    assert ran.read_text().splitlines() == ["committed", "committed"]


def test_a_hook_naming_a_file_of_the_work_tree_no_commit_has_is_refused_in_one_line(project, tmp_path):
    ran = tmp_path / "ran"
    (project / "local").mkdir()
    (project / "local" / "hook.py").write_text(f"open({str(ran)!r}, 'a').write('ran\\n')\n")
    with open(project / ".git" / "info" / "exclude", "a") as exclude:
        exclude.write("/local/\n")
    config_set(project, "hooks", {"run_ended": [sys.executable, "local/hook.py"]})
    add_tasks(project, "One")
    done = construct(project)
    assert done.returncode == 0 and "COMPLETE" in done.stdout, done.stdout + done.stderr
    said = [line for line in done.stderr.splitlines() if "refused" in line]
    assert len(said) == 1 and "hook run_ended refused: local/hook.py lies in the work tree" in said[0]
    assert [e["path"] for e in events(project) if e["event"] == "hook_refused"] == ["local/hook.py"]
    assert not ran.exists()
