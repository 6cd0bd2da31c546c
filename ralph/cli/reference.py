"""The reference docs derived from the code: docs/cli.md, every command's `--help` as click prints
it, and docs/config.md's table of config keys, from the declared keys (ralph/plan/models.py, the
same words as docs/plan-format.md's config table). The prose around the table is written by hand.
`make docs` runs it; the tests fail when either file is stale.

    python -m ralph.cli.reference          # rewrite both
    python -m ralph.cli.reference --check  # exit 1 naming each stale file, writing nothing
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

DOCS = Path(__file__).parents[2] / "docs"
CLI_FILE = DOCS / "cli.md"
CONFIG_FILE = DOCS / "config.md"
WIDTH = 80  # the help's line width in the docs, whatever the terminal that generates them
_KEYS = re.compile(r"(<!-- config keys: [^\n]*-->\n)(?P<table>.*?)(<!-- end of config keys -->)", re.S)
BEGIN_NOTE = "generated from ralph/plan/models.py by make docs; edit the descriptions there"


def contexts(ctx: click.Context, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Context]]:
    """Every command and group under ctx's by its path, each with the context its --help is printed
    in, depth first in the order --help lists them; the lazily loaded ones too."""
    found = [(path, ctx)]
    command = ctx.command
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                found += contexts(_context(sub, name, ctx), (*path, name))
    return found


def _context(command: click.Command, name: str, parent: click.Context | None) -> click.Context:
    """The context `ralph ... NAME --help` prints in: the command's own context settings (the root's
    `-h` too, inherited), WIDTH columns, and no argument required (nothing is parsed)."""
    return command.make_context(
        name, [], parent=parent, resilient_parsing=True, terminal_width=WIDTH, max_content_width=WIDTH
    )


def cli_text() -> str:
    from ralph.cli.main import cli

    root = _context(cli, "ralph", None)
    found = contexts(root)
    parts = [
        "# Command reference\n",
        "Every command's `--help`, generated from the code by `make docs` (ralph/cli/reference.py):",
        "edit the help text in `ralph/cli/`, never this file. Exit codes, config keys and the rest are",
        "in [reference.md](reference.md) and [config.md](config.md).\n",
    ]
    for path, _ in found:
        name = " ".join(("ralph", *path))
        parts.append(f"- [`{name}`](#{_anchor(name)})")
    parts.append("")
    for path, ctx in found:
        name = " ".join(("ralph", *path))
        parts += [f"## {name}\n", "```text", ctx.command.get_help(ctx).rstrip(), "```\n"]
    return "\n".join(parts)


def _anchor(title: str) -> str:
    """GitHub's anchor of a heading: lower case, spaces to hyphens, other punctuation dropped."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def config_table() -> str:
    """The config keys as docs/plan-format.md's config table has them, without the record's `t`."""
    from ralph.plan.generate import field_table
    from ralph.plan.models import json_schema

    rows = field_table(json_schema(), "config").splitlines()
    rows[0] = "| key | value | meaning |"
    return "\n".join(row for row in rows if not row.startswith("| `t` |")) + "\n"


def config_text(current: str) -> str:
    if not _KEYS.search(current):
        raise ValueError(
            f"{CONFIG_FILE.name}: no place for the table: '<!-- config keys: {BEGIN_NOTE} -->' up to"
            " '<!-- end of config keys -->'"
        )
    return _KEYS.sub(lambda m: m[1] + "\n" + config_table() + "\n" + m[3], current)


def outputs() -> dict[Path, str]:
    """Each generated file and what it must hold."""
    return {CLI_FILE: cli_text(), CONFIG_FILE: config_text(CONFIG_FILE.read_text(encoding="utf-8"))}


def main(argv: list[str] | None = None) -> int:
    from ralph.generated import write_or_check

    return write_or_check(
        argv,
        "python -m ralph.cli.reference",
        __doc__.splitlines()[0],
        outputs,
        lambda path: f"{path} is out of date with the code: run make docs",
    )


if __name__ == "__main__":
    sys.exit(main())
