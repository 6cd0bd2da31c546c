"""A command group whose heavier subcommands are imported only when named (or listed in --help):
every command's start-up pays for the modules it imports."""

from __future__ import annotations

import importlib

import click


def lazy_group(lazy: dict[str, str]) -> type[click.Group]:
    """A Group class that loads each of `lazy` ({name: "module:attribute"}) on first use."""

    class LazyGroup(click.Group):
        def list_commands(self, ctx: click.Context) -> list[str]:
            return sorted({*super().list_commands(ctx), *lazy})

        def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
            if name in lazy:
                module, attribute = lazy[name].split(":")
                command: click.Command = getattr(importlib.import_module(module), attribute)
                return command
            return super().get_command(ctx, name)

    return LazyGroup
