"""Drawing the construct's `View` for a person: the progress header (accepted of total, iteration
of max, elapsed, budget left, ETA, tokens and cost as they stream), the running agents, the last
gate, and on `ralph watch` the events and a picked agent's transcript.

What the output can take decides how it is drawn (`mode_of`): a terminal gets a live region
redrawn in place by rich (which knows cursor moves, wide characters and terminal sizes better
than hand-written escapes did); a pipe, CI, or `TERM=dumb` get plain lines without one escape
sequence; `NO_COLOR` turns colour off and `FORCE_COLOR` on (also in a pipe). rich is imported only
here, and only when something is drawn, so the state commands never load it.

Every row is fitted to the screen: the header and the running agents first, then the rest as
room allows; a row too wide shortens its path in the middle (the end names the run) before it is
cut. Text from agents, tasks and files goes through `safe` (one line, no control characters).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ralph.loop.observe.view import View
from ralph.text import printable

if TYPE_CHECKING:  # rich loads only when a live region is drawn
    from rich.console import Console as RichConsole
    from rich.console import Group
    from rich.text import Text

USAGE_EVERY_S = 2.0  # a running agent's usage is journalled at most this often
ELLIPSIS = "…"
MIN_PATH = 24  # a path is not shortened below this many characters
_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "reverse": "7"}


def safe(text: object) -> str:
    """Text from an agent, a task or a file as one line that cannot drive the terminal."""
    return printable(str(text))


def clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def cost_text(view: View) -> str:
    """The run's cost so far, ended and running runs together; unknown parts said as unknown."""
    progress = view.progress
    running = list(progress.running.values())
    known = progress.known_runs + sum(1 for run in running if run.cost_usd is not None)
    unknown = progress.unknown_runs + sum(1 for run in running if run.cost_usd is None)
    if not known:
        return "cost unknown" if unknown else "no cost yet"
    total = view.cost_usd + sum(run.cost_usd or 0.0 for run in running)
    return f"${total:.2f}" + (" + unknown" if unknown else "")


def tokens_now(view: View) -> int:
    return view.tokens + sum(run.tokens for run in view.progress.running.values())


def eta_text(view: View, now: float) -> str:
    """Mean time per accepted task times the tasks left; unknown before the first acceptance."""
    progress = view.progress
    if progress.total is None or (progress.accepted is not None and progress.accepted >= progress.total):
        return ""
    done = (progress.accepted or 0) - (progress.accepted_before or 0)
    if done <= 0 or progress.total is None or progress.accepted is None:
        return "ETA unknown"
    per_task = ((progress.accepted_at or now) - view.started) / done
    return f"ETA {clock(per_task * (progress.total - progress.accepted))}"


def budget_text(view: View, now: float) -> str:
    progress, parts = view.progress, []
    if progress.max_minutes is not None:
        left = progress.max_minutes * 60 - (now - view.started)
        parts.append(f"{clock(left)} of {progress.max_minutes:g}m")
    if progress.max_cost_usd is not None:
        known = progress.known_runs + sum(1 for run in progress.running.values() if run.cost_usd is not None)
        unknown = progress.unknown_runs + sum(1 for run in progress.running.values() if run.cost_usd is None)
        if known or not unknown:  # nothing run yet: all of it is left
            spent = view.cost_usd + sum(run.cost_usd or 0.0 for run in progress.running.values())
            parts.append(f"${max(progress.max_cost_usd - spent, 0):.2f} of ${progress.max_cost_usd:g}")
        else:
            parts.append(f"${progress.max_cost_usd:g} (spent unknown)")
    return "left " + ", ".join(parts) if parts else ""


PATH, NAME = "path", "name"  # how a segment gives way when its row is too wide
Seg = tuple[str, str, str]  # text, rich style ("" for none), PATH, NAME or "" (cut last)


def _seg(text: str, style: str = "", kind: str = "") -> Seg:
    return (text, style, kind)


@dataclass
class Row:
    segs: list[Seg]
    first: bool = False  # the header and the running agents: drawn before anything else

    @property
    def text(self) -> str:
        return "".join(text for text, _, _ in self.segs)


def header(view: View, now: float, width: int | None = None) -> list[Row]:
    progress = view.progress
    first = [_seg(f"ralph {clock(now - view.started)}", "bold")]
    if view.iteration:
        most = f" of {progress.max_iterations}" if progress.max_iterations else ""
        first.append(_seg(f" · iteration {view.iteration}{most}"))
    if progress.total is not None:
        first.append(_seg(f" · {progress.accepted or 0} of {progress.total} accepted", "bold"))
    eta = eta_text(view, now)
    if eta:
        first.append(_seg(f" · {eta}"))
    if view.stage and not view.runs:
        first.append(_seg(f" · {safe(view.stage)}"))
    second = [_seg(f"  {tokens_now(view):,} tokens"), _seg(f" · {cost_text(view)}")]
    budget = budget_text(view, now)
    if budget:
        second.append(_seg(f" · {budget}"))
    return _packed(first, width) + _packed(second, width)


