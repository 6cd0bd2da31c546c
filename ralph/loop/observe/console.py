"""What the loop shows a person. On a terminal: a live region of a few lines, redrawn from a small
thread a few times a second (progress and budgets, each running agent with its stage, task, time
and usage, the last gate result, tokens and cost), with one line per event scrolling above it.
Anywhere else (a pipe, CI, tests, TERM=dumb): one plain line per event.

Concurrent stages report through runs keyed by an id (`start_run` / `end_run`): VERIFY runs
several verifiers at once, and so may BUILD. `ralph watch` draws the same `View` from the journal.

How it is drawn (rich on a terminal, plain lines elsewhere, TERM=dumb, NO_COLOR, FORCE_COLOR, the
progress header, fitting any terminal size) is ralph/loop/observe/live.py's.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from ralph.loop.observe import live as drawing
from ralph.loop.observe.live import clock
from ralph.loop.observe.view import GateView, RunUsage, RunView, View
from ralph.secrets import redact

GATE_LINES = 6  # lines of a failed gate's explanation kept in the live region
EVENT_LINES = 30  # lines of it printed as events (the gate picks at most about 24)


def render(view: View, now: float, color: bool = False) -> list[str]:
    """The region's lines (unclipped), as plain text (with `color`, SGR colours). Every text in
    the view is escaped (task names, output lines: words of agents and people)."""
    return [drawing.plain(row, color) for row in drawing.view_rows(view, now)]


class Console:
    def __init__(self, stream: TextIO | None = None, live: bool | None = None):
        self.stream = stream or sys.stderr
        mode = drawing.mode_of(self.stream)
        self.live = mode.live if live is None else live
        self.color = mode.color and (self.live or live is None)
        self.started = time.monotonic()
        self.view = View()
        self._lock = threading.Lock()
        self._screen: drawing.Screen | None = None
        if self.live:
            self._screen = drawing.Screen(self.stream, self.color, self._rows)

    def elapsed(self) -> str:
        return clock(time.monotonic() - self.started)

    # --- what the loop reports ----------------------------------------------------------------
    def event(self, text: str) -> None:
        """One line: above the region on a terminal, else a plain line. Redacted and escaped: it
        carries task names, reasons and output lines."""
        row = drawing.event_row(f"[ralph {self.elapsed()}]", redact(text))
        screen = self._screen
        if screen is not None:  # not under the view's lock: rich's redraw takes it to read the view
            screen.line(row)
            return
        with self._lock:
            self.stream.write(drawing.plain(row, self.color) + "\n")
            self.stream.flush()

    def status(self, iteration: int, stage: str, item: str = "", tokens: int | None = None) -> None:
        with self._lock:
            self.view.iteration, self.view.stage = iteration, str(stage)
            if tokens is not None:
                self.view.tokens = tokens

    def spent(self, tokens: int, cost_usd: float, known_runs: int = 0, unknown_runs: int = 0) -> None:
        with self._lock:
            self.view.tokens, self.view.cost_usd = tokens, cost_usd
            self.view.progress.known_runs, self.view.progress.unknown_runs = known_runs, unknown_runs

    def progress(self, **fields: object) -> None:
        """How far the run is (accepted, total) and its budgets: see view.Progress."""
        with self._lock:
            before = self.view.progress.accepted
            self.view.progress.update(time.time(), **fields)
            first = before is None or before != self.view.progress.accepted
            text = drawing.progress_text(self.view, time.time())
        if self._screen is None and first:  # plain lines: progress when it changes (the header shows it live)
            self.event(text)

    def usage(self, run_id: str, tokens: int, cost_usd: float | None) -> None:
        """A running agent's usage so far (cost None: unknown)."""
        with self._lock:
            if run_id in self.view.runs:
                self.view.progress.running[run_id] = RunUsage(tokens, cost_usd)

    def start_run(
        self, run_id: str, stage: str, item: str | None, name: str | None, log: str, model: str | None = None
    ) -> None:
        run = RunView(str(stage), item or "", one_line(redact(name or ""), 60), str(log), time.time())
        with self._lock:
            self.view.runs[run_id] = run
            self.view.waiting = ""
        named = f" ({run.name})" if run.name else ""
        self.event(f"{_what(stage, item)}{named}: agent started{_with(model)}, log {log}")

    def end_run(self, run_id: str, outcome: str) -> None:
        with self._lock:
            run = self.view.runs.pop(run_id, None)
            self.view.progress.running.pop(run_id, None)
        if run is not None:
            took = clock(time.time() - run.started)
            self.event(f"{_what(run.stage, run.item)}: agent {outcome} ({took})")

    def gate(
        self, item: str, ok: bool, summary: str, log: str, what: str = "gate", tagged: bool = False
    ) -> None:
        """A gate's (or hook's) result; a failed one's picked lines below it. `tagged`: each line
        names the item too, for builds running side by side, whose lines interleave."""
        summary = redact(summary)  # before its lines are cut
        lines = [line.rstrip() for line in summary.strip().splitlines() if line.strip()]
        with self._lock:
            self.view.gate = GateView(item, ok, lines[:GATE_LINES], str(log), what)
        verdict = "passed" if ok else ("REFUSED" if what != "gate" else "FAILED")
        self.event(f"{what} for {item}: {verdict}" + ("" if ok else f", log {log}"))
        if not ok:  # why: the lines the gate picked (its errors and the end of its output)
            mark = _continued(item if tagged else None)
            for line in lines[:EVENT_LINES]:
                self.event(f"{mark}{line[:200]}")

    def verdict(self, stage: str, item: str, verdict: str, reason: str = "", tagged: bool = False) -> None:
        """What a stage concluded about an item (VERIFY: accepted, rejected; BUILD: why an
        attempt failed), with the reason's first lines (`tagged`: each naming the item)."""
        lines = [line.rstrip() for line in reason.strip().splitlines() if line.strip()]
        self.event(f"{stage} {item}: {verdict}" + (f": {lines[0][:200]}" if lines else ""))
        mark = _continued(item if tagged else None)
        for line in lines[1:EVENT_LINES]:
            self.event(f"{mark}{line[:200]}")

    def limit_wait(self, text: str) -> None:
        """A rate or usage limit being waited out: shown until the next agent run starts."""
        with self._lock:
            self.view.waiting = redact(text)
        self.event(text)

    def close(self) -> None:
        screen, self._screen = self._screen, None
        if screen is not None:
            screen.close()  # its last redraw reads the view: not under the lock
        self.stream.flush()

    def _rows(self, width: int, height: int) -> list[drawing.Row]:
        with self._lock:
            return drawing.view_rows(self.view, time.time(), width)


def _continued(item: str | None) -> str:
    """How a line that continues an item's event starts: "  | ", or "  <item> | " where the lines
    of several items' events come in between each other."""
    return f"  {item} | " if item else "  | "


def _what(stage: str, item: str | None) -> str:
    return f"{stage} {item}" if item else str(stage)


def _with(model: str | None) -> str:
    """ " with MODEL" for a run given a model (an escalation shows each step), else nothing."""
    return f" with {model}" if model else ""


def one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
