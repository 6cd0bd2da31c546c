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


def test_an_agents_command_the_server_never_took_runs_in_the_agents_own_process(repo: Path, tmp_path):
    """A request the server never had whole (here: nothing listens on its socket; on a loaded
    machine a send was once cut off) ran nothing there: the command runs in the agent instead of
    failing the agent's run."""
    import socket

    deaf = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    deaf.bind(str(tmp_path / "deaf.sock"))  # bound, never listening: a connect is refused
    try:
        owner = ralph_server().rpartition(":")[2]  # this user and mount namespace: served, if it could be
        said = run_agent(repo, tmp_path, f"{tmp_path / 'deaf.sock'}:{owner}")
    finally:
        deaf.close()
    assert said["here"] and said["added"]["name"] == "Parse input"
    assert [json.loads(line)["id"] for line in said["listed"].splitlines()] == [said["added"]["id"]]
