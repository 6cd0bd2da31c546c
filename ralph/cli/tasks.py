"""`ralph task ...`: add, done, accept, reject, delete, prioritize, list, show. Each parses its
arguments, calls ralph.usecases, and prints."""

from __future__ import annotations

import json
import os
import re
import sys

import click

from ralph.cli.common import (
    commit_choice,
    current_task,
    emit,
    json_option,
    no_commit_option,
    root_of,
    say,
    task_ids,
    task_or_current,
)
from ralph.cli.filters import TASK_ID, status_filter
from ralph.errors import InvalidInput
from ralph.plan.records import KillReason, TaskType, status_of
from ralph.text import printable

# --- task ------------------------------------------------------------------------------------


@click.group()
def task() -> None:
    """Add, finish, accept, reject and order tasks."""


# What an option looks like: no JSON value starts with a dash and a letter (-5 is a number).
_OPTION_LIKE = re.compile(r"--?[A-Za-z][\w-]*(=.*)?", re.DOTALL)


def _parse_task_json(ctx: click.Context, values: tuple[str, ...]) -> list[object]:
    items: list[object] = []
    for value in values:
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            if _OPTION_LIKE.fullmatch(value):  # `--prio high`: a misspelt flag, not bad JSON
                name = value.split("=", 1)[0]
                options = [opt for param in ctx.command.params for opt in param.opts if opt.startswith("-")]
                raise click.NoSuchOption(name, possibilities=options, ctx=ctx) from None
            raise InvalidInput(f"task add: invalid JSON: {exc.msg} (column {exc.colno})") from None
        except (ValueError, RecursionError) as exc:
            from ralph.plan.loader import json_limit

            raise InvalidInput(f"task add: invalid JSON: {json_limit(exc)}") from None
        items.extend(parsed if isinstance(parsed, list) else [parsed])
    return items


@task.command(
    "add",
    short_help="Add tasks: a JSON object or array, or --name.",
    context_settings={"ignore_unknown_options": True},
)  # '-5' is JSON, not an option
@click.argument("json_tasks", metavar="[JSON]...", nargs=-1)
@click.option("--name", help="The task's name (instead of JSON).")
@click.option("--accept", help="Acceptance criteria.")
@click.option("--deps", help="Comma-separated ids of tasks this one needs.")
@click.option("--priority", type=click.Choice(["high", "medium", "low"]), help="Set an explicit priority.")
@click.option("--notes", help="Notes for whoever builds it.")
@click.option("--spec", help="The spec file the task belongs to.")
@click.option(
    "--type",
    "task_type",
    type=click.Choice([kind.value for kind in TaskType]),
    help="The kind of work: its BUILD and VERIFY prompts carry the type's own instructions.",
)
@click.option("--stdin", "from_stdin", is_flag=True, help="Read the JSON from standard input.")
@no_commit_option
@json_option
@click.pass_context
def task_add(
    ctx: click.Context,
    json_tasks: tuple[str, ...],
    name: str | None,
    accept: str | None,
    deps: str | None,
    priority: str | None,
    notes: str | None,
    spec: str | None,
    task_type: str | None,
    from_stdin: bool,
    no_commit: bool,
    as_json: bool,
) -> None:
    """Add tasks: a JSON object or array, e.g. '{"name": "Add login", "accept": "..."}', or --name."""
    from ralph.usecases import tasks

    if from_stdin:
        json_tasks = (*json_tasks, sys.stdin.read())
    items = _parse_task_json(ctx, json_tasks)
    if name is not None and json_tasks:
        raise InvalidInput("task add: give the task as JSON or with --name, not both")
    if name is not None:
        fields: dict[str, object] = {
            "name": name,
            "accept": accept,
            "priority": priority,
            "notes": notes,
            "spec": spec,
            "type": task_type,
        }
        fields["deps"] = [d.strip() for d in deps.split(",") if d.strip()] if deps else None
        items.append({key: value for key, value in fields.items() if value is not None})
    elif any(v is not None for v in (accept, deps, priority, notes, spec, task_type)):
        raise InvalidInput("task add: --accept/--deps/--priority/--notes/--spec/--type go with --name")
    if not items:
        given = "the JSON holds no task" if json_tasks else "give a task as JSON or with --name"
        raise InvalidInput(f"task add: {given}")
    added = tasks.add(root_of(ctx), items, commit_choice(no_commit), os.environ.get("RALPH_ISSUE_ID") or None)
    for record in added:
        emit(record) if as_json else say(f"added {record['id']}: {printable(record['name'])}")


@task.command("done", short_help="Mark a task done (default: $RALPH_TASK_ID).")
@click.argument("task_id", metavar="[ID]", required=False, shell_complete=task_ids)
@click.option(
    "--unchanged",
    metavar="ARGUMENT",
    help="Resubmit work VERIFY rejected as it is, with the argument why it already meets the criteria:"
    " a fresh verifier judges it once (a second rejection counts as a rebuild).",
)
@no_commit_option
@json_option
@click.pass_context
def task_done(
    ctx: click.Context, task_id: str | None, unchanged: str | None, no_commit: bool, as_json: bool
) -> None:
    """Mark a task done (default: $RALPH_TASK_ID, else the task `ralph query next` shows)."""
    from ralph.usecases import tasks

    record = tasks.done(root_of(ctx), task_or_current(task_id), commit_choice(no_commit), unchanged)
    emit(record) if as_json else say(f"done {record['id']}: {printable(record['name'])}")


