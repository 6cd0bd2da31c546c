"""`ralph query ...`: the machine-readable reads (stage, iteration, next, tasks, issues)."""

from __future__ import annotations

import click

from ralph.cli.common import (
    emit,
    json_option,
    root_of,
    say,
)
from ralph.cli.filters import status_filter

# --- query (machine-readable) ----------------------------------------------------------------


@click.group()
def query() -> None:
    """Read the plan for scripts and agents (JSON or a single word)."""


@query.command("stage", short_help="The stage the plan is in (PLAN, BUILD, CHECK, COMPLETE, ...).")
@json_option
@click.pass_context
def query_stage(ctx: click.Context, as_json: bool) -> None:
    """The stage the plan is in: PLAN (nothing planned yet), DECOMPOSE, INVESTIGATE, BUILD,
    VERIFY, WAITING (for a person's answers), BLOCKED (a person must decide), CHECK (every task
    accepted; the spec check runs next) or COMPLETE (a spec check found the spec met with this
    code) (--json: {"stage": ...})."""
    from ralph.usecases import reads

    stage = reads.stage(root_of(ctx))
    emit({"stage": stage}) if as_json else say(stage)


@query.command("iteration", short_help="The construct loop's current iteration number.")
@json_option
@click.pass_context
def query_iteration(ctx: click.Context, as_json: bool) -> None:
    """The construct loop's current iteration number (--json: {"iteration": N})."""
    from ralph.usecases import reads

    iteration = reads.iteration(root_of(ctx))
    emit({"iteration": iteration}) if as_json else say(iteration)


# The query commands below print JSON either way; --json is accepted so that every command that
# prints data takes it, as docs/state-commands.md promises.


@query.command("next", short_help="The next task to build, as one JSON object.")
@json_option
@click.pass_context
def query_next(ctx: click.Context, as_json: bool) -> None:
    """The next task to build, as one JSON object (exit 1 when none is ready)."""
    from ralph.usecases import reads

    emit(reads.next_task(root_of(ctx)))


@query.command("tasks")
@click.option("--pending", is_flag=True, help="Only pending tasks.")
@click.option("--done", is_flag=True, help="Only done tasks.")
@click.option("--blocked", is_flag=True, help="Only blocked tasks.")
@json_option
@click.pass_context
def query_tasks(ctx: click.Context, pending: bool, done: bool, blocked: bool, as_json: bool) -> None:
    """The tasks, one JSON object per line."""
    from ralph.usecases import reads

    for record in reads.tasks(root_of(ctx), status_filter(pending, done, blocked)):
        emit(record)


@query.command("issues")
@json_option
@click.pass_context
def query_issues(ctx: click.Context, as_json: bool) -> None:
    """The open issues, one JSON object per line."""
    from ralph.usecases import reads

    for record in reads.issues(root_of(ctx)):
        emit(record)
