"""`ralph spec new NAME`: a spec to fill in, from a template that says what a good spec holds."""

from __future__ import annotations

import click

from ralph.cli.common import emit, json_option, root_of, say
from ralph.cli.lazy import lazy_group
from ralph.text import printable


@click.group(
    cls=lazy_group({"draft": "ralph.cli.drafts:spec_draft"}),
    short_help="Write a spec: from a template, or drafted by an agent.",
)
def spec() -> None:
    """Write specs for `ralph construct`."""


@spec.command("new", short_help="Write specs/NAME.md: a spec template to fill in.")
@click.argument("name")
@json_option
@click.pass_context
def spec_new(ctx, name, as_json):
    """Write specs/NAME.md from a template that says what a good spec holds: the goal,
    requirements as a checklist of checkable items, constraints, what is out of scope, and how to
    verify. An existing file is never overwritten; nothing is committed."""
    from ralph.ops.specs import new_spec

    path = new_spec(root_of(ctx), name)
    if as_json:
        emit({"path": path})
        return
    say(f"wrote {printable(path)}: replace each comment with your text and commit it, then")
    say(f"  ralph construct {printable(path)} --dry-run    # what the first run would do")
