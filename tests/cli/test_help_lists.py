"""The command lists of `ralph --help` and each group's --help read whole: every command's short
help is a sentence, never cut mid-way by click ("...") or at an abbreviation ("e.g.")."""

from __future__ import annotations

import re

import click
from click.testing import CliRunner

from ralph.cli.main import cli
from tests.support.cli import leaf_commands


def groups(command: click.Command = cli, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if not isinstance(command, click.Group):
        return []
    ctx = click.Context(command)
    found = [path]
    for name in command.list_commands(ctx):
        sub = command.get_command(ctx, name)
        assert sub is not None, name
        found += groups(sub, (*path, name))
    return found


def listed(path: tuple[str, ...], width: int) -> list[str]:
    shown = CliRunner().invoke(cli, [*path, "--help"], prog_name="ralph", terminal_width=width).stdout
    return shown.split("Commands:\n", 1)[1].splitlines()


def test_every_listed_command_reads_whole_at_80_columns():
    assert len(groups()) >= 6 and leaf_commands()  # the root, task, issue, query, config, spec
    for path in groups():
        for line in listed(path, 80):
            name, _, text = line.strip().partition(" ")
            text = text.strip()
            assert not text.endswith("...") and not re.search(r"\be\.g\.$", text), (path, line)
            assert text.endswith((".", ")")), (path, line)
            assert len(line) <= 80, (path, line)  # one line each: nothing wraps
