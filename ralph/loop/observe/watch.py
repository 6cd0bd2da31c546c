"""`ralph watch`: the console's view of a construct run, from another terminal. It reads what the
run writes as it goes (the journal, each agent's readable transcript) and never touches the run:
progress and budgets, each running agent, the last gate, tokens and cost as they stream, and the
agents' last actions. On a terminal it is full-screen and takes keys (ralph/loop/observe/follow.py); in a
pipe, under TERM=dumb or with --once, plain lines (ralph/loop/observe/live.py decides)."""

from __future__ import annotations

import re
import time
from datetime import datetime
from pathlib import Path
from typing import TextIO

from ralph.agents.transcript import last_actions, transcript_path
from ralph.loop.observe import live
from ralph.loop.observe.journal import JournalRecord
from ralph.loop.observe.view import GateView, RunUsage, RunView, View
from ralph.secrets import redact
from ralph.text import terminal_text
from ralph.usecases import runs

POLL_S = 0.5
_CLOCK = re.compile(r"\d+:\d\d(:\d\d)?")  # elapsed, run times, ETA, time left: they tick
ACTIONS = 4  # last actions shown per running agent
NO_RUN = 1  # the exit code when no run is active


def epoch(ts: str | None) -> float:
    try:
        return datetime.fromisoformat(str(ts)).timestamp()
    except ValueError:
        return time.time()


def view_of(root: Path, events: list[JournalRecord]) -> View:
    """The view of the latest run in `events` (the journal's)."""
    events = runs.last_run(events)
    view = View(started=epoch(events[0].get("ts")) if events else time.time())
    for event in events:
        kind = event.get("event")
        if kind == "iteration_begin":
            view.iteration = event.get("iteration") or view.iteration
        elif kind == "stage_begin":
            view.stage = str(event.get("stage") or "")
        elif kind in ("gate_end", "hook_end") and not event.get("cut_short"):  # no verdict: not shown
            summary = str(event.get("summary") or "")
            lines = [line for line in summary.splitlines() if line.strip()]
            what = "gate" if kind == "gate_end" else "pre-commit hook"
            view.gate = GateView(
                str(event.get("item") or ""), bool(event.get("ok")), lines, str(event.get("log")), what
            )
        elif kind == "spent":
            view.tokens, view.cost_usd = event.get("tokens") or 0, event.get("cost_usd") or 0.0
            view.progress.known_runs = event.get("known_runs") or 0
            view.progress.unknown_runs = event.get("unknown_runs") or 0
        elif kind == "progress":
            view.progress.update(epoch(event.get("ts")), **event)
        elif kind == "usage":
            view.progress.running[str(event.get("log"))] = RunUsage(
                event.get("tokens") or 0, event.get("cost_usd")
            )
        elif kind == "limit_wait":
            view.waiting = f"waiting for a {event.get('kind')} until {event.get('until')}"
        elif kind == "agent_begin":
            view.waiting = ""  # the wait is over: the run goes on
    running = runs.running_agents(events)
    logs = {str(agent.get("log")) for agent in running}
    view.progress.running = {log: usage for log, usage in view.progress.running.items() if log in logs}
    for agent in running:
        log = str(agent.get("log"))
        view.runs[log] = RunView(
            str(agent.get("stage")),
            str(agent.get("item") or ""),
            str(agent.get("name") or ""),
            log,
            epoch(agent.get("ts")),
        )
        item = agent.get("item") or agent.get("stage")
        actions = last_actions(transcript_path(root / log), ACTIONS)
        view.actions += [f"{item}: {redact(line)}" for line in actions]  # an older ralph's transcript
    return view


def snapshot(root: Path, color: bool = False, width: int | None = None) -> list[str]:
    events, _ = runs.journal_events(root)
    rows = live.view_rows(view_of(root, events), time.time(), width)
    return [live.plain(live.fit_row(row, width) if width else row, color) for row in rows]


def watch(
    root: Path,
    stream: TextIO,
    once: bool = False,
    err: TextIO | None = None,
    keyboard: TextIO | None = None,
) -> int:
    """Follow the running construct until it ends; 0 then (or when q is pressed), NO_RUN at once
    when none runs (saying so on `err`). `keyboard`: where keys come from on a terminal."""
    status = runs.run_status(root)
    if not status.active:
        said = runs.describe(status).replace("run: not running", "ralph watch: no run is active", 1)
        (err or stream).write(terminal_text(said) + "\n")
        return NO_RUN
    mode = live.mode_of(stream)
    if once or not mode.live:
        stream.write("\n".join(snapshot(root, mode.color)) + "\n")
        if once:
            return 0
        _follow_in_lines(root, stream, mode.color)
    else:
        from ralph.loop.observe import follow

        offset = 0

        def new_events() -> list[JournalRecord]:
            nonlocal offset
            new, offset = runs.journal_events(root, offset)
            return new

        follower = follow.Follower(
            lambda events: view_of(root, events),
            lambda log, count: [redact(line) for line in last_actions(transcript_path(root / log), count)],
        )
        ended = follow.run(
            follower, stream, keyboard, mode.color, new_events, lambda: runs.holder(root) is not None, POLL_S
        )
        if not ended:
            return 0
    ended_status = runs.run_status(root)
    said = runs.describe(ended_status).replace("run: not running; the last", "ralph watch: the run", 1)
    stream.write(terminal_text(said) + "\n")
    return 0


def _follow_in_lines(root: Path, stream: TextIO, color: bool) -> None:
    """A pipe (or TERM=dumb): a new snapshot whenever something but the clocks changed."""
    events: list[JournalRecord] = []
    offset, shown = 0, snapshot(root)
    while runs.holder(root) is not None:
        new, offset = runs.journal_events(root, offset)
        events += new
        rows = live.view_rows(view_of(root, events), time.time())
        lines = [live.plain(row) for row in rows]
        if _without_clock(lines) != _without_clock(shown):
            stream.write("\n".join(live.plain(row, color) for row in rows) + "\n")
            stream.flush()
        shown = lines
        time.sleep(POLL_S)


def _without_clock(lines: list[str]) -> list[str]:
    return [_CLOCK.sub("", line) for line in lines]
