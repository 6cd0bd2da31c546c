"""ralph/agents/__init__.py's ADAPTERS is the one list of adapters: `--agent`'s help on each command
that takes it, and docs/agents.md's table, name every adapter it has, and no other."""

from __future__ import annotations

import re
from pathlib import Path

import click
from click.testing import CliRunner

from ralph import agents
from ralph.cli.main import cli
from tests.support.cli import leaf_commands

DOCS = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def agent_helps() -> dict[str, str]:
    """The help of `--agent` on each command that takes it, by the command's path."""
    return {
        path: param.help or ""
        for path, command in leaf_commands().items()
        for param in command.params
        if isinstance(param, click.Option) and "--agent" in param.opts
    }


def test_agent_help_names_every_adapter():
    helps = agent_helps()
    assert {"construct", "plan", "spec draft"} <= set(helps)
    for path, text in helps.items():
        named = re.findall(r"\b[a-z]+\b", text.split(" (", 1)[0])
        assert [word for word in named if word != "or"] == list(agents.ADAPTERS), path


def test_a_new_adapter_shows_in_the_help_words(monkeypatch):
    monkeypatch.setitem(agents.ADAPTERS, "newcli", ("ralph.agents.command", "CommandAdapter"))
    assert agents.names_in_words() == "claude, codex, opencode, gemini, command or newcli"


def test_the_agents_doc_has_a_row_for_each_adapter():
    rows = re.findall(r"^\| `([a-z]+)` \|", DOCS.read_text(encoding="utf-8"), re.M)
    assert rows == list(agents.ADAPTERS)


def test_ralph_agents_lists_each_adapter():
    shown = CliRunner().invoke(cli, ["agents", "--json"], prog_name="ralph").stdout
    assert re.findall(r'"agent": "([a-z]+)"', shown) == list(agents.ADAPTERS)
