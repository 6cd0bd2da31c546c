"""The real CLI from a test: in this process (Ralph, ralph_in_process) or as a process of its own
(ralph_process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from ralph.cli.main import cli


class Ralph:
    """Runs the real CLI in-process (CliRunner) against one repository."""

    def __init__(self, root: Path):
        self.root = root
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None, code: int | None = 0):
        result = self.runner.invoke(cli, ["-C", str(self.root), *args], input=input, catch_exceptions=False)
        if code is not None:
            assert result.exit_code == code, (args, result.exit_code, result.stdout, result.stderr)
        return result


def ralph_in_process(root: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    """What ralph_process gives (exit code, stdout, stderr), from the real CLI run in this process
    through click's runner, in this process's environment: a test about what a command does, not
    about ralph as a program, saves a Python start-up (about 0.1 s of CPU) per command."""
    result = CliRunner().invoke(cli, ["-C", str(root), *args], input=input, catch_exceptions=False)
    return subprocess.CompletedProcess(["ralph", *args], result.exit_code, result.stdout, result.stderr)


def ralph_process(root: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    """Runs `python -m ralph` as a real process: for what only a process shows (its signals, its
    user, bytes in its argv, several of them at once); ralph_in_process for the rest."""
    return subprocess.run(
        [sys.executable, "-m", "ralph", "-C", str(root), *args],
        capture_output=True,
        text=True,
        env={**os.environ},
        **kwargs,
    )


def leaf_commands(command: click.Command = cli, path: tuple[str, ...] = ()) -> dict[str, click.Command]:
    """Every command that runs something, by its path ("task add"), the lazily loaded ones too."""
    if not isinstance(command, click.Group):
        return {" ".join(path): command}
    ctx = click.Context(command)
    found: dict[str, click.Command] = {}
    for name in command.list_commands(ctx):  # the lazily loaded loop commands too
        sub = command.get_command(ctx, name)
        assert sub is not None, name
        found.update(leaf_commands(sub, (*path, name)))
    return found
