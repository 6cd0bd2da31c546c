"""No escape sequence from a task name, an agent's output or a gate's output reaches the terminal:
the construct console and `ralph watch` on a real (pseudo-)terminal with colours, `ralph watch
--once` and the state commands in a pipe. ralph's own colour and redraw codes still do, and the
sequences show as readable text (`\\x1b]0;...`). `make test` has each in process: the console
and `ralph watch` on a stream that says it is a terminal, watch and the state commands beside a run
the test holds (tests/support/watching.py); the real run is `make e2e`'s."""

from __future__ import annotations

import io
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ralph.cli.main import cli as main
from ralph.loop.observe.console import Console
from tests.support.construct import FAKE_AGENT, add_tasks, construct, wait_for, with_app_spec
from tests.support.terminal import Terminal, let_go, ralph_out, terminal
from tests.support.watching import HeldRun, Tty, watched

# A title change, a screen clear, an OSC 52 clipboard write, a C1 CSI and DEL.
EVIL = "\x1b]0;pwned\x07 \x1b[2J \x1b]52;c;cHduZWQ=\x07 \x9b31m \x7f"
SHOWN = "\\x1b]0;pwned\\x07 \\x1b[2J \\x1b]52;c;cHduZWQ=\\x07 \\x9b31m \\x7f"  # as ralph prints it
TITLE_SHOWN = SHOWN.split(" ")[0]  # the title change: all of SHOWN a row cut to 80 columns keeps
# ralph's own codes (rich's): colours (SGR), and the live region's redraw (cursor up, erase line,
# cursor home, cursor hidden and shown, the alternate screen of `ralph watch`).
OWN = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\d*[AFHJK]|\x1b\[2K|\x1b\[\?(25|1049)[hl]")
ANY_ESCAPE = re.compile(r"\x1b|\x9b|\x07")

# BUILD's first run says it runs a command named with the sequences and prints them, then waits
# for the file `go` beside the fake agent's state; then it is the fake agent.
HELD_EVIL_AGENT = f"""import json, os, pathlib, runpy, sys, time
sys.path.insert(0, {str(FAKE_AGENT.parent)!r})
evil = {EVIL!r}
parent = os.getppid()
go = pathlib.Path(os.environ["FAKE_AGENT_STATE"]) / "go"
if os.environ["RALPH_STAGE"] == "BUILD" and not go.exists():
    call = {{"type": "tool_use", "name": "Bash", "input": {{"command": "echo " + evil}}}}
    print(json.dumps({{"type": "assistant", "message": {{"content": [call]}}}}), flush=True)
    print("plain output " + evil, flush=True)
    while not go.exists() and os.getppid() == parent:
        time.sleep(0.05)
sys.argv = [{str(FAKE_AGENT)!r}]
runpy.run_path({str(FAKE_AGENT)!r}, run_name="__main__")
"""
# Fails (printing the sequences) while a work file says FAIL.
EVIL_GATE = f"""import pathlib, sys
if any(p.read_text().startswith("FAIL") for p in pathlib.Path("work").glob("*.txt")):
    print("FAILED " + {EVIL!r})
    sys.exit(1)
"""


def foreign_escapes(text: str) -> list[str]:
    """The escape sequences and control characters in `text` that are not ralph's own codes."""
    return ANY_ESCAPE.findall(OWN.sub("", text))


# `make test` has it in process, in
# test_the_console_on_a_terminal_shows_a_task_name_and_a_gates_output_as_text and
# test_watch_and_the_state_commands_show_a_running_tasks_name_and_its_agents_output_as_text
# (each agent CLI's stream read into its transcript: agents/test_transcript.py; a real process's
# stderr escaped: cli/test_smoke.py's test_an_escape_sequence_in_a_field_name_reaches_a_real_stderr_escaped)
@pytest.mark.slow
def test_no_escape_sequence_from_a_task_name_or_agent_output_reaches_the_terminal(repo: Path, tmp_path: Path):
    with_app_spec(repo, "# App\n")
    (repo / "check_work.py").write_text(EVIL_GATE)
    subprocess.run(["git", "commit", "-qam", "a gate that prints escape sequences"], cwd=repo, check=True)
    (task_id,) = add_tasks(repo, f"Evil {EVIL} [gate-fails-once]")
    agent_script = tmp_path / "held_evil_agent.py"
    agent_script.write_text(HELD_EVIL_AGENT)
    agent = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent_script))}"

    screen = Terminal()
    tty = screen.follower
    screen.started(
        construct(
            repo,
            agent=agent,
            wait=False,
            env={"NO_COLOR": "", "TERM": "xterm"},
            stdin=tty,
            stdout=tty,
            stderr=tty,
        )
    )
    logs = repo / "build" / "ralph-logs"
    wait_for(
        lambda: any("plain output" in path.read_text() for path in logs.glob("*-build-*.transcript.md")),
        "the BUILD agent printed its output",
    )
    once = ralph_out(repo, "watch", "--once")
    status = ralph_out(repo, "status")
    listed = ralph_out(repo, "task", "list")
    watching = terminal([sys.executable, "-m", "ralph", "-C", str(repo), "watch"])
    wait_for(lambda: watching.seen().count("\x1b[H") >= 2, "ralph watch redraws on a terminal")
    let_go(repo)
    console, watched = screen.finish(), watching.finish()
    history = ralph_out(repo, "log")

    assert once.returncode == 0 and status.returncode == 0 and listed.returncode == 0, once.stderr
    shown = {
        "console": console,
        "watch": watched,
        "watch --once": once.stdout + once.stderr,
        "status": status.stdout + status.stderr,
        "task list": listed.stdout + listed.stderr,
        "log": history.stdout + history.stderr,
    }
    assert {what: len(foreign_escapes(text)) for what, text in shown.items()} == dict.fromkeys(shown, 0)
    # ralph's own colours still reach a terminal; the sequences are there, as text.
    assert len(OWN.findall(console)) > 10 and len(OWN.findall(watched)) > 10
    assert f"Evil {SHOWN}" in console and f"Evil {SHOWN}" in watched and f"Evil {SHOWN}" in once.stdout
    assert f"FAILED {SHOWN}" in console  # the gate's output
    assert f"-> Bash: echo {SHOWN}" in once.stdout  # the agent's last action, from its transcript
    assert f"Evil {SHOWN}" in listed.stdout and f"Evil {SHOWN}" in history.stdout
    assert task_id in listed.stdout


