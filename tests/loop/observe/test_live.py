"""The live view as a person sees it: the progress header, costs said as unknown when they are,
rows fitted to any terminal (header and agents first, paths shortened in the middle), TERM=dumb,
NO_COLOR and FORCE_COLOR; and in tmux panes of 80x14 and 200x50, what `ralph construct` and
`ralph watch` put on the screen while a scripted agent is held in BUILD."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from ralph.loop.observe import live
from ralph.loop.observe.console import Console
from ralph.loop.observe.view import GateView, RunUsage, RunView, View
from tests.support.construct import FAKE_AGENT, construct, events, wait_for, with_app_spec
from tests.support.terminal import Terminal, let_go
from tests.support.watching import HeldRun, Tty, watched

LOG = "build/ralph-logs/ralph-20261125-185012-build-t-abc123.log"
SGR = re.compile(r"\x1b\[[0-9;]*m")


def a_view(agents: int = 1) -> View:
    view = View(started=1000.0, iteration=2, stage="BUILD", tokens=5000, cost_usd=0.25)
    view.progress.update(1000.0, accepted=0, total=12, max_iterations=10, max_minutes=30, max_cost_usd=1)
    for n in range(agents):
        log = LOG.replace("abc123", f"abc{n:03d}")
        view.runs[log] = RunView("BUILD", f"t-abc{n:03d}", "Parse the input files", log, 1000.0 + n)
    view.gate = GateView("t-abc000", False, ["E   assert 1 == 2"] * 3, LOG.replace("build-", "gate-"))
    return view


def test_the_header_says_how_far_the_run_is_and_what_it_may_still_spend():
    view = a_view()
    view.progress.known_runs = 2
    view.progress.update(1600.0, accepted=5)  # 5 accepted in 10 minutes: 2 minutes each
    view.progress.accepted_before = 0
    view.progress.running[LOG.replace("abc123", "abc000")] = RunUsage(1000, 0.05)
    lines = [live.plain(row) for row in live.view_rows(view, 1630.0, 200)]
    assert lines[0] == "ralph 10:30 · iteration 2 of 10 · 5 of 12 accepted · ETA 14:00"
    assert lines[1] == "  6,000 tokens · $0.30 · left 19:30 of 30m, $0.70 of $1"
    assert lines[2].startswith("  BUILD       t-abc000 Parse the input files · 10:30 · 1,000 tokens $0.05 ")


def test_an_unknown_cost_is_said_to_be_unknown_never_zero():
    view = a_view()
    view.cost_usd = 0.0
    assert live.cost_text(view) == "no cost yet"
    view.progress.running["r"] = RunUsage(10, None)
    assert live.cost_text(view) == "cost unknown"
    view.progress.unknown_runs, view.progress.running = 1, {}
    assert live.cost_text(view) == "cost unknown" and "(spent unknown)" in live.budget_text(view, 1000.0)
    view.progress.known_runs, view.cost_usd = 1, 0.42
    assert live.cost_text(view) == "$0.42 + unknown"
    assert live.eta_text(a_view(), 1000.0) == "ETA unknown"  # nothing accepted yet: no basis


def test_an_80x14_screen_keeps_the_header_and_agents_and_the_ends_of_paths():
    view = a_view(agents=3)
    rows = live.fit(live.view_rows(view, 1062.0, 79), 79, 12)
    shown = [live.plain(row) for row in rows]
    assert len(shown) <= 12 and all(len(line) <= 79 for line in shown)
    assert shown[0].startswith("ralph 1:02 · iteration 2 of 10 · 0 of 12 accepted")
    assert sum("BUILD       t-abc" in line for line in shown) == 3
    assert all(any(line.endswith(f"-build-t-abc{n:03d}.log") for line in shown) for n in range(3))
    tiny = [live.plain(row) for row in live.fit(live.view_rows(a_view(agents=9), 1062.0, 79), 79, 8)]
    assert tiny[0].startswith("ralph ") and tiny[-1].endswith("more)") and len(tiny) == 8


def test_long_paths_lose_their_middle_not_their_end():
    assert live.shorten_middle(LOG, 40) == "build/ralph-l…-185012-build-t-abc123.log"
    assert len(live.shorten_middle(LOG, 40)) == 40 and live.shorten_middle("short", 40) == "short"
    row = live.Row([live._seg("  last gate t-abc123: FAILED "), live._seg(LOG, "dim", live.PATH)])
    assert live.plain(live.fit_row(row, 60)).endswith("-build-t-abc123.log")


def test_text_from_agents_cannot_drive_the_terminal():
    view = a_view()
    view.runs[LOG.replace("abc123", "abc000")].name = "evil\x1b]0;pwned\x07\x1b[2J"
    line = next(live.plain(row) for row in live.view_rows(view, 1000.0) if "evil" in live.plain(row))
    assert "\x1b" not in line and "evil\\x1b]0;pwned\\x07\\x1b[2J" in line


@pytest.mark.parametrize(
    ("tty", "env", "expected"),
    [
        (True, {"TERM": "xterm"}, live.Mode(True, True)),
        (True, {"TERM": "dumb", "FORCE_COLOR": "1"}, live.Mode(False, False)),
        (True, {"TERM": "xterm", "NO_COLOR": "1"}, live.Mode(True, False)),
        (False, {"TERM": "xterm"}, live.Mode(False, False)),
        (False, {"TERM": "xterm", "FORCE_COLOR": "1"}, live.Mode(False, True)),
    ],
)
def test_the_terminal_decides_how_it_is_drawn(tty: bool, env: dict, expected: live.Mode):
    class Stream(io.StringIO):
        def isatty(self):
            return tty

    assert live.mode_of(Stream(), env) == expected


def test_force_color_colours_plain_lines_in_a_pipe(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    piped = io.StringIO()
    console = Console(piped)
    console.gate("t-a", False, "boom\n", "g.log")
    console.close()
    assert "\x1b[31mFAILED" in piped.getvalue() and "\x1b[2K" not in piped.getvalue()


# --- as a person sees it ----------------------------------------------------------------------------
# BUILD reports its usage so far (no cost: the fake model has no price), says what it does, then
# waits for the file `go` beside the fake agent's state, then acts as the fake agent.
HELD_AGENT = f"""import json, os, pathlib, runpy, sys, time
sys.path.insert(0, {str(FAKE_AGENT.parent)!r})
parent = os.getppid()
if os.environ["RALPH_STAGE"] == "BUILD":
    usage = {{"input_tokens": 1234, "output_tokens": 5}}
    print(json.dumps({{"type": "assistant", "message": {{"content": [], "usage": usage}}}}), flush=True)
    print(json.dumps({{"type": "assistant", "message": {{"content": [{{"type": "tool_use", "name": "Bash",
          "input": {{"command": "make work"}}}}]}}}}), flush=True)
    go = pathlib.Path(os.environ["FAKE_AGENT_STATE"]) / "go"
    while not go.exists() and os.getppid() == parent:
        time.sleep(0.05)