@task.command("accept", short_help="Accept a done task, or every done task.")
@click.argument("task_id", metavar="[ID]", required=False, shell_complete=task_ids)
@no_commit_option
@json_option
@click.pass_context
def task_accept(ctx: click.Context, task_id: str | None, no_commit: bool, as_json: bool) -> None:
    """Accept a done task (default: $RALPH_TASK_ID, else every done task); its line becomes an
    accept tombstone."""
    from ralph.usecases import tasks

    for record in tasks.accept(root_of(ctx), task_or_current(task_id), commit_choice(no_commit)):
        emit({"id": record["id"], "accepted": True}) if as_json else say(
            f"accepted {record['id']}: {printable(record['name'])}"
        )


@task.command("reject", short_help="Send a done task back to pending, with the reason.")
@click.argument("args", metavar="[ID] REASON", nargs=-1, required=True, shell_complete=task_ids)
@click.option("--kill-reason", type=click.Choice([reason.value for reason in KillReason]), hidden=True)
@click.option("--kill-log", hidden=True)
@no_commit_option
@json_option
@click.pass_context
def task_reject(
    ctx: click.Context,
    args: tuple[str, ...],
    kill_reason: str | None,
    kill_log: str | None,
    no_commit: bool,
    as_json: bool,
) -> None:
    """Send a done task back to pending with the reason (default ID: $RALPH_TASK_ID, else the
    only done task)."""
    from ralph.usecases import tasks

    if len(args) > 2:
        raise InvalidInput("task reject takes [ID] REASON: quote the reason")
    task_id, reason = (args[0], args[1]) if len(args) == 2 else (current_task(), args[0])
    if len(args) == 1 and TASK_ID.fullmatch(reason):
        raise InvalidInput(
            f"task reject {printable(reason)}: give the reason too (ralph task reject ID REASON)"
        )
    task_id = task_or_current(task_id)
    record = tasks.reject(root_of(ctx), task_id, reason, kill_reason, kill_log, commit_choice(no_commit))
    emit(record) if as_json else say(f"rejected {record['id']}: {printable(record['name'])} (pending again)")


@task.command("delete", short_help="Remove a task; what needed it needs its subtasks.")
@click.argument("task_id", metavar="ID", shell_complete=task_ids)
@click.option("--force", is_flag=True, help="Also drop the dependencies other tasks have on it.")
@no_commit_option
@json_option
@click.pass_context
def task_delete(ctx: click.Context, task_id: str, force: bool, no_commit: bool, as_json: bool) -> None:
    """Remove a task; tasks that need it then need its subtasks (tasks with it as parent)."""
    from ralph.usecases import tasks

    record, rewired = tasks.delete(root_of(ctx), task_id, force, commit_choice(no_commit))
    if as_json:
        return emit({"id": record["id"], "deleted": True, "updated": list(rewired)})
    suffix = f" ({', '.join(rewired)} updated)" if rewired else ""
    say(f"deleted {record['id']}: {printable(record['name'])}{suffix}")


@task.command("prioritize", short_help="Set a priority on the pending tasks that have none.")
@click.option("--spec", help="Only tasks of this spec (and tasks without one).")
@no_commit_option
@json_option
@click.pass_context
def task_prioritize(ctx: click.Context, spec: str | None, no_commit: bool, as_json: bool) -> None:
    """Set the priority of pending tasks that have none set by a person; print the counts (JSON,
    with or without --json)."""
    from ralph.usecases import tasks

    counts = tasks.prioritize(root_of(ctx), spec, commit_choice(no_commit))
    emit(counts)


@task.command("list")
@click.option("--pending", is_flag=True, help="Only pending tasks.")
@click.option("--done", is_flag=True, help="Only done tasks.")
@click.option("--blocked", is_flag=True, help="Only blocked tasks.")
@json_option
@click.pass_context
def task_list(ctx: click.Context, pending: bool, done: bool, blocked: bool, as_json: bool) -> None:
    """List the tasks in the plan, one line each."""
    from ralph.usecases import reads

    for record in reads.tasks(root_of(ctx), status_filter(pending, done, blocked)):
        if as_json:
            emit(record)
        else:
            shown = (record.get("priority"), record.get("type"), record.get("kill_reason"))
            flags = " ".join(f"[{f}]" for f in shown if f)
            line = f"{record['id']}  {status_of(record).name.lower()}  {printable(record['name'])}"
            say(line + (f"  {flags}" if flags else ""))


@task.command("show")
@click.argument("task_id", metavar="ID", shell_complete=task_ids)
@json_option
@click.pass_context
def task_show(ctx: click.Context, task_id: str, as_json: bool) -> None:
    """Print one task as JSON (with or without --json)."""
    from ralph.usecases import reads

    emit(reads.task(root_of(ctx), task_id))
