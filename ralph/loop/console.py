"""What the loop shows a person. On a terminal: a live region of a few lines, redrawn from a small
thread a few times a second (a ticking clock, each running agent with its stage, task and time,
the last gate result, tokens and cost), with one line per event scrolling above it. Anywhere else
(a pipe, CI, tests): one plain line per event. `NO_COLOR` turns colours off.

Concurrent stages report through runs keyed by an id (`start_run` / `end_run`): VERIFY runs
several verifiers at once, and so may BUILD. `ralph watch` draws the same `View` from the journal.

Our own ANSI rather than `rich`: the region is a few clipped lines redrawn in place, which takes
cursor-up and clear-to-end only; rich would add a dependency and its import time to every run.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field

from ralph.secrets import redact
from ralph.text import printable

REDRAW_S = 0.25  # at most four redraws a second
GATE_LINES = 6  # lines of a failed gate's explanation kept in the live region
EVENT_LINES = 30  # lines of it printed as events (the gate picks at most about 24)


@dataclass
class RunView:
    """One running agent."""

    stage: str
    item: str
    name: str
    log: str
    started: float  # epoch seconds


@dataclass
class GateView:
    """The last gate (or pre-commit hook) result."""

    item: str
    ok: bool
    lines: list[str]
    log: str
    what: str = "gate"


@dataclass
class View:
    """What the live region shows; the console keeps one, `ralph watch` rebuilds it."""

    started: float = field(default_factory=time.time)
    iteration: int = 0
    stage: str = ""
    runs: dict[str, RunView] = field(default_factory=dict)
    gate: GateView | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    waiting: str = ""  # a rate or usage limit being waited out
    actions: list[str] = field(default_factory=list)  # the agent's last actions (ralph watch)


def clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    text = f"{rest // 60}:{rest % 60:02d}"
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else text


def render(view: View, now: float, color: bool = False) -> list[str]:
    """The region's lines (unclipped). Every text in the view is escaped (task names, output lines:
    words of agents and people), so only ralph's own colour codes reach the terminal."""
    bold, dim, red, green, off = (
        ("\033[1m", "\033[2m", "\033[31m", "\033[32m", "\033[0m") if color else ("",) * 5
    )
    head = f"{bold}ralph {clock(now - view.started)}{off}"
    if view.iteration:
        head += f" · iteration {view.iteration}"
    if view.stage and not view.runs:
        head += f" · {printable(view.stage)}"
    head += f" · {view.tokens:,} tokens · ${view.cost_usd:.2f}"
    lines = [head]
    if view.waiting:
        lines.append(f"  {printable(view.waiting)}")
    for run in sorted(view.runs.values(), key=lambda run: run.started):
        name = f" {printable(run.name)}" if run.name else ""
        what = f"{printable(run.stage):<11} {printable(run.item)}{name}"
        lines.append(f"  {what} · {clock(now - run.started)} {dim}{printable(run.log)}{off}")
    gate = view.gate
    if gate:
        verdict = f"{green}passed{off}" if gate.ok else f"{red}FAILED{off}"
        lines.append(f"  last {gate.what} {printable(gate.item)}: {verdict} {dim}{printable(gate.log)}{off}")
        lines += [f"    {dim}{printable(line)}{off}" for line in ([] if gate.ok else gate.lines[:GATE_LINES])]
    lines += [f"  {dim}{printable(action)}{off}" for action in view.actions]
    return lines


def clip(line: str, width: int) -> str:
    """At most `width` visible characters (escape sequences do not count), so no line wraps."""
    out, visible, index = [], 0, 0
    while index < len(line):
        if line[index] == "\033":
            end = line.find("m", index)
            end = len(line) - 1 if end < 0 else end
            out.append(line[index : end + 1])
            index = end + 1
            continue
        if visible >= width:
            break
        out.append(line[index])
        visible += 1
        index += 1
    return "".join(out) + ("\033[0m" if "\033" in line else "")


def wants_color(stream) -> bool:
    return not os.environ.get("NO_COLOR") and stream.isatty()


