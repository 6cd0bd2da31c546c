"""The `ralph` command line: parse arguments, call ralph.ops, print. Nothing else lives here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ralph.errors import EXIT_INTERNAL, EXIT_INVALID, InvalidInput, RalphError


class RalphGroup(click.Group):
    """Turns ralph's errors into one line on stderr and the error's exit code."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except RalphError as exc:
            click.echo(f"ralph: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:  # a bug: one line for the user, the traceback in a file
            import os

            if os.environ.get("RALPH_DEBUG"):
                raise
            where = _write_crash_log()
            click.echo(f"ralph: internal error: {type(exc).__name__}: {exc} (traceback: {where})", err=True)
            ctx.exit(EXIT_INTERNAL)


def _write_crash_log() -> str:
    import tempfile
    import time
    import traceback

    path = Path(tempfile.gettempdir()) / f"ralph-crash-{time.strftime('%Y%m%d-%H%M%S')}.log"
    path.write_text(traceback.format_exc(), encoding="utf-8")
    return str(path)


def _root(ctx: click.Context) -> Path:
    from ralph.gitrepo import find_root

    return find_root(Path(ctx.find_root().params.get("directory") or "."))


def _emit(data: object) -> None:
    click.echo(json.dumps(data, ensure_ascii=False))


no_commit_option = click.option("--no-commit", is_flag=True, help="Change plan.jsonl without committing it.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")


def _current_task() -> str | None:
    """The task an agent started by `ralph construct` is working on."""
    import os

    return os.environ.get("RALPH_TASK_ID") or None


def _commit(no_commit: bool) -> bool | None:
    return False if no_commit else None  # None: as the config record says


@click.group(cls=RalphGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-C",
    "directory",
    type=click.Path(file_okay=False),
    help="Run as if started in this directory.",
)
@click.version_option(package_name="ralph", message="ralph %(version)s")
def cli(directory: str | None) -> None:
    """Drive a coding agent against a spec; keep all state in a git-committed plan.jsonl."""


def main() -> None:
    cli(prog_name="ralph")


# --- init, check, schema, status -----------------------------------------------------------


@cli.command()
@no_commit_option
@click.pass_context
def init(ctx: click.Context, no_commit: bool) -> None:
    """Create plan.jsonl, specs/ and build/ralph-logs/ (ignored by git). Safe to run twice."""
    from ralph import ops

    root = _root(ctx)
    created = ops.init(root, commit=not no_commit)
    if created:
        click.echo(f"initialized ralph in {root}: " + ", ".join(created))
    else:
        click.echo(f"ralph is already initialized in {root}")


@cli.command()
@json_option
@click.pass_context
def check(ctx: click.Context, as_json: bool) -> None:
    """List every problem in plan.jsonl (exit 2 if there is any)."""
    from ralph.planfile import parse
    from ralph.store import PLAN_NAME, read_bytes

    doc, problems = parse(read_bytes(_root(ctx)), PLAN_NAME)
    if as_json:
        _emit({"ok": not problems, "records": len(doc.records()), "problems": [str(p) for p in problems]})
    elif problems:
        for problem in problems:
            click.echo(str(problem), err=True)
    else:
        click.echo(f"{PLAN_NAME}: ok ({len(doc.records())} records)")
    if problems:
        ctx.exit(EXIT_INVALID)


@cli.command()
def schema() -> None:
    """Print the JSON Schema of a plan.jsonl line."""
    from ralph.models import json_schema

    click.echo(json.dumps(json_schema(), indent=2))


@cli.command()
@json_option
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """A short summary: stage, counts by status, the next task."""
    from ralph import ops

    summary = ops.status(_root(ctx))
    if as_json:
        _emit(summary)
        return
    spec = f" ({summary['spec']})" if summary["spec"] else ""
    click.echo(f"stage {summary['stage']}, iteration {summary['iteration']}{spec}")
    click.echo(
        f"tasks: {summary['pending']} pending, {summary['done']} done, {summary['accepted']} accepted"
        + (f", {summary['killed']} to decompose" if summary["killed"] else "")
    )
    click.echo(f"issues: {summary['issues']} open")
    nxt = summary["next"]
    click.echo(f"next: {nxt['id']} {nxt['name']}" if nxt else "next: none")


# --- task ------------------------------------------------------------------------------------


@cli.group()
def task() -> None:
    """Add, finish, accept, reject and order tasks."""


def _parse_task_json(values: tuple[str, ...]) -> list:
    items: list = []
    for value in values:
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"task add: invalid JSON: {exc.msg} (column {exc.colno})") from None
        except (ValueError, RecursionError) as exc:
            from ralph.planfile import json_limit

            raise InvalidInput(f"task add: invalid JSON: {json_limit(exc)}") from None
        items.extend(parsed if isinstance(parsed, list) else [parsed])
    return items


