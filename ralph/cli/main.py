"""The `ralph` command: the root group, with each command defined in the module of its layer.

Every command is loaded only when named: `ralph task done` imports the task commands and what
they need, not the loop, its settings, the agent adapters, or the other commands' modules
(which cost a state command about 3 ms of its start-up). `ralph --help` loads them all."""

from __future__ import annotations

import gc
import importlib

import click

from ralph import __version__
from ralph.cli.common import RalphGroup

# name -> "module:attribute" of its click command
COMMANDS = {
    "init": "ralph.cli.state:init",
    "merge-driver": "ralph.cli.state:merge_driver",
    "check": "ralph.cli.state:check",
    "doctor": "ralph.cli.doctor:doctor",
    "schema": "ralph.cli.state:schema",
    "status": "ralph.cli.state:status",
    "task": "ralph.cli.tasks:task",
    "issue": "ralph.cli.issues:issue",
    "query": "ralph.cli.queries:query",
    "config": "ralph.cli.config:config",
    "log": "ralph.cli.history:log",
    "completion": "ralph.cli.history:completion",
    "report": "ralph.cli.history:report",
    "ask": "ralph.cli.questions:ask",
    "answer": "ralph.cli.questions:answer",
    "questions": "ralph.cli.questions:questions",
    "spec": "ralph.cli.specs:spec",
    "skills": "ralph.cli.skills:skills",
    # the construct loop's
    "construct": "ralph.cli.construct:construct",
    "plan": "ralph.cli.construct:plan_command",
    "review": "ralph.cli.construct:review_command",
    "agents": "ralph.cli.construct:agents",
    "watch": "ralph.cli.construct:watch",
    "pr": "ralph.cli.construct:pull_request",
}


class Ralph(RalphGroup):
    """The root group: each command loaded on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name].split(":")
        command: click.Command = getattr(importlib.import_module(module), attribute)
        _collect_from_now()
        return command


@click.group(cls=Ralph, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-C",
    "directory",
    type=click.Path(file_okay=False),
    help="Run as if started in this directory.",
)
@click.version_option(__version__, message="ralph %(version)s")  # not from the metadata: one place
def cli(directory: str | None) -> None:
    """Drive a coding agent against a spec; keep all state in a git-committed plan.jsonl."""


def main() -> None:
    # A command's start-up is mostly imports, whose objects live as long as the process: the
    # garbage collector's passes over them while they load free nothing, and cost a state command
    # 10-15% of its CPU (about 10 ms of 80). Off until the command is loaded (_collect_from_now).
    global _STARTING
    _STARTING = True
    gc.disable()
    cli(prog_name="ralph")


_STARTING = False  # main() turned the collector off for the start-up


def _collect_from_now() -> None:
    """The collector on again once the command is loaded, for a run that lasts (construct, watch),
    with what start-up made frozen out of its passes (gc.freeze: never walked, never freed)."""
    global _STARTING
    if _STARTING:
        _STARTING = False
        gc.freeze()
        gc.enable()