def progress_text(view: View, now: float) -> str:
    """The header as one line without its clock, for a plain event line (a pipe, CI)."""
    first, second = (row.text for row in header(view, now))
    return first.split(" · ", 1)[-1] + " · " + second.strip()


def _packed(segs: list[Seg], width: int | None) -> list[Row]:
    """Header segments on as few rows as `width` allows, each row going on at a " · "."""
    rows: list[list[Seg]] = [[]]
    for text, style, kind in segs:
        used = sum(len(part) for part, _, _ in rows[-1])
        if rows[-1] and width is not None and used + len(text) > width and text.startswith(" · "):
            rows.append([])
            text = "  " + text.removeprefix(" · ")
        rows[-1].append((text, style, kind))
    return [Row(row, True) for row in rows]


def run_rows(
    view: View, now: float, width: int | None = None, numbered: bool = False, picked: str | None = None
) -> list[Row]:
    rows = []
    ordered = sorted(view.runs.items(), key=lambda pair: pair[1].started)
    for number, (run_id, run) in enumerate(ordered, 1):
        mark = ""
        if numbered:
            mark = (">" if run_id == picked else " ") + f"{number}"
        usage = view.progress.running.get(run_id)
        spent = ""
        if usage is not None:
            cost = "cost unknown" if usage.cost_usd is None else f"${usage.cost_usd:.2f}"
            spent = f" · {usage.tokens:,} tokens {cost}"
        segs = [_seg(f"{mark}  {safe(run.stage):<11} {safe(run.item)}")]
        if run.name:
            segs.append(_seg(f" {safe(run.name)}", "", NAME))
        segs.append(_seg(f" · {clock(now - run.started)}{spent}"))
        path = _seg(safe(run.log), "dim", PATH)
        room = (width or 10**6) - len(Row(segs).text) - 1
        if room >= len(path[0]) or room >= len(os.path.basename(path[0])) + 8:
            rows.append(Row([*segs, _seg(" "), path], True))
        else:  # the log's name would not show: it gets a line of its own
            rows += [Row(segs, True), Row([_seg("      "), path], True)]
    return rows


def rest_rows(view: View, gate_lines: int = 6) -> list[Row]:  # console.GATE_LINES
    rows = []
    if view.waiting:
        rows.append(Row([_seg(f"  {safe(view.waiting)}", "yellow")], True))
    gate = view.gate
    if gate:
        verdict = _seg("passed", "green") if gate.ok else _seg("FAILED", "red")
        rows.append(
            Row(
                [
                    _seg(f"  last {safe(gate.what)} {safe(gate.item)}: "),
                    verdict,
                    _seg(" "),
                    _seg(safe(gate.log), "dim", PATH),
                ]
            )
        )
        if not gate.ok:
            rows += [Row([_seg(f"    {safe(line)}", "dim")]) for line in gate.lines[:gate_lines]]
    rows += [Row([_seg(f"  {safe(action)}", "dim")]) for action in view.actions]
    return rows


def view_rows(view: View, now: float, width: int | None = None) -> list[Row]:
    """The console's region (and `ralph watch --once`): header, agents, waiting, gate, actions.
    `width`: the screen's, when known (a run's log path may then take a line of its own)."""
    return header(view, now, width) + run_rows(view, now, width) + rest_rows(view)


