"""`ralph config get|set|unset|list`: the plan's config record, a checked key at a time."""

from __future__ import annotations

import json

import click

from ralph.cli.common import (
    commit_choice,
    config_keys,
    config_values,
    emit,
    json_option,
    no_commit_option,
    root_of,
    say,
)
from ralph.text import printable


def _shown(value: object) -> str:
    """A value as `config set` takes it: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


@click.group(short_help="Read and change the plan's settings, one commit each.")
def config() -> None:
    """Read and change the settings in the plan's config record (one commit per change).

    Layers, lowest first: ralph's defaults, your own $XDG_CONFIG_HOME/ralph/config.toml (default
    ~/.config/ralph/config.toml), the config record of plan.jsonl, the command-line flags.
    Durations (the *_ms keys) take milliseconds or a unit (90s, 5m); gate, agent_cmd and
    agent_args take a command line ("make verify", split like a shell, never run by one) or a JSON
    list of strings."""


@config.command("get")
@click.argument("key", shell_complete=config_keys)
@json_option
@click.pass_context
def config_get(ctx: click.Context, key: str, as_json: bool) -> None:
    """Print the value of KEY in force (from whichever layer set it)."""
    from ralph.usecases import config as ops

    found = ops.get(root_of(ctx), key)
    emit(found) if as_json else say(printable(_shown(found["value"])))


class _WithKeys(click.Command):
    """A command whose help ends with every config key, its kind, default and meaning, as
    ralph/plan/models.py declares them (read from the generated declared.py: no pydantic)."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from ralph.plan.declared import CONFIG_KEYS

        rows = []
        for name, key in CONFIG_KEYS.items():
            default = "" if key.default is None else f", default {json.dumps(key.default)}"
            rows.append((name, f"({key.kind}{default}) {key.description}"))
        with formatter.section("Keys"):
            formatter.write_dl(rows)


@config.command(
    "set", cls=_WithKeys, short_help="Set KEY to VALUE in the plan's config record, checked first."
)
@click.argument("key", shell_complete=config_keys)
@click.argument("value", shell_complete=config_values)
@no_commit_option
@json_option
@click.pass_context
def config_set(ctx: click.Context, key: str, value: str, no_commit: bool, as_json: bool) -> None:
    """Set KEY to VALUE in the plan's config record, checked first (a bad value changes nothing)."""
    from ralph.usecases import config as ops

    done = ops.set_value(root_of(ctx), key, value, commit_choice(no_commit))
    emit(done) if as_json else say(f"set {key} = {printable(json.dumps(done['value']))}")


@config.command("unset", short_help="Remove KEY from the plan's config record.")
@click.argument("key", shell_complete=config_keys)
@no_commit_option
@json_option
@click.pass_context
def config_unset(ctx: click.Context, key: str, no_commit: bool, as_json: bool) -> None:
    """Remove KEY from the plan's config record (the layer below applies again)."""
    from ralph.usecases import config as ops

    done = ops.unset(root_of(ctx), key, commit_choice(no_commit))
    emit(done) if as_json else say(f"unset {key}")


@config.command("list", short_help="Every key with the value in force (and where it is from).")
@click.option("--origin", is_flag=True, help="Say where each value comes from.")
@json_option
@click.pass_context
def config_list(ctx: click.Context, origin: bool, as_json: bool) -> None:
    """Every config key with the value in force (--origin: default, the user's file or
    plan.jsonl)."""
    from ralph.usecases import config as ops

    found = ops.layers(root_of(ctx))
    if as_json:
        return emit({"config": found})
    for key, entry in found.items():
        where = f"  ({printable(entry['origin'])})" if origin else ""
        say(f"{key} = {printable(json.dumps(entry['value']))}{where}")