class Console:
    def __init__(self, stream=None, live: bool | None = None):
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.color = self.live and wants_color(self.stream)
        self.started = time.monotonic()
        self.view = View()
        self._lock = threading.Lock()
        self._drawn = 0  # lines of the region on the screen now
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if self.live:
            self._thread = threading.Thread(target=self._tick, name="ralph-console", daemon=True)
            self._thread.start()

    def elapsed(self) -> str:
        return clock(time.monotonic() - self.started)

    # --- what the loop reports ----------------------------------------------------------------
    def event(self, text: str) -> None:
        """One line: above the region on a terminal, else a plain line. Redacted and escaped: it
        carries task names, reasons and output lines."""
        text = printable(redact(text))
        with self._lock:
            self._clear()
            self.stream.write(f"[ralph {self.elapsed()}] {text}\n")
            self._draw()
            self.stream.flush()

    def status(self, iteration: int, stage: str, item: str = "", tokens: int | None = None) -> None:
        with self._lock:
            self.view.iteration, self.view.stage = iteration, str(stage)
            if tokens is not None:
                self.view.tokens = tokens

    def spent(self, tokens: int, cost_usd: float) -> None:
        with self._lock:
            self.view.tokens, self.view.cost_usd = tokens, cost_usd

    def start_run(self, run_id: str, stage: str, item: str | None, name: str | None, log: str) -> None:
        run = RunView(str(stage), item or "", one_line(redact(name or ""), 60), str(log), time.time())
        with self._lock:
            self.view.runs[run_id] = run
            self.view.waiting = ""
        named = f" ({run.name})" if run.name else ""
        self.event(f"{_what(stage, item)}{named}: agent started, log {log}")

    def end_run(self, run_id: str, outcome: str) -> None:
        with self._lock:
            run = self.view.runs.pop(run_id, None)
        if run is not None:
            took = clock(time.time() - run.started)
            self.event(f"{_what(run.stage, run.item)}: agent {outcome} ({took})")

    def gate(self, item: str, ok: bool, summary: str, log: str, what: str = "gate") -> None:
        summary = redact(summary)  # before its lines are cut
        lines = [line.rstrip() for line in summary.strip().splitlines() if line.strip()]
        with self._lock:
            self.view.gate = GateView(item, ok, lines[:GATE_LINES], str(log), what)
        verdict = "passed" if ok else ("REFUSED" if what != "gate" else "FAILED")
        self.event(f"{what} for {item}: {verdict}" + ("" if ok else f", log {log}"))
        if not ok:  # why: the lines the gate picked (its errors and the end of its output)
            for line in lines[:EVENT_LINES]:
                self.event(f"  | {line[:200]}")

    def verdict(self, stage: str, item: str, verdict: str, reason: str = "") -> None:
        """What a stage concluded about an item (VERIFY: accepted, rejected; BUILD: why an
        attempt failed), with the reason's first lines."""
        lines = [line.rstrip() for line in reason.strip().splitlines() if line.strip()]
        self.event(f"{stage} {item}: {verdict}" + (f": {lines[0][:200]}" if lines else ""))
        for line in lines[1:EVENT_LINES]:
            self.event(f"  | {line[:200]}")

    def limit_wait(self, text: str) -> None:
        """A rate or usage limit being waited out: shown until the next agent run starts."""
        with self._lock:
            self.view.waiting = redact(text)
        self.event(text)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        with self._lock:
            self._clear()
            self.stream.flush()

    # --- drawing ------------------------------------------------------------------------------
    def _tick(self) -> None:
        while not self._stop.wait(REDRAW_S):
            with self._lock:
                self._clear()
                self._draw()
                self.stream.flush()

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write(f"\033[{self._drawn}F\033[J")  # to the region's first line; clear below
            self._drawn = 0

    def _draw(self) -> None:
        if not self.live or self._stop.is_set():
            return
        width = terminal_width(self.stream)
        lines = render(self.view, time.time(), self.color)
        self.stream.write("".join(clip(line, width) + "\n" for line in lines))
        self._drawn = len(lines)


def _what(stage: str, item: str | None) -> str:
    return f"{stage} {item}" if item else str(stage)


def one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def terminal_width(stream) -> int:
    try:
        return max(20, os.get_terminal_size(stream.fileno()).columns - 1)
    except (OSError, ValueError, AttributeError):
        return 79