@task.command("add", context_settings={"ignore_unknown_options": True})  # '-5' is JSON, not an option
@click.argument("json_tasks", metavar="[JSON]...", nargs=-1)
@click.option("--name", help="The task's name (instead of JSON).")
@click.option("--accept", help="Acceptance criteria.")
@click.option("--deps", help="Comma-separated ids of tasks this one needs.")
@click.option("--priority", type=click.Choice(["high", "medium", "low"]), help="Set an explicit priority.")
@click.option("--notes", help="Notes for whoever builds it.")
@click.option("--spec", help="The spec file the task belongs to.")
@click.option("--stdin", "from_stdin", is_flag=True, help="Read the JSON from standard input.")
@no_commit_option
@json_option
@click.pass_context
def task_add(ctx, json_tasks, name, accept, deps, priority, notes, spec, from_stdin, no_commit, as_json):
    """Add tasks: a JSON object or array, e.g. '{"name": "Add login", "accept": "..."}', or --name."""
    from ralph import ops

    if from_stdin:
        json_tasks = (*json_tasks, sys.stdin.read())
    items = _parse_task_json(json_tasks)
    if name is not None:
        fields = {"name": name, "accept": accept, "priority": priority, "notes": notes, "spec": spec}
        fields["deps"] = [d.strip() for d in deps.split(",") if d.strip()] if deps else None
        items.append({key: value for key, value in fields.items() if value is not None})
    elif any(v is not None for v in (accept, deps, priority, notes, spec)):
        raise InvalidInput("task add: --accept/--deps/--priority/--notes/--spec go with --name")
    if not items:
        given = "the JSON holds no task" if json_tasks else "give a task as JSON or with --name"
        raise InvalidInput(f"task add: {given}")
    added = ops.task_add(_root(ctx), items, _commit(no_commit))
    for record in added:
        _emit(record) if as_json else click.echo(f"added {record['id']}: {record['name']}")


@task.command("done")
@click.argument("task_id", metavar="[ID]", required=False)
@no_commit_option
@json_option
@click.pass_context
def task_done(ctx, task_id, no_commit, as_json):
    """Mark a task done (default: $RALPH_TASK_ID, else the task `ralph query next` shows)."""
    from ralph import ops

    record = ops.task_done(_root(ctx), task_id or _current_task(), _commit(no_commit))
    _emit(record) if as_json else click.echo(f"done {record['id']}: {record['name']}")


@task.command("accept")
@click.argument("task_id", metavar="[ID]", required=False)
@no_commit_option
@json_option
@click.pass_context
def task_accept(ctx, task_id, no_commit, as_json):
    """Accept a done task (default: $RALPH_TASK_ID, else every done task); its line becomes an
    accept tombstone."""
    from ralph import ops

    for record in ops.task_accept(_root(ctx), task_id or _current_task(), _commit(no_commit)):
        _emit({"id": record["id"], "accepted": True}) if as_json else click.echo(
            f"accepted {record['id']}: {record['name']}"
        )


@task.command("reject")
@click.argument("args", metavar="[ID] REASON", nargs=-1, required=True)
@click.option("--kill-reason", type=click.Choice(["timeout", "context_limit", "doom_loop"]), hidden=True)
@click.option("--kill-log", hidden=True)
@no_commit_option
@json_option
@click.pass_context
def task_reject(ctx, args, kill_reason, kill_log, no_commit, as_json):
    """Send a done task back to pending with the reason (default ID: $RALPH_TASK_ID, else the
    only done task)."""
    from ralph import ops

    if len(args) > 2:
        raise InvalidInput("task reject takes [ID] REASON: quote the reason")
    task_id, reason = (args[0], args[1]) if len(args) == 2 else (_current_task(), args[0])
    record = ops.task_reject(_root(ctx), task_id, reason, kill_reason, kill_log, _commit(no_commit))
    _emit(record) if as_json else click.echo(f"rejected {record['id']}: {record['name']} (pending again)")


@task.command("delete")
@click.argument("task_id", metavar="ID")
@click.option("--force", is_flag=True, help="Also drop the dependencies other tasks have on it.")
@no_commit_option
@click.pass_context
def task_delete(ctx, task_id, force, no_commit):
    """Remove a task; tasks that need it then need its subtasks (tasks with it as parent)."""
    from ralph import ops

    record, rewired = ops.task_delete(_root(ctx), task_id, force, _commit(no_commit))
    suffix = f" ({', '.join(rewired)} updated)" if rewired else ""
    click.echo(f"deleted {record['id']}: {record['name']}{suffix}")


