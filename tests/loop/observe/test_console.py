"""What the loop shows a person: a live region on a terminal, plain lines elsewhere, coloured unless
NO_COLOR (ralph/loop/observe/live.py's fitting and modes: tests/loop/observe/test_live.py)."""

from __future__ import annotations

import io

from ralph.loop.observe.console import Console
from ralph.loop.observe.view import GateView


def test_console_draws_a_live_region_on_a_terminal_and_plain_lines_elsewhere():
    live = io.StringIO()
    console = Console(live, live=True)
    console.status(2, "BUILD", "t-abc123", tokens=1234)
    console.start_run("r1", "BUILD", "t-abc123", "Parse input", "build/ralph-logs/b.log")
    console.start_run("r2", "VERIFY", "t-def456", "Print report", "build/ralph-logs/v.log")
    console.gate("t-abc123", False, "FAILED: a.txt\nsecond line\n", "build/ralph-logs/g.log")
    console.limit_wait("BUILD t-abc123: waiting for the rate limit until 17:00 (60s)")
    assert console.view.waiting.endswith("until 17:00 (60s)")
    console.start_run("r3", "BUILD", "t-abc123", "Parse input", "build/ralph-logs/b2.log")
    assert console.view.waiting == ""  # the wait is over
    console.close()
    shown = live.getvalue()
    assert "\033[2K" in shown and "iteration 2" in shown and "1,234 tokens" in shown
    assert "BUILD       t-abc123 Parse input" in shown and "VERIFY      t-def456 Print report" in shown
    assert "last gate t-abc123: FAILED build/ralph-logs/g.log" in shown and "    FAILED: a.txt" in shown
    plain = io.StringIO()
    console = Console(plain, live=False)
    console.start_run("r1", "BUILD", "t-abc123", "Parse input", "build/ralph-logs/b.log")
    console.gate("t-abc123", False, "FAILED: a.txt\n", "build/ralph-logs/g.log")
    console.end_run("r1", "exit 0")
    lines = plain.getvalue().splitlines()
    assert "\033" not in plain.getvalue() and "\r" not in plain.getvalue()
    assert lines[0].endswith("BUILD t-abc123 (Parse input): agent started, log build/ralph-logs/b.log")
    assert lines[1].endswith("gate for t-abc123: FAILED, log build/ralph-logs/g.log")
    assert lines[2].endswith("  | FAILED: a.txt") and "BUILD t-abc123: agent exit 0 (0:0" in lines[3]


def test_the_live_region_is_coloured_unless_no_color_and_plain_lines_never_are(monkeypatch):
    from ralph.loop.observe.console import render
    from ralph.loop.observe.view import View

    view = View(started=100.0, iteration=1, tokens=5, cost_usd=0.5)
    view.progress.known_runs = 1
    view.gate = GateView("t-a", False, ["boom"], "g.log")
    coloured = render(view, 161.0, color=True)
    assert coloured[0].startswith("\033[1mralph 1:01") and "\033[31mFAILED" in coloured[2]
    assert render(view, 161.0)[:2] == ["ralph 1:01 · iteration 1", "  5 tokens · $0.50"]

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    assert not Console(Tty(), live=False).color
    monkeypatch.delenv("NO_COLOR")
    assert Console(Tty(), live=False).color is False  # plain lines are never coloured
    console = Console(Tty())
    assert console.live and console.color
    console.close()


def test_the_console_says_every_line_the_gate_picked_and_each_verdict_with_its_reason():
    plain = io.StringIO()
    console = Console(plain, live=False)
    picked = [f"E   line {n}" for n in range(20)]
    console.gate("t-abc123", False, "`make verify` exited 2:\n" + "\n".join(picked), "g.log")
    console.verdict("VERIFY", "t-abc123", "rejected", "the total is missing\nsee report.txt")
    console.verdict("VERIFY", "t-def456", "accepted")
    lines = [line.split("] ", 1)[1] for line in plain.getvalue().splitlines()]
    assert lines[0] == "gate for t-abc123: FAILED, log g.log"
    assert lines[1:22] == ["  | `make verify` exited 2:", *(f"  | {line}" for line in picked)]
    assert lines[22:] == [
        "VERIFY t-abc123: rejected: the total is missing",
        "  | see report.txt",
        "VERIFY t-def456: accepted",
    ]


def test_lines_of_builds_side_by_side_name_their_task():
    """Two parallel builds' gate lines (and a failed attempt's reason lines) interleave on the
    console: tagged, each names its task; untagged (one build at a time) they do not."""
    plain = io.StringIO()
    console = Console(plain, live=False)
    console.gate("t-aaaaaa", False, "FAILED: a.txt\nE  one", "a.log", tagged=True)
    console.gate("t-bbbbbb", False, "FAILED: b.txt", "b.log", what="pre-commit hook", tagged=True)
    console.verdict("BUILD", "t-aaaaaa", "attempt 1 failed (no changes)", "first\nsecond", tagged=True)
    console.gate("t-cccccc", False, "FAILED: c.txt", "c.log")
    lines = [line.split("] ", 1)[1] for line in plain.getvalue().splitlines()]
    assert lines == [
        "gate for t-aaaaaa: FAILED, log a.log",
        "  t-aaaaaa | FAILED: a.txt",
        "  t-aaaaaa | E  one",
        "pre-commit hook for t-bbbbbb: REFUSED, log b.log",
        "  t-bbbbbb | FAILED: b.txt",
        "BUILD t-aaaaaa: attempt 1 failed (no changes): first",
        "  t-aaaaaa | second",
        "gate for t-cccccc: FAILED, log c.log",
        "  | FAILED: c.txt",
    ]
