"""Whether a `ralph construct` runs in this repository now, and what it does, or how the last one
ended: for `ralph status` and `ralph watch`.

Where it comes from: the construct lock (`.git/ralph-construct.lock`, held with flock for the
whole run and naming its pid and start) says whether a run is alive; the journal
(build/ralph-logs/events.jsonl) says what it does (agent runs begun and not ended) and how the
last one ended (`construct_end` and its outcome). A lock file left by a killed run is not held:
it reads as "not running", and a last run with no end in the journal as stopped without
finishing. Read only: it never takes the lock a run would want.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

from ralph.store import lock
from ralph.store.git import Repo

JOURNAL = Path("build") / "ralph-logs" / "events.jsonl"  # as ralph.loop.runs.agent_process.LOG_DIR has it


def lock_path(root: Path) -> Path:
    return Repo(root).git_dir() / lock.CONSTRUCT_LOCK_NAME


def holder(root: Path) -> dict[str, Any] | None:
    """The live run holding the construct lock: {"pid", "since"}, or None (no lock file, or one
    left by a run that died: its process is gone, or nothing holds the lock)."""
    state = lock.probe(lock_path(root))
    named = lock.holder_of(state.holder) if state is not None and state.held else None
    if named is None or not _alive(named[0]):
        return None
    return {"pid": named[0], "since": named[1]}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def journal_events(root: Path, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """The journal's events from byte `offset` on (whole lines only), and the offset after them.
    A journal shorter than `offset` was truncated or replaced (a log rotation, a person clearing
    the logs): it is read from its start."""
    path = root / JOURNAL
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size < offset:
                offset = 0
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return [], offset
    end = data.rfind(b"\n") + 1  # a line being written is read next time
    events = []
    for line in data[:end].splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events, offset + end


def last_run(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events of the latest construct run (from its `construct_begin`)."""
    starts = [n for n, event in enumerate(events) if event.get("event") == "construct_begin"]
    return events[starts[-1] :] if starts else []


def running_agents(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Agent runs begun and not ended, oldest first: stage, item, name, log, ts."""
    running: dict[str, dict[str, Any]] = {}
    for event in events:
        kind, log = event.get("event"), event.get("log")
        if kind == "agent_begin":
            running[str(log)] = event
        elif kind == "agent_end":
            running.pop(str(log), None)
    return list(running.values())


# Typed results, as NamedTuples: `dataclasses` would cost every `ralph status` ~1.5 ms to import.
class RunningAgent(NamedTuple):
    """An agent run begun and not ended, as the journal names it."""

    stage: str | None
    item: str | None
    name: str | None
    log: str | None
    ts: str | None


class LastRun(NamedTuple):
    """How the last run ended, when none runs now."""

    spec: str | None
    started: str | None
    outcome: str | None  # its journal's: an Outcome's name, PLANNED or ERROR; None: stopped without an end
    ended: str | None


class RunStatus(NamedTuple):
    """Whether a construct runs now (pid, since, what it does) or how the last one ended."""

    active: bool
    pid: int | None = None
    since: str | None = None
    last: LastRun | None = None
    agents: tuple[RunningAgent, ...] = ()  # these three only while a run is active
    stage: str | None = None
    iteration: int | None = None

    def to_json(self) -> dict[str, Any]:
        """{"active", "pid", "since", "last"}, and while active "agents", "stage", "iteration"."""
        data: dict[str, Any] = {
            "active": self.active,
            "pid": self.pid,
            "since": self.since,
            "last": self.last._asdict() if self.last else None,
        }
        if self.active:
            data["agents"] = [agent._asdict() for agent in self.agents]
            data["stage"], data["iteration"] = self.stage, self.iteration
        return data


def run_status(root: Path) -> RunStatus:
    live = holder(root)
    events = last_run(journal_events(root)[0])
    ended = next((e for e in reversed(events) if e.get("event") == "construct_end"), None)
    begun = events[0] if events else None
    if live:
        if begun and _before(begun.get("ts"), live.get("since")):
            events = []  # the journal's latest run is an earlier one: this one has not begun yet
        stages = [e for e in events if e.get("event") == "stage_begin"]
        iterations = [e for e in events if e.get("event") == "iteration_begin"]
        return RunStatus(
            True,
            live["pid"],
            live["since"],
            agents=tuple(
                RunningAgent(*(agent.get(key) for key in RunningAgent._fields))
                for agent in running_agents(events)
            ),
            stage=stages[-1].get("stage") if stages else None,
            iteration=iterations[-1].get("iteration") if iterations else None,
        )
    if not begun:
        return RunStatus(False)
    return RunStatus(
        False,
        last=LastRun(
            spec=begun.get("spec"),
            started=begun.get("ts"),
            outcome=ended.get("outcome") if ended else None,
            ended=ended.get("ts") if ended else _last_ts(events),
        ),
    )


def _before(ts: str | None, since: str | None) -> bool:
    """Whether the journal time `ts` is before the lock's `since` (both UTC, to the second)."""
    if not ts or not since or not since.endswith(" UTC"):
        return False
    return ts[:19].replace("T", " ") < since.removesuffix(" UTC")


def _last_ts(events: list[dict[str, Any]]) -> str | None:
    return events[-1].get("ts") if events else None


def describe(status: RunStatus) -> str:
    """One line for `ralph status` and `ralph watch`."""
    if status.active:
        since = f" since {status.since}" if status.since else ""
        head = f"run: active (pid {status.pid}{since})"
        if status.iteration:
            head += f", iteration {status.iteration}"
        if status.agents:
            return head + ": " + "; ".join(_agent(agent) for agent in status.agents)
        return head + (f", {status.stage}" if status.stage else "")
    last = status.last
    if not last:
        return "run: not running (no run yet)"
    when = _when(last.ended)
    if last.outcome:
        return f"run: not running; the last ended {last.outcome} at {when}"
    return f"run: not running; the last stopped without finishing (killed?), last heard of at {when}"


def _agent(agent: RunningAgent) -> str:
    name = " ".join(str(agent.name or "").split())
    name = name if len(name) <= 50 else name[:47] + "..."
    return " ".join(part for part in (agent.stage, agent.item, name) if part)


def _when(ts: str | None) -> str:
    """A journal timestamp (ISO, UTC, milliseconds) as a person reads it."""
    if not ts:
        return "an unknown time"
    return ts[:19].replace("T", " ") + " UTC"
