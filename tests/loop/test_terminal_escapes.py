"""No escape sequence from a task name, an agent's output or a gate's output reaches the terminal:
the construct console and `ralph watch` on a real (pseudo-)terminal with colours, `ralph watch
--once` and the state commands in a pipe. ralph's own colour and redraw codes still do, and the
sequences show as readable text (`\\x1b]0;...`)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.support.construct import FAKE_AGENT, add_tasks, construct, wait_for, with_app_spec
from tests.support.terminal import Terminal, let_go, ralph_out, terminal

# A title change, a screen clear, an OSC 52 clipboard write, a C1 CSI and DEL.
EVIL = "\x1b]0;pwned\x07 \x1b[2J \x1b]52;c;cHduZWQ=\x07 \x9b31m \x7f"
SHOWN = "\\x1b]0;pwned\\x07 \\x1b[2J \\x1b]52;c;cHduZWQ=\\x07 \\x9b31m \\x7f"  # as ralph prints it
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
