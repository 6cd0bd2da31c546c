"""The scripted agents' `ralph(...)` (tests/support/scripts/agent_kit.py): through the server of the
test process (ralph_server.py) where the agent shares its user and mount namespace, in the agent's
own process elsewhere, with the same outcome either way: the agent's folder, environment and
stdin, its output, and a failing command's exit code and message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.construct import FAKE_AGENT, ralph_server

AGENT = """import json, os, subprocess, sys
sys.path.insert(0, os.environ["AGENT_KIT_DIR"])
from agent_kit import ralph
added = json.loads(ralph("task", "add", "--json", sys.stdin.read()))
try:
    ralph("task", "show", "t-nosuch")
    failed = None
except subprocess.CalledProcessError as error:
    failed = [error.returncode, error.stderr]
print(json.dumps({"added": added, "listed": ralph("query", "tasks"), "failed": failed,
                  "here": "ralph.cli.main" in sys.modules}))
"""


def run_agent(repo: Path, tmp_path: Path, server: str, **env: str) -> dict:
    """AGENT run in the repository with `server` as its $AGENT_RALPH_SERVER: what it said."""
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    done = subprocess.run(
        [sys.executable, str(agent)],
        cwd=repo,
        env={**os.environ, "AGENT_KIT_DIR": str(FAKE_AGENT.parent), "AGENT_RALPH_SERVER": server, **env},
        input='{"name": "Parse input"}',
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("served", [True, False], ids=["served", "elsewhere"])
def test_an_agents_ralph_commands_act_where_the_agent_is_whether_served_or_not(repo: Path, tmp_path, served):
    socket = ralph_server()
    if not served:  # as a fenced agent sees it: another mount namespace
        socket = socket.rpartition("/")[0] + "/1"
    # GIT_AUTHOR_NAME: the agent's environment, not the server's
    said = run_agent(repo, tmp_path, socket, GIT_AUTHOR_NAME="The Agent")
    assert said["here"] is not served  # served: the agent never loaded ralph's CLI
    assert said["added"]["name"] == "Parse input"  # the agent's stdin
    assert [json.loads(line)["id"] for line in said["listed"].splitlines()] == [said["added"]["id"]]
    code, message = said["failed"]
    assert code != 0 and "t-nosuch" in message
    log = subprocess.run(["git", "log", "-1", "--format=%an"], cwd=repo, capture_output=True, text=True)
    assert log.stdout.strip() == "The Agent"  # committed in the agent's folder, with its environment


def test_a_request_answered_before_the_agent_looks_again_is_read_not_refused(tmp_path, monkeypatch):
    """On a loaded machine the server's fork read the whole request, ran it, answered and was gone
    before the agent was scheduled again: the agent's send of nothing left then failed (EPIPE),
    the agent's command looked failed, and a run counted one agent run more."""
    import socket
    import threading

    monkeypatch.syspath_prepend(str(FAKE_AGENT.parent))
    import agent_kit
    import ralph_server

    path = str(tmp_path / "quick.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    gone = threading.Event()

    def quick_server() -> None:  # reads the request whole, answers at once, and goes
        conn, _ = listener.accept()
        _, fds = ralph_server.receive(conn)
        for fd in fds:
            os.close(fd)
        ralph_server.send(conn, {"code": 0, "out": "answered\n", "err": ""})
        conn.close()
        gone.set()

    real_send_fds = socket.send_fds

    def send_then_wait(conn, buffers, fds):  # the agent descheduled until the server has gone
        sent = real_send_fds(conn, buffers, fds)
        gone.wait(10)
        return sent

    monkeypatch.setattr(socket, "send_fds", send_then_wait)
    server = threading.Thread(target=quick_server)
    server.start()
    try:
        assert agent_kit._served(path, ("query", "tasks")) == (0, "answered\n", "")
    finally:
        server.join()
        listener.close()