@task.command("prioritize")
@click.option("--spec", help="Only tasks of this spec (and tasks without one).")
@no_commit_option
@click.pass_context
def task_prioritize(ctx, spec, no_commit):
    """Set the priority of pending tasks that have none set by a person; print the counts."""
    from ralph import ops

    counts = ops.task_prioritize(_root(ctx), spec, _commit(no_commit))
    _emit(counts)


@task.command("list")
@click.option("--pending", "status", flag_value="p", help="Only pending tasks.")
@click.option("--done", "status", flag_value="d", help="Only done tasks.")
@json_option
@click.pass_context
def task_list(ctx, status, as_json):
    """List the tasks in the plan, one line each."""
    from ralph.store import read_plan

    plan = read_plan(_root(ctx))
    for record in plan.tasks():
        if status and record.get("s", "p") != status:
            continue
        if as_json:
            _emit(record)
        else:
            flags = " ".join(f"[{f}]" for f in (record.get("priority"), record.get("kill_reason")) if f)
            click.echo(
                f"{record['id']}  {'done' if record.get('s') == 'd' else 'pending'}  {record['name']}"
                + (f"  {flags}" if flags else "")
            )


@task.command("show")
@click.argument("task_id", metavar="ID")
@click.pass_context
def task_show(ctx, task_id):
    """Print one task as JSON."""
    from ralph.store import read_plan

    _emit(read_plan(_root(ctx)).task_line(task_id).record)


# --- issue -----------------------------------------------------------------------------------


@cli.group()
def issue() -> None:
    """Record questions and problems for INVESTIGATE, and resolve them."""


@issue.command("add")
@click.argument("text")
@click.option("--priority", type=click.Choice(["high", "medium", "low"]))
@no_commit_option
@json_option
@click.pass_context
def issue_add(ctx, text, priority, no_commit, as_json):
    """Add an issue: a question or problem to investigate."""
    from ralph import ops

    record = ops.issue_add(_root(ctx), text, priority, _commit(no_commit))
    _emit(record) if as_json else click.echo(f"added {record['id']}: {record['text']}")


@issue.command("resolve")
@click.argument("issue_id", metavar="ID")
@click.option("--note", help="How it was resolved (goes into the commit message).")
@no_commit_option
@click.pass_context
def issue_resolve(ctx, issue_id, note, no_commit):
    """Resolve an issue: its line is removed (git history keeps it)."""
    from ralph import ops

    record = ops.issue_resolve(_root(ctx), issue_id, note, _commit(no_commit))
    click.echo(f"resolved {record['id']}: {record['text']}")


@issue.command("list")
@json_option
@click.pass_context
def issue_list(ctx, as_json):
    """List the open issues, one line each."""
    from ralph.store import read_plan

    for record in read_plan(_root(ctx)).issues():
        _emit(record) if as_json else click.echo(f"{record['id']}  {record['text']}")


# --- query (machine-readable) ----------------------------------------------------------------


@cli.group()
def query() -> None:
    """Read the plan for scripts and agents (JSON or a single word)."""


@query.command("stage")
@click.pass_context
def query_stage(ctx):
    """The stage the plan is in: INVESTIGATE, BUILD, VERIFY, DECOMPOSE or COMPLETE."""
    from ralph.store import read_plan

    click.echo(read_plan(_root(ctx)).stage())


@query.command("iteration")
@click.pass_context
def query_iteration(ctx):
    """The construct loop's current iteration number."""
    from ralph.store import read_plan

    click.echo(read_plan(_root(ctx)).iteration())


@query.command("next")
@click.pass_context
def query_next(ctx):
    """The next task to build, as one JSON object (exit 1 when none is ready)."""
    from ralph.errors import Refused
    from ralph.store import read_plan

    task_record = read_plan(_root(ctx)).next_task()
    if task_record is None:
        raise Refused("no pending task is ready")
    _emit(task_record)


@query.command("tasks")
@click.option("--pending", "status", flag_value="p", help="Only pending tasks.")
@click.option("--done", "status", flag_value="d", help="Only done tasks.")
@click.pass_context
def query_tasks(ctx, status):
    """The tasks, one JSON object per line."""
    from ralph.store import read_plan

    for record in read_plan(_root(ctx)).tasks():
        if not status or record.get("s", "p") == status:
            _emit(record)


@query.command("issues")
@click.pass_context
def query_issues(ctx):
    """The open issues, one JSON object per line."""
    from ralph.store import read_plan

    for record in read_plan(_root(ctx)).issues():
        _emit(record)


def _register_construct_commands() -> None:
    # The construct loop's commands live in their own module; registering them costs nothing
    # until one is invoked.
    from ralph.cli_construct import register

    register(cli)


_register_construct_commands()
