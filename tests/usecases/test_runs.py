"""Whether a construct runs now and what it does, or how the last one ended (ralph/usecases/runs.py), read
from a construct lock and a journal written here by hand. Real runs followed by `ralph status` and
`ralph watch` are in tests/loop/observe/test_watch.py."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

from ralph.usecases import runs
from tests.support.locks import killed_holder


def journal(root: Path, *events: dict, tail: bytes = b"") -> Path:
    path = root / runs.JOURNAL
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(json.dumps(event).encode() + b"\n" for event in events) + tail)
    return path


def event(kind: str, ts: str, **fields) -> dict:
    return {"event": kind, "ts": ts, **fields}


def test_journal_events_are_whole_lines_from_an_offset_and_a_line_being_written_waits(tmp_path):
    begin = event("construct_begin", "2026-11-20T09:00:00.000", spec="specs/app.md")
    path = journal(tmp_path, begin, tail=b"not json\n[1, 2]\n" + b'{"event": "stage_beg')
    events, offset = runs.journal_events(tmp_path)
    assert events == [begin] and offset == path.stat().st_size - len(b'{"event": "stage_beg')
    with open(path, "ab") as handle:
        handle.write(b'in", "ts": "2026-11-20T09:00:01.000"}\n')
    assert runs.journal_events(tmp_path, offset) == (
        [{"event": "stage_begin", "ts": "2026-11-20T09:00:01.000"}],
        path.stat().st_size,
    )
    assert runs.journal_events(tmp_path / "elsewhere", 7) == ([], 7)


def test_a_journal_truncated_or_replaced_is_read_again_from_its_start(tmp_path):
    """logrotate's copytruncate, or a person clearing the logs, while `ralph watch` follows: the
    offset it held is past the end, and the events written since are read from the start."""
    first = [event("construct_begin", "1"), event("agent_begin", "2", log="a.log")]
    path = journal(tmp_path, *first)
    events, offset = runs.journal_events(tmp_path)
    assert events == first
    after = event("agent_end", "3", log="a.log")
    journal(tmp_path, after)  # truncated, then written again: shorter than before
    assert path.stat().st_size < offset
    assert runs.journal_events(tmp_path, offset) == ([after], path.stat().st_size)


def test_the_last_run_and_its_agents_still_running():
    events = [
        event("construct_begin", "1"),
        event("construct_end", "2", outcome="COMPLETE"),
        event("construct_begin", "3"),
        event("agent_begin", "4", stage="BUILD", item="t-a", log="a.log"),
        event("agent_begin", "5", stage="VERIFY", item="t-b", log="b.log"),
        event("agent_end", "6", log="a.log"),
    ]
    assert runs.last_run(events) == events[2:] and runs.last_run(events[3:]) == []
    assert runs.running_agents(events) == [events[4]]


def test_no_lock_and_a_finished_run_reads_as_how_it_ended(repo):
    journal(
        repo,
        event("construct_begin", "2026-11-20T09:00:00.123", spec="specs/app.md"),
        event("construct_end", "2026-11-20T09:30:00.456", outcome="COMPLETE"),
    )
    status = runs.run_status(repo)
    assert status.active is False and status.last == runs.LastRun(
        spec="specs/app.md", started="2026-11-20T09:00:00.123",
        outcome="COMPLETE", ended="2026-11-20T09:30:00.456",
    )  # fmt: skip
    assert status.to_json() == {"active": False, "pid": None, "since": None, "last": status.last._asdict()}
    assert runs.describe(status) == "run: not running; the last ended COMPLETE at 2026-11-20 09:30:00 UTC"


def test_a_run_with_no_end_in_the_journal_stopped_without_finishing(repo):
    assert runs.describe(runs.run_status(repo)) == "run: not running (no run yet)"
    journal(
        repo,
        event("construct_begin", "2026-11-20T09:00:00.000"),
        event("stage_begin", "2026-11-20T09:05:00.000"),
    )
    status = runs.run_status(repo)
    assert status.last is not None
    assert status.last.outcome is None and status.last.ended == "2026-11-20T09:05:00.000"
    assert runs.describe(status) == (
        "run: not running; the last stopped without finishing (killed?), "
        "last heard of at 2026-11-20 09:05:00 UTC"
    )


def test_a_run_killed_holding_its_lock_reads_as_not_running_and_watch_has_none_to_follow(repo):
    """A real process took the construct lock as `ralph construct` does and was SIGKILLed with it,
    its run begun in the journal with no end: its lock file still names it, and the run reads as
    stopped without finishing; `ralph watch --once` has no run to follow (exit 1)."""
    from io import StringIO

    from ralph.loop.observe.watch import NO_RUN, watch

    journal(
        repo,
        event("construct_begin", "2026-11-20T09:00:00.000"),
        event("agent_begin", "2026-11-20T09:00:01.000", stage="BUILD", item="t-a", log="a.log"),
    )
    pid = killed_holder(repo, "construct")
    assert runs.lock_path(repo).read_text().startswith(f"pid {pid}, since ")
    status = runs.run_status(repo)
    assert not status.active and status.agents == ()
    assert runs.describe(status).startswith("run: not running; the last stopped without finishing (killed?)")
    said = StringIO()
    assert watch(repo, StringIO(), once=True, err=said) == NO_RUN == 1
    assert said.getvalue().startswith("ralph watch: no run is active; the last stopped without finishing")


def test_a_lock_file_is_a_live_run_only_while_its_process_lives_and_holds_it(repo):
    path = runs.lock_path(repo)
    assert runs.holder(repo) is None  # no lock file
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    path.write_text(f"pid {dead.stdout.strip()}, since 2026-11-20 09:00:00 UTC\n")
    assert runs.holder(repo) is None  # its process is gone
    path.write_text(f"pid {os.getpid()}, since 2026-11-20 09:00:00 UTC\n")
    assert runs.holder(repo) is None  # alive, but nothing holds the lock (the pid was reused)
    with open(path, encoding="utf-8") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert runs.holder(repo) == {"pid": os.getpid(), "since": "2026-11-20 09:00:00 UTC"}


def test_an_active_run_is_told_by_its_pid_iteration_and_agents_or_stage():
    agents = (
        runs.RunningAgent("BUILD", "t-a", "Parse\n the input", None, None),
        runs.RunningAgent("VERIFY", "t-b", "x" * 60, None, None),
    )
    status = runs.RunStatus(True, 42, "2026-11-20 09:00:00 UTC", iteration=3, agents=agents)
    assert runs.describe(status) == (
        "run: active (pid 42 since 2026-11-20 09:00:00 UTC), iteration 3: BUILD t-a Parse the input; "
        f"VERIFY t-b {'x' * 47}..."
    )
    assert runs.describe(runs.RunStatus(True, 42, stage="PLAN")) == "run: active (pid 42), PLAN"
