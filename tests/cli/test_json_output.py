"""Every command that prints data takes --json, and every JSON object it prints (each line of a
JSON-lines output) carries `schema_version` (docs/json-output.md). The commands are found by
walking the click tree, so a new command must be listed here as data or not."""

from __future__ import annotations

import json

import click
import pytest

from ralph.cli.main import cli
from ralph.text import SCHEMA_VERSION

# Commands whose output is not data: a script, git's merge driver (writes a file), an HTML page, a
# live view for a person (its data is build/ralph-logs/events.jsonl).
NOT_DATA = {"completion", "merge-driver", "report", "watch"}

# Each data command's arguments; {issue} and {question} are ids made by the setup.
LOOP = ["--agent", "command", "--agent-cmd", "true", "--allow-dirty"]
INVOCATIONS: dict[str, list[str]] = {
    "agents": [],
    "answer": ["{question}", "SQLite"],
    "ask": ["SQLite or Postgres?", "--task", "t-bbbbbb"],
    "check": [],
    "config get": ["parallel"],
    "config list": ["--origin"],
    "config set": ["parallel", "2"],
    "config unset": ["max_attempts"],
    "doctor": [],
    "construct": ["specs/x.md", "--dry-run", "--gate", "", *LOOP],
    "init": [],
    "issue add": ["Is the cookie HttpOnly?"],
    "issue keep": ["{issue}", "a person decides"],
    "issue list": [],
    "issue resolve": ["{issue}"],
    "log": [],
    "plan": ["specs/x.md", *LOOP],
    "query issues": [],
    "query iteration": [],
    "query next": [],
    "query stage": [],
    "query tasks": [],
    "questions": [],
    "schema": [],
    "status": [],
    "task accept": ["t-aaaaaa"],
    "task add": ['{"name": "y"}'],
    "task delete": ["t-bbbbbb"],
    "task done": ["t-cccccc"],
    "task list": [],
    "task prioritize": [],
    "task reject": ["t-aaaaaa", "not yet"],
    "task show": ["t-aaaaaa"],
}


def leaf_commands(command: click.Command = cli, path: tuple[str, ...] = ()) -> dict[str, click.Command]:
    if not isinstance(command, click.Group):
        return {" ".join(path): command}
    ctx = click.Context(command)
    found: dict[str, click.Command] = {}
    for name in command.list_commands(ctx):  # the lazily loaded loop commands too
        found.update(leaf_commands(command.get_command(ctx, name), (*path, name)))
    return found


def test_every_command_is_listed_as_data_or_not():
    assert set(leaf_commands()) == set(INVOCATIONS) | NOT_DATA


@pytest.mark.parametrize("path", sorted(INVOCATIONS))
def test_each_data_command_takes_json_and_every_object_it_prints_has_the_schema_version(ralph, repo, path):
    options = {opt for param in leaf_commands()[path].params for opt in getattr(param, "opts", [])}
    assert "--json" in options
    ralph(
        "task",
        "add",
        '[{"id": "t-aaaaaa", "name": "x"}, {"id": "t-bbbbbb", "name": "y"}, {"id": "t-cccccc", "name": "z"}]',
    )
    ralph("task", "done", "t-aaaaaa")
    ralph("config", "set", "max_attempts", "2")
    issue = json.loads(ralph("issue", "add", "a question", "--json").stdout)["id"]
    question = json.loads(ralph("ask", "Which port?", "--task", "t-bbbbbb", "--json").stdout)["id"]
    (repo / "specs" / "x.md").write_text("# x\n")
    args = [arg.replace("{issue}", issue).replace("{question}", question) for arg in INVOCATIONS[path]]
    result = ralph(*path.split(), *args, "--json", code=None)
    lines = result.stdout.splitlines()
    assert lines, (path, result.exit_code, result.stderr)
    for line in lines:
        printed = json.loads(line)
        assert isinstance(printed, dict) and printed["schema_version"] == SCHEMA_VERSION, (path, line)