# --- fitting --------------------------------------------------------------------------------------
def shorten_middle(text: str, width: int) -> str:
    """`text` in at most `width` characters, its middle replaced by an ellipsis: the start says
    where, the end (kept longer) says which."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    keep = width - 1
    head = min(keep // 3, 17)  # "build/ralph-logs/" at most: the end tells runs apart
    return text[:head] + ELLIPSIS + text[len(text) - (keep - head) :]


def fit_row(row: Row, width: int) -> Row:
    """The row in `width` characters: its path shortened in the middle (down to MIN_PATH), then
    its name cut, then, if it must, the row cut at the end."""
    over = len(row.text) - width
    if over <= 0:
        return row
    segs = list(row.segs)
    for kind, least in ((PATH, MIN_PATH), (NAME, 0)):
        for index, (text, style, its_kind) in enumerate(segs):
            if its_kind != kind or over <= 0:
                continue
            room = max(least, len(text) - over)
            shorter = shorten_middle(text, room) if kind == PATH else _cut(text, room)
            over -= len(text) - len(shorter)
            segs[index] = (shorter, style, kind)
    if over > 0:
        out, room = [], width
        for text, style, kind in segs:
            if room <= 0:
                break
            out.append((_cut(text, room), style, kind))
            room -= len(out[-1][0])
        segs = out
    return Row(segs, row.first)


def _cut(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return text[: width - 1] + ELLIPSIS if width > 1 else ""


def fit(rows: list[Row], width: int, height: int) -> list[Row]:
    """At most `height` rows of at most `width` characters: the header and the running agents
    (`first`) before anything else, then the others in order as room allows; the order is kept."""
    height = max(height, 1)
    firsts = [n for n, row in enumerate(rows) if row.first]
    if len(firsts) > height:  # more agents than lines: as many as fit, and how many are hidden
        shown = firsts[: height - 1]
        more = Row([_seg(f"  (+{len(firsts) - len(shown)} more)", "dim")], True)
        return [fit_row(rows[n], width) for n in shown] + [fit_row(more, width)]
    keep, room = set(firsts), height - len(firsts)
    for n, row in enumerate(rows):
        if room <= 0:
            break
        if not row.first:
            keep.add(n)
            room -= 1
    return [fit_row(rows[n], width) for n in sorted(keep)]


# --- how the output is drawn ----------------------------------------------------------------------
@dataclass(frozen=True)
class Mode:
    live: bool  # a region redrawn in place (a terminal that is not dumb)
    color: bool


def mode_of(stream: Any, env: dict[str, str] | None = None) -> Mode:
    """TERM=dumb: plain lines, no escape sequence at all (it wins over FORCE_COLOR). NO_COLOR: no
    colour. FORCE_COLOR: colour even in a pipe. A pipe: plain lines."""
    env = dict(os.environ) if env is None else env
    try:
        tty = bool(stream.isatty())
    except (AttributeError, ValueError):
        tty = False
    if env.get("TERM", "").lower() == "dumb":
        return Mode(False, False)
    if env.get("NO_COLOR"):
        return Mode(tty, False)
    return Mode(tty, tty or bool(env.get("FORCE_COLOR")))


def plain(row: Row, color: bool = False) -> str:
    """A row as one line; with `color`, SGR colours only (for FORCE_COLOR in a pipe)."""
    if not color:
        return row.text
    out = []
    for text, style, _ in row.segs:
        codes = ";".join(_SGR[word] for word in style.split() if word in _SGR)
        out.append(f"\033[{codes}m{text}\033[0m" if codes else text)
    return "".join(out)


def terminal_size(stream: Any) -> tuple[int, int]:
    try:
        size = os.get_terminal_size(stream.fileno())
        return max(size.columns, 20), max(size.lines, 3)
    except (OSError, ValueError, AttributeError):
        return 80, 24


def rich_text(row: Row) -> Text:
    from rich.text import Text

    text = Text(no_wrap=True, overflow="crop")
    for part, style, _ in row.segs:
        text.append(part, style=style or None)
    return text


def rich_console(stream: Any, color: bool) -> RichConsole:
    from rich.console import Console as RichConsole

    return RichConsole(
        file=stream,
        force_terminal=True,
        color_system="standard" if color else None,
        no_color=not color,
        highlight=False,
        markup=False,
        emoji=False,
    )


Rows = Callable[[int, int], list[Row]]  # the rows to draw on a screen of (width, height)


class Screen:
    """A live region at the bottom of a terminal, redrawn by rich's thread from `rows(width,
    height)`, with event lines printed above it. `room`: lines of the terminal the region leaves
    to the events scrolling above it."""

    def __init__(self, stream: Any, color: bool, rows: Rows, room: int = 2, full: bool = False):
        from rich.console import Group
        from rich.live import Live

        self.stream, self.rows, self.room = stream, rows, room
        self.console = rich_console(stream, color)

        def renderable() -> Group:
            width, height = terminal_size(stream)
            self.console.size = (width, height)
            fitted = fit(self.rows(width, height), width - 1, height - self.room)
            return Group(*(rich_text(row) for row in fitted))

        self.live = Live(
            console=self.console,
            get_renderable=renderable,
            refresh_per_second=4,
            transient=True,
            screen=full,
            redirect_stdout=False,
            redirect_stderr=False,
            vertical_overflow="crop",
        )
        self.live.start()

    def line(self, row: Row) -> None:
        """An event line above the region (wrapped when too long: it stays in the scrollback)."""
        from rich.text import Text

        text = Text(end="\n")
        for part, style, _ in row.segs:
            text.append(part, style=style or None)
        self.live.console.print(text, soft_wrap=True)
        self.live.refresh()  # the region as of this event, not as of the last tick

    def refresh(self) -> None:
        self.live.refresh()

    def close(self) -> None:
        self.live.stop()


def event_row(prefix: str, text: str) -> Row:
    """A console event line: `[ralph 1:02] text`, the verdicts coloured."""
    segs, text = [_seg(prefix, "dim"), _seg(" ")], safe(text)
    verdicts = ((": FAILED", "red"), (": REFUSED", "red"), (": rejected", "red"), (": passed", "green"))
    for word, style in (*verdicts, (": accepted", "green")):
        if word in text:
            before, after = text.split(word, 1)
            return Row([*segs, _seg(before + ": "), _seg(word.removeprefix(": "), style), _seg(after)])
    return Row([*segs, _seg(text)])