sys.argv = [{str(FAKE_AGENT)!r}]
runpy.run_path({str(FAKE_AGENT)!r}, run_name="__main__")
"""


@pytest.fixture
def held(repo: Path) -> Path:
    with_app_spec(repo, "# App\n\n- Parse input\n- Compute result\n")
    (repo.parent / "held_agent.py").write_text(HELD_AGENT)
    return repo


def held_agent(root: Path) -> str:
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(root.parent / 'held_agent.py'))}"


def build_log(root: Path) -> str:
    """The running BUILD's log, once its usage is in the journal."""
    found: list[str] = []

    def usage() -> bool:
        found[:] = [e["log"] for e in events(root) if e["event"] == "usage" and e.get("stage") == "BUILD"]
        return bool(found)

    wait_for(usage, "the BUILD agent's usage is journalled", 120)
    return found[0]


class Tmux:
    """A tmux server of this test's own, its panes sized as asked."""

    def __init__(self):
        self.socket = f"ralph-test-{uuid.uuid4().hex[:8]}"

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def pane(self, name: str, size: tuple[int, int], argv: list[str], env: dict[str, str]) -> None:
        settings = [item for key, value in env.items() for item in ("-e", f"{key}={value}")]
        width, height = size
        self.tmux("new-session", "-d", "-s", name, "-x", str(width), "-y", str(height), *settings, *argv)
        self.tmux("set-option", "-t", name, "remain-on-exit", "on")

    def screen(self, name: str) -> list[str]:
        return self.tmux("capture-pane", "-p", "-t", name).splitlines()

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_construct_and_watch_in_tmux_panes_of_80x14_and_200x50(held: Path):
    ralph = [sys.executable, "-m", "ralph", "-C", str(held)]
    construct_argv = [
        *ralph, "construct", "specs/app.md", "--agent", "command", "--agent-cmd", held_agent(held),
        "--gate", f"{shlex.quote(sys.executable)} check_work.py", "--timeout", "60s", "--max-minutes", "30",
    ]  # fmt: skip
    env = {
        "TERM": "xterm-256color",
        "NO_COLOR": "",
        "FAKE_AGENT_STATE": str(held.parent / "agent-state"),
        "AGENT_KIT_DIR": str(FAKE_AGENT.parent),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    tmux = Tmux()
    try:
        tmux.pane("run", (80, 14), construct_argv, env)
        log = build_log(held)
        tmux.pane("small", (80, 14), [*ralph, "watch"], env)
        tmux.pane("large", (200, 50), [*ralph, "watch"], env)
        item = log.split("-build-")[1].removesuffix(".log")
        for name in ("run", "small", "large"):
            with contextlib.suppress(AssertionError):
                wait_for(lambda name=name: _shows_the_run(tmux.screen(name), item, log), "", 60)
            screen = tmux.screen(name)
            assert _shows_the_run(screen, item, log), "\n".join(screen)
            header = next(n for n, line in enumerate(screen) if line.startswith("ralph "))
            assert header == 0 or name == "run"  # watch is full-screen; construct's region is below
            assert "iteration 1 of 10 · 0 of 2 accepted · ETA unknown" in screen[header]
            assert re.match(r"  [\d,]+ tokens · cost unknown · left 2\d:\d\d of 30m", screen[header + 1])
        large = tmux.screen("large")
        assert any(line.endswith(log) for line in large)  # room for the whole path
        assert any("-> Bash: make work" in line for line in large)  # the picked agent's transcript
        assert any(line.startswith("── events") for line in large)
        let_go(held)
        # All three end with the run, none with an error. (tmux sometimes drops what watch prints last,
        # after leaving the alternate screen, from a pane that died at once, and sometimes has no
        # exit status for a dead pane: test_watch reads the last line on a pseudo-terminal.)
        ended = "#{pane_dead} #{pane_dead_status}"
        for name in ("run", "small", "large"):
            wait_for(
                lambda name=name: tmux.tmux("display", "-p", "-t", name, ended).split()[0] == "1", name, 120
            )
            said = tmux.tmux("display", "-p", "-t", name, ended).split()
            assert said[1:] in ([], ["0"]), f"{name}: {said}\n" + "\n".join(tmux.screen(name))
        assert [e["outcome"] for e in events(held) if e["event"] == "construct_end"] == ["COMPLETE"]
        assert any(e["event"] == "usage" and e["tokens"] == 1239 for e in events(held))
    finally:
        tmux.kill()


def _shows_the_run(screen: list[str], item: str, log: str) -> bool:
    """The header (on top, but for construct's region below its events), the running BUILD, and
    its log's end (the part that names it)."""
    header = [n for n, line in enumerate(screen) if line.startswith("ralph ") and " of 2 accepted" in line]
    return (
        bool(header)
        and any(f"BUILD       {item}" in line for line in screen[header[0] :])
        and any(line.rstrip().endswith(log[-24:]) for line in screen[header[0] :])
    )


def test_term_dumb_on_a_terminal_gets_plain_lines_from_the_console_and_watch_even_with_force_color(
    repo: Path, monkeypatch: pytest.MonkeyPatch
):
    """The console as the loop makes it, and `ralph watch` to the run's end, on a terminal under
    TERM=dumb with FORCE_COLOR: plain lines, not one escape sequence (no cursor hidden, no colour)."""
    monkeypatch.setenv("TERM", "dumb")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    screen = Tty()
    console = Console(screen)  # drawn as the stream and the environment say
    console.status(1, "BUILD")
    console.progress(accepted=0, total=1, max_iterations=10, max_minutes=None, max_cost_usd=None)
    console.start_run("r1", "BUILD", "t-abc123", "Parse input", "build/ralph-logs/b.log")
    console.gate("t-abc123", False, "FAILED: a.txt\n", "build/ralph-logs/g.log")
    console.end_run("r1", "exit 0")
    console.close()
    shown = screen.getvalue()
    assert "\x1b" not in shown and "\r" not in shown
    said = [line.split("] ", 1) for line in shown.splitlines()]
    assert all(re.fullmatch(r"\[ralph \d+:\d\d", stamp) for stamp, _ in said)  # a plain line per event
    assert [text for _, text in said][1:4] == [
        "BUILD t-abc123 (Parse input): agent started, log build/ralph-logs/b.log",
        "gate for t-abc123: FAILED, log build/ralph-logs/g.log",
        "  | FAILED: a.txt",
    ]
    with HeldRun(repo, "t-abc123", "Parse input", "FAILED: a.txt", "make work", "working") as run:
        screen = Tty()
        assert watched(run, screen, monkeypatch) == 0
    watched_text = screen.getvalue()
    assert "\x1b" not in watched_text
    assert re.match(r"ralph \d+:\d\d · iteration 1 of 10 · ", watched_text)  # a snapshot's header
    assert watched_text.splitlines()[-1].startswith("ralph watch: the run ended COMPLETE at ")


# `make test` has it in process, in
# test_term_dumb_on_a_terminal_gets_plain_lines_from_the_console_and_watch_even_with_force_color
# (NO_COLOR's Mode on a terminal, redrawn without colour: test_the_terminal_decides_how_it_is_drawn,
# and the console's colours under it: test_console.py's)
@pytest.mark.slow
@pytest.mark.parametrize(
    ("env", "dumb"),
    [
        pytest.param({"TERM": "dumb", "FORCE_COLOR": "1"}, True, id="TERM=dumb"),
        pytest.param({"TERM": "xterm", "NO_COLOR": "1"}, False, id="NO_COLOR"),
    ],
)
def test_term_dumb_gets_no_escape_sequence_and_no_color_no_colour(held: Path, env: dict, dumb: bool):
    """On a terminal, TERM=dumb: plain lines, not one escape sequence, from construct and watch
    (FORCE_COLOR does not override it); NO_COLOR: the live region redrawn, but no colour."""
    screen = Terminal()
    tty = screen.follower
    running = screen.started(
        construct(held, agent=held_agent(held), wait=False, env=env, stdin=tty, stdout=tty, stderr=tty)
    )
    build_log(held)
    watch = Terminal()
    argv = [sys.executable, "-m", "ralph", "-C", str(held), "watch"]
    tty = watch.follower
    watching = watch.started(
        subprocess.Popen(argv, env={**os.environ, **env}, stdin=tty, stdout=tty, stderr=tty)
    )
    wait_for(lambda: "BUILD" in watching.seen(), "ralph watch shows the BUILD")
    let_go(held)
    shown, watched = running.finish(), watching.finish()
    assert "ralph: COMPLETE" in shown and "ralph watch: the run ended COMPLETE" in watched
    if dumb:
        assert shown.count("\x1b") == 0 and watched.count("\x1b") == 0
        assert "[ralph 0:0" in shown and "iteration 1 of 10 · " in watched
    else:
        assert "\x1b[2K" in shown and "\x1b[H" in watched  # redrawn in place
        assert SGR.findall(shown) == [] and SGR.findall(watched) == []


def test_watch_keys_scroll_the_events_and_pick_the_agent_whose_transcript_shows():
    from ralph.loop.observe.follow import Follower

    journal = [
        {"ts": f"2026-11-25T19:00:{n:02d}+00:00", "event": "cleaned_up", "item": f"t-{n:02d}"}
        for n in range(30)
    ]
    follower = Follower(lambda events: a_view(agents=3), lambda log, count: [f"-> Bash: in {log[-10:]}"])
    follower.events = journal

    def screen() -> list[str]:
        return [live.plain(row) for row in follower.rows(80, 24)]

    small = [live.plain(row) for row in follower.rows(80, 14)]
    assert len(small) == 14 and small[0].startswith("ralph ") and small[-1].startswith("↑↓/jk")
    assert sum(" BUILD       t-abc" in line for line in small) == 3
    shown = screen()
    assert len(shown) == 24 and all(len(line) <= 80 for line in shown)
    assert shown[0].startswith("ralph ") and sum(" BUILD       t-abc" in line for line in shown) == 3
    assert shown[-1].startswith("↑↓/jk scroll events") and shown[-2].endswith("t-29")  # the newest event
    assert any("-> Bash: in abc000.log" in line for line in shown)  # the first agent's transcript
    assert follower.key("kk\x1b[A") and screen()[-2].endswith("t-26")  # three up
    assert follower.key("j") and screen()[-2].endswith("t-27")
    assert follower.key("3") and any("-> Bash: in abc002.log" in line for line in screen())
    assert any(line.startswith(">3  BUILD") for line in screen())
    assert follower.key("\t") and any("-> Bash: in abc000.log" in line for line in screen())  # wraps
    assert not follower.key("q")
    follower.events = [
        {"ts": "2026-11-25T19:00:00+00:00", "event": "agent_begin", "stage": "BUILD", "log": LOG}
    ]
    assert any(line.endswith("-build-t-abc123.log") and "…" in line for line in screen())


def test_plain_lines_say_the_progress_when_it_changes():
    piped = io.StringIO()
    console = Console(piped, live=False)
    console.status(1, "BUILD")
    for accepted in (0, 0, 1):
        console.progress(accepted=accepted, total=3, max_iterations=10, max_minutes=None, max_cost_usd=2.0)
    lines = [line.split("] ", 1)[1] for line in piped.getvalue().splitlines()]
    assert len(lines) == 2  # the second report changed nothing
    assert lines[0] == (
        "iteration 1 of 10 · 0 of 3 accepted · ETA unknown · BUILD · 0 tokens · no cost yet"
        " · left $2.00 of $2"
    )
    assert " · 1 of 3 accepted · ETA " in lines[1] and "ETA unknown" not in lines[1]
