"""The `ralph` command: the root group, with each command defined in the module of its layer.

The construct loop's commands are loaded only when named, so a state command such as
`ralph query next` never imports the loop, its settings or the agent adapters."""

from __future__ import annotations

import importlib

import click

from ralph import __version__
from ralph.cli import config, doctor, history, issues, queries, questions, specs, state, tasks
from ralph.cli.common import RalphGroup

LAZY_COMMANDS = {
    "construct": "ralph.cli.construct:construct",
    "plan": "ralph.cli.construct:plan_command",
    "agents": "ralph.cli.construct:agents",
    "watch": "ralph.cli.construct:watch",
    "pr": "ralph.cli.construct:pull_request",
}


class Ralph(RalphGroup):
    """The root group: eager state commands, plus the loop's commands loaded on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_COMMANDS:
            module, attribute = LAZY_COMMANDS[name].split(":")
            return getattr(importlib.import_module(module), attribute)
        return super().get_command(ctx, name)


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


for command in (
    state.init,
    state.merge_driver,
    state.check,
    doctor.doctor,
    state.schema,
    state.status,
    tasks.task,
    issues.issue,
    queries.query,
    config.config,
    history.log,
    history.completion,
    history.report,
    questions.ask,
    questions.answer,
    questions.questions,
    specs.spec,
):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="ralph")
