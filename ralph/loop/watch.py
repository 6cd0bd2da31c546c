"""`ralph watch`: the console's view of a construct run, from another terminal. It reads what the
run writes as it goes (the journal, each agent's readable transcript) and never touches the run:
the clock, each running agent, the last gate, tokens and cost, and the agents' last actions."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

from ralph.agents.transcript import last_actions, transcript_path
from ralph.loop.console import GateView, RunView, View, clip, render, terminal_width, wants_color
from ralph.ops import runs
from ralph.secrets import redact
from ralph.text import terminal_text

POLL_S = 0.5
ACTIONS = 4  # last actions shown per running agent
NO_RUN = 1  # the exit code when no run is active


def epoch(ts: str | None) -> float:
    try:
        return datetime.fromisoformat(str(ts)).timestamp()
    except ValueError:
        return time.time()


def view_of(root: Path, events: list[dict]) -> View:
    """The view of the latest run in `events` (the journal's)."""
    events = runs.last_run(events)
    view = View(started=epoch(events[0].get("ts")) if events else time.time())
    for event in events:
        kind = event.get("event")
        if kind == "iteration_begin":
            view.iteration = event.get("iteration") or view.iteration
        elif kind == "stage_begin":
            view.stage = str(event.get("stage") or "")
        elif kind in ("gate_end", "hook_end"):
            summary = str(event.get("summary") or "")
            lines = [line for line in summary.splitlines() if line.strip()]
            what = "gate" if kind == "gate_end" else "pre-commit hook"
            view.gate = GateView(
                str(event.get("item") or ""), bool(event.get("ok")), lines, str(event.get("log")), what
            )
        elif kind == "spent":
            view.tokens, view.cost_usd = event.get("tokens") or 0, event.get("cost_usd") or 0.0
        elif kind == "limit_wait":
            view.waiting = f"waiting for a {event.get('kind')} until {event.get('until')}"
        elif kind == "agent_begin":
            view.waiting = ""  # the wait is over: the run goes on
    for agent in runs.running_agents(events):
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


def snapshot(root: Path, color: bool = False, width: int = 10_000) -> list[str]:
    events, _ = runs.journal_events(root)
    return [clip(line, width) for line in render(view_of(root, events), time.time(), color)]


def watch(root: Path, stream, once: bool = False, err=None) -> int:
    """Follow the running construct until it ends; 0 then, NO_RUN at once when none runs (saying
    so on `err`)."""
    status = runs.run_status(root)
    if not status["active"]:
        said = runs.describe(status).replace("run: not running", "ralph watch: no run is active", 1)
        (err or stream).write(terminal_text(said) + "\n")
        return NO_RUN
    live = stream.isatty()
    if once or not live:
        stream.write("\n".join(snapshot(root)) + "\n")
        if once:
            return 0
    color, drawn, offset, events = live and wants_color(stream), 0, 0, []
    shown: list[str] = []
    while runs.holder(root) is not None:
        new, offset = runs.journal_events(root, offset)
        events += new
        lines = render(view_of(root, events), time.time(), color)
        if live:
            width = terminal_width(stream)
            stream.write(
                (f"\033[{drawn}F\033[J" if drawn else "")
                + "".join(clip(line, width) + "\n" for line in lines)
            )
            drawn = len(lines)
        elif _without_clock(lines) != _without_clock(shown):  # a pipe: a new snapshot when it changed
            stream.write("\n".join(lines) + "\n")
        shown = lines
        stream.flush()
        time.sleep(POLL_S)
    ended = runs.run_status(root)
    said = runs.describe(ended).replace("run: not running; the last", "ralph watch: the run", 1)
    stream.write(terminal_text(said) + "\n")
    return 0


def _without_clock(lines: list[str]) -> list[str]:
    return [line.split(" · ", 1)[-1] for line in lines[:1]] + [line.rsplit(" · ", 1)[0] for line in lines[1:]]
