"""`ralph issue ...`: add, resolve, keep, list. Each parses its arguments, calls ralph.usecases, and
prints."""

from __future__ import annotations

import click

from ralph.cli.common import (
    commit_choice,
    emit,
    issue_ids,
    json_option,
    no_commit_option,
    root_of,
    say,
)
from ralph.text import printable

# --- issue -----------------------------------------------------------------------------------


@click.group(short_help="Record problems for INVESTIGATE, and resolve them.")
def issue() -> None:
    """Record questions and problems for INVESTIGATE, and resolve them."""


@issue.command("add")
@click.argument("text")
@click.option("--priority", type=click.Choice(["high", "medium", "low"]))
@no_commit_option
@json_option
@click.pass_context
def issue_add(ctx: click.Context, text: str, priority: str | None, no_commit: bool, as_json: bool) -> None:
    """Add an issue: a question or problem to investigate."""
    from ralph.usecases import issues

    record = issues.add(root_of(ctx), text, priority, commit_choice(no_commit))
    emit(record) if as_json else say(f"added {record['id']}: {printable(record['text'])}")


@issue.command("resolve")
@click.argument("issue_id", metavar="ID", shell_complete=issue_ids)
@click.option("--note", help="How it was resolved (goes into the commit message).")
@no_commit_option
@json_option
@click.pass_context
def issue_resolve(
    ctx: click.Context, issue_id: str, note: str | None, no_commit: bool, as_json: bool
) -> None:
    """Resolve an issue: its line is removed (git history keeps it)."""
    from ralph.usecases import issues

    record = issues.resolve(root_of(ctx), issue_id, note, commit_choice(no_commit))
    if as_json:
        return emit({**record, "resolved": True})
    say(f"resolved {record['id']}: {printable(record['text'])}")


@issue.command("keep", short_help="Leave an issue open on purpose: a person must decide.")
@click.argument("issue_id", metavar="ID", shell_complete=issue_ids)
@click.argument("reason")
@no_commit_option
@json_option
@click.pass_context
def issue_keep(ctx: click.Context, issue_id: str, reason: str, no_commit: bool, as_json: bool) -> None:
    """Leave an issue open on purpose (a person must decide): INVESTIGATE skips it from now on."""
    from ralph.usecases import issues

    record = issues.keep_open(root_of(ctx), issue_id, reason, commit_choice(no_commit))
    emit(record) if as_json else say(f"kept open {record['id']}: {printable(record['text'])}")


@issue.command("list")
@json_option
@click.pass_context
def issue_list(ctx: click.Context, as_json: bool) -> None:
    """List the open issues, one line each."""
    from ralph.usecases import reads

    for record in reads.issues(root_of(ctx)):
        emit(record) if as_json else say(f"{record['id']}  {printable(record['text'])}")