# --- in process: the console, `ralph watch` and the state commands, each given the sequences -----
def cli(root: Path, *args: str) -> str:
    """A command's output as the terminal gets it: color=True, or click would strip what looks like
    an escape sequence before this test could see it leak."""
    done = CliRunner().invoke(main, ["-C", str(root), *args], color=True, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return done.stdout + done.stderr


def colours_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal that takes colours and redraws, as the real run's: no NO_COLOR, no FORCE_COLOR."""
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)


def test_the_console_on_a_terminal_shows_a_task_name_and_a_gates_output_as_text(monkeypatch):
    colours_on(monkeypatch)
    screen = Tty()
    console = Console(screen)  # as the loop makes it: drawn as the stream and the environment say
    assert console.live and console.color
    console.status(1, "BUILD")
    console.progress(accepted=0, total=1, max_iterations=10, max_minutes=None, max_cost_usd=None)
    console.start_run("r1", "BUILD", "t-abc123", f"Evil {EVIL}", "build/ralph-logs/b.log")
    console.gate("t-abc123", False, f"FAILED {EVIL}\n", "build/ralph-logs/g.log")
    console.verdict("BUILD", "t-abc123", "attempt 1 failed (gate failed)", f"FAILED {EVIL}\nagain {EVIL}")
    console.limit_wait(f"BUILD t-abc123: waiting {EVIL}")
    console.event(f"said {EVIL}")
    console.end_run("r1", "exit 0")
    console.close()
    shown = screen.getvalue()
    assert foreign_escapes(shown) == []
    assert len(OWN.findall(shown)) > 10  # ralph's own colours and redraws still reach it
    plain = OWN.sub("", shown)
    assert f"BUILD t-abc123 (Evil {SHOWN}): agent started" in plain  # an event line
    assert f"BUILD       t-abc123 Evil {TITLE_SHOWN} " in plain  # the live region's row (cut to 80)
    assert f"  | FAILED {SHOWN}" in plain and f"again {SHOWN}" in plain and f"waiting {SHOWN}" in plain
    assert f"said {SHOWN}" in plain


def test_watch_and_the_state_commands_show_a_running_tasks_name_and_its_agents_output_as_text(
    repo: Path, monkeypatch
):
    colours_on(monkeypatch)
    task_id = json.loads(cli(repo, "task", "add", "--json", json.dumps({"name": f"Evil {EVIL}"})))["id"]
    evil = HeldRun(repo, task_id, f"Evil {EVIL}", f"FAILED {EVIL}", f"echo {EVIL}", f"plain output {EVIL}")
    with evil as run:
        status = cli(repo, "status")
        piped = io.StringIO()
        assert watched(run, piped, monkeypatch, once=True) == 0
        screen = Tty()
        assert watched(run, screen, monkeypatch) == 0  # full-screen, to the run's end
    once, watching = piped.getvalue(), screen.getvalue()
    shown = {"watch": watching, "watch --once": once, "status": status}
    shown |= {"task list": cli(repo, "task", "list"), "log": cli(repo, "log")}
    assert {what: foreign_escapes(text) for what, text in shown.items()} == dict.fromkeys(shown, [])
    assert len(OWN.findall(watching)) > 10  # ralph's own colours and redraws still reach a terminal
    assert "ralph watch: the run ended COMPLETE at " in watching
    assert ANY_ESCAPE.findall(once) == []  # a pipe: not even ralph's own
    for text in (OWN.sub("", watching), once):
        assert f"BUILD       {task_id} Evil {TITLE_SHOWN} " in text  # the running agent's row (cut to 80)
        assert f"-> Bash: echo {SHOWN}" in text and f"plain output {SHOWN}" in text  # its transcript
        assert f"FAILED {SHOWN}" in text  # the last gate's output
    assert f"BUILD {task_id} Evil {SHOWN}" in status
    assert f"{task_id}  pending  Evil {SHOWN}" in shown["task list"] and f"Evil {SHOWN}" in shown["log"]
