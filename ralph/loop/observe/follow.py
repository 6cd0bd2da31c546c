"""`ralph watch` on a terminal: the console's view full-screen, with the run's events to scroll and
a running agent's transcript to read. Keys: up/down or k/j scroll the events (older/newer), a
number picks that agent and tab the next one, q quits. The run is only read, never touched."""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ralph.loop.observe import live
from ralph.loop.observe.journal import JournalRecord
from ralph.loop.observe.live import Row, _seg
from ralph.loop.observe.view import View

TRANSCRIPT_LINES = 8  # of the picked agent, at most
KEYS = "↑↓/jk scroll events · 1-9/tab pick agent · q quit"
# Shown in the header, not as events; or said by another event (a gate cut short: its gate_end).
_SKIPPED = {"usage", "spent", "progress", "gate_cut_short"}


def event_text(event: JournalRecord) -> str | None:
    """A journal event as one line for a person, or None for the ones the header shows."""
    kind = str(event.get("event") or "")
    if kind in _SKIPPED:
        return None
    what = " ".join(str(event[key]) for key in ("stage", "item") if event.get(key))
    if kind == "agent_begin":
        model = f" with {event['model']}" if event.get("model") else ""
        text = f"{what}: agent started{model}, log {event.get('log')}"
    elif kind == "agent_end":
        how = event.get("stop_reason") or f"exit {event.get('exit_code')}"
        how = "error" if event.get("is_error") else how
        text = f"{what}: agent ended ({how})"
    elif kind in ("gate_end", "hook_end"):
        verdict = "cut short" if event.get("cut_short") else "passed" if event.get("ok") else "FAILED"
        text = f"{'gate' if kind == 'gate_end' else 'pre-commit hook'} for {event.get('item')}: {verdict}"
    elif kind == "iteration_begin":
        text = f"iteration {event.get('iteration')}"
    elif kind == "verdict":
        text = f"VERIFY {event.get('item')}: {event.get('verdict')}"
    elif kind == "limit_wait":
        text = f"{what}: waiting for a {event.get('kind')} until {event.get('until')}"
    else:
        text = kind.replace("_", " ") + (f" {what}" if what else "")
    return f"{_hms(event.get('ts'))} {live.safe(text)}"


def _hms(ts: object) -> str:
    try:
        return datetime.fromisoformat(str(ts)).astimezone().strftime("%H:%M:%S")
    except ValueError:
        return "--:--:--"


class Follower:
    """What `ralph watch` shows and the keys that change it; `view_of(events)` builds the View,
    `actions(log, count)` reads a running agent's last actions."""

    def __init__(
        self, view_of: Callable[[list[JournalRecord]], View], actions: Callable[[str, int], list[str]]
    ):
        self.view_of, self.actions = view_of, actions
        self.events: list[JournalRecord] = []
        self.scroll = 0  # events above the newest one: 0 follows the run
        self.picked: str | None = None  # the log of the agent whose transcript is shown

    def key(self, data: str) -> bool:
        """Act on keys pressed; False to quit."""
        for key in _keys(data):
            if key == "q":
                return False
            if key in ("k", "up"):
                self.scroll += 1
            elif key in ("j", "down"):
                self.scroll = max(self.scroll - 1, 0)
            elif key.isdigit() or key == "\t":
                self._pick(key)
        return True

    def _pick(self, key: str) -> None:
        logs = [log for log, _ in sorted(self.view.runs.items(), key=lambda pair: pair[1].started)]
        if not logs:
            return
        if key == "\t":
            at = logs.index(self.picked) + 1 if self.picked in logs else 0
            self.picked = logs[at % len(logs)]
        elif 1 <= int(key) <= len(logs):
            self.picked = logs[int(key) - 1]

    @property
    def view(self) -> View:
        view = self.view_of(self.events)
        view.actions = []  # the picked agent's transcript has a section of its own
        return view

    def rows(self, width: int, height: int) -> list[Row]:
        view, now = self.view, time.time()
        logs = [log for log, _ in sorted(view.runs.items(), key=lambda pair: pair[1].started)]
        if self.picked not in logs:
            self.picked = logs[0] if logs else None
        top = live.fit(
            live.header(view, now, width)
            + live.run_rows(view, now, width, numbered=True, picked=self.picked)
            + live.rest_rows(view, gate_lines=1 if height < 30 else 6),  # room for the events
            width,
            height - 1,
        )
        room = height - len(top) - 1
        shown = self._transcript(view, min(TRANSCRIPT_LINES, room // 2)) if room > 2 else []
        lines = [text for event in self.events if (text := event_text(event))]
        window = max(room - len(shown) - 1, 0)
        self.scroll = min(self.scroll, max(len(lines) - window, 0))
        end = len(lines) - self.scroll
        events = [_event_row(line) for line in lines[max(end - window, 0) : end]]
        title = f"── events ({end} of {len(lines)})" if self.scroll else "── events"
        bottom = ([Row([_seg(title, "bold")])] + events) if window else []
        rows = [*top, *shown, *bottom, Row([_seg(KEYS, "dim")])]
        return [live.fit_row(Row(row.segs, True), width) for row in rows[:height]]

    def _transcript(self, view: View, count: int) -> list[Row]:
        if self.picked is None or count < 1:
            return []
        run = view.runs[self.picked]
        named = f"── {live.safe(run.stage)} {live.safe(run.item)}: "
        title = Row([_seg(named, "bold"), _seg(live.safe(run.log), "dim", live.PATH)])
        actions = self.actions(self.picked, count - 1) if count > 1 else []
        return [title] + [Row([_seg(f"  {live.safe(action)}", "dim")]) for action in actions]


def _event_row(line: str) -> Row:
    """An event line whose log path, when too wide, loses its middle, not its end."""
    text, said, path = line.rpartition(", log " if ", log " in line else " log ")
    if not said or " " in path:
        return Row([_seg(f"  {line}")])
    return Row([_seg(f"  {text}{said}"), _seg(path, "", live.PATH)])


def _keys(data: str) -> list[str]:
    keys, index = [], 0
    while index < len(data):
        if data.startswith("\x1b[A", index) or data.startswith("\x1bOA", index):
            keys.append("up")
            index += 3
        elif data.startswith("\x1b[B", index) or data.startswith("\x1bOB", index):
            keys.append("down")
            index += 3
        else:
            keys.append(data[index])
            index += 1
    return keys


def run(
    follower: Follower,
    stream: Any,
    keyboard: Any,
    color: bool,
    new_events: Callable[[], list[JournalRecord]],
    still_running: Callable[[], bool],
    interval: float,
) -> bool:
    """Draw `follower` full-screen until the run ends (True) or q is pressed (False)."""
    fd = _fileno(keyboard)
    saved = None
    if fd is not None:
        import termios
        import tty

        saved = termios.tcgetattr(fd)
        tty.setcbreak(fd)  # keys one at a time, unechoed; Ctrl-C still interrupts
    screen = live.Screen(stream, color, follower.rows, room=0, full=True)
    try:
        while still_running():
            follower.events += new_events()
            if fd is not None and select.select([fd], [], [], interval)[0]:
                if not follower.key(os.read(fd, 64).decode("utf-8", "replace")):
                    return False
            elif fd is None:
                time.sleep(interval)
            screen.refresh()
        return True
    finally:
        screen.close()
        if fd is not None and saved is not None:
            import termios

            termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _fileno(keyboard: Any) -> int | None:
    try:
        return keyboard.fileno() if keyboard is not None and keyboard.isatty() else None
    except (AttributeError, ValueError, OSError):
        return None
