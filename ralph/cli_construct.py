"""CLI commands of the construct loop (`ralph construct`, `ralph plan`)."""

from __future__ import annotations

import click


def register(group: click.Group) -> None:
    pass
