"""The state commands: init, merge-driver, check, schema, status, and the task, issue and query
groups (the questions a person answers are in cli/questions.py). Each parses its arguments, calls
ralph.ops, and prints."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import click

from ralph.cli.common import (
    commit_choice,
    current_task,
    emit,
    issue_ids,
    json_option,
    no_commit_option,
    root_of,
    task_ids,
    task_or_current,
)
from ralph.errors import EXIT_INVALID, EXIT_REFUSED, InvalidInput
from ralph.plan.records import Status, status_of
from ralph.text import printable

# --- init, check, schema, status -----------------------------------------------------------


@click.command(short_help="Set up plan.jsonl, specs/, logs and the merge driver.")
@no_commit_option
@json_option
@click.pass_context
def init(ctx: click.Context, no_commit: bool, as_json: bool) -> None:
    """Set up ralph: plan.jsonl, specs/, build/ralph-logs/, the merge driver.

    Creates plan.jsonl, specs/ and build/ralph-logs/ (ignored by git), and registers git's merge
    driver for plan.jsonl (a .gitattributes line, and merge.ralph.* in the repository's git config).
    Safe to run again: it adds only what is missing. git does not clone its config: run it once in
    a fresh clone."""
    from ralph.ops.initialize import init as initialize

    root = root_of(ctx)
    created = initialize(root, commit=not no_commit)
    if as_json:
        emit({"root": str(root), "created": created})
    elif created:
        click.echo(f"initialized ralph in {printable(str(root))}: " + ", ".join(created))
    else:
        click.echo(f"ralph is already initialized in {printable(str(root))}")


@click.command("merge-driver", short_help="git's merge driver for plan.jsonl (by record, not line).")
@click.argument("base", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("ours", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("theirs", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("path", required=False, default="plan.jsonl")
@click.pass_context
def merge_driver(ctx: click.Context, base: Path, ours: Path, theirs: Path, path: str) -> None:
    """Merge plan.jsonl by record: git's merge driver (`ralph init` registers it).

    git passes %O %A %B %P: BASE, OURS, THEIRS and the PATH merged. The result goes to OURS. Exit 0
    when clean; 1 on a conflict, each printed as PATH:LINE and left between conflict markers in OURS
    for `ralph check` to name; 2 when a version is not a plan ralph can read (OURS is left as it
    was)."""
    from ralph.ops.mergedriver import merge_files

    merged = merge_files(base, ours, theirs, path)
    for conflict in merged.conflicts:
        click.echo(printable(str(conflict)), err=True)
    if merged.conflicts:
        ctx.exit(EXIT_REFUSED)


def _warn_if_driver_unregistered(root: Path) -> None:
    from ralph.ops.mergedriver import unregistered

    warning = unregistered(root)
    if warning:
        click.echo(f"ralph: {warning}", err=True)


@click.command()
@click.option(
    "--staged",
    is_flag=True,
    help="Check the plan.jsonl git's index holds (what `git commit` would record), not the file on disk.",
)
@json_option
@click.pass_context
def check(ctx: click.Context, staged: bool, as_json: bool) -> None:
    """List every problem in plan.jsonl (exit 2 if there is any)."""
    from ralph.ops import reads

    root = root_of(ctx)
    result = reads.check(root, staged)
    problems = result.problems
    if as_json:
        emit({"ok": not problems, "records": result.records, "problems": result.problem_objects()})
    elif problems:
        for problem in problems:
            click.echo(printable(str(problem)), err=True)
    else:
        click.echo(f"plan.jsonl{' (staged)' if staged else ''}: ok ({result.records} records)")
    _warn_if_driver_unregistered(root)
    if problems:
        ctx.exit(EXIT_INVALID)


@click.command(short_help="Print the JSON Schema of a plan.jsonl line.")
@json_option
def schema(as_json: bool) -> None:
    """Print the JSON Schema of a plan.jsonl line (--json: on one line)."""
    from ralph.plan.models import json_schema

    emit(json_schema()) if as_json else click.echo(json.dumps(json_schema(), indent=2))


@click.command()
@json_option
@click.option(
    "--remote",
    metavar="[NAME]",
    is_flag=False,
    flag_value="origin",
    default=None,
    help="Fetch the remote runners share (default origin) and list its live and stale claims.",
)
@click.pass_context
def status(ctx: click.Context, as_json: bool, remote: str | None) -> None:
    """A short summary: the run, stage, task counts, the next task.

    The run line says whether `ralph construct` is running here (pid, since when, its agents)
    or how the last run ended. With --remote: the claims of the runners sharing that remote
    (runner, task, since when), live or stale."""
    from ralph.ops import reads

    root = root_of(ctx)
    if remote is not None:
        _remote_status(root, remote, as_json)
        return
    summary = reads.status(root)
    if as_json:
        emit(summary)
    else:
        _print_status(summary)
    _warn_if_driver_unregistered(root)


def _remote_status(root: Path, name: str, as_json: bool) -> None:
    from ralph.ops import claims
    from ralph.store.git import Repo
    from ralph.store.remote import Remote

    found = claims.remote_claims(root, Remote(Repo(root), name, retries=2))
    if as_json:
        emit(found)
        return
    where = f"{found['remote']}/{found['branch']}"
    if found["head"] is None:
        click.echo(f"{printable(where)}: no such branch yet (nothing pushed)")
        return
    live = [claim for claim in found["claims"] if not claim["stale"]]
    stale = [claim for claim in found["claims"] if claim["stale"]]
    ttl = _minutes(found["claim_ttl_s"])
    click.echo(f"{printable(where)}: {len(live)} live claim(s), {len(stale)} stale (claim_ttl {ttl})")
    for title, rows in (
        ("live", live),
        (f"stale (older than {ttl}: another runner may take them over)", stale),
    ):
        if rows:
            click.echo(f"{title}:")
        for claim in rows:
            age = "age unknown" if claim["age_s"] is None else f"{_minutes(claim['age_s'])} ago"
            click.echo(
                f"  {claim['task']} {printable(claim['name'][:60])}: {printable(claim['runner'])}"
                f" since {printable(str(claim['since']))} ({age})"
            )


def _minutes(seconds: float) -> str:
    """A claim's age or the TTL, in the largest whole unit that reads well."""
    if seconds < 120:
        return f"{max(0, int(seconds))}s"
    if seconds < 2 * 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} days"


def _print_status(summary: dict) -> None:
    from ralph.ops.runs import describe

    click.echo(printable(describe(summary["run"])))
    spec = f" ({printable(summary['spec'])})" if summary["spec"] else ""
    click.echo(f"stage {summary['stage']}, iteration {summary['iteration']}{spec}")
    click.echo(
        f"tasks: {summary['pending']} pending, {summary['done']} done, {summary['accepted']} accepted"
        + (f", {summary['killed']} to decompose" if summary["killed"] else "")
        + (f", {summary['blocked']} blocked" if summary["blocked"] else "")
    )
    kept = f", {summary['kept_open']} kept open" if summary["kept_open"] else ""
    click.echo(f"issues: {summary['issues']} open{kept}")
    if summary["waiting"]:
        click.echo("waiting for a person:")
        for item in summary["waiting"]:
            why = item["why"].splitlines()[0][:200] if item["why"] else "(no reason given)"
            click.echo(f"  {item['id']}: {printable(why)}")
    if summary["questions"]:
        click.echo(f"questions: {summary['questions']} open (`ralph questions`)")
    _print_spent(summary["spent"])
    nxt = summary["next"]
    click.echo(f"next: {nxt['id']} {printable(nxt['name'])}" if nxt else "next: none")


def _print_spent(spent: dict) -> None:
    if not spent["by_stage"] and not spent["by_task"]:
        return
    if spent["by_stage"]:
        click.echo(
            f"spent so far: {spent['runs']} agent run(s), {spent['tokens']:,} tokens,"
            f" {_cost(spent['cost_usd'], spent['unknown_cost_runs'])}"
        )
        click.echo("  by stage: " + "; ".join(_usage(name, row) for name, row in spent["by_stage"].items()))
    if spent["by_task"]:
        label = "  by open task (builds): " if spent["by_stage"] else "spent building open tasks: "
        click.echo(label + "; ".join(_usage(task_id, row) for task_id, row in spent["by_task"].items()))


def _usage(name: str, row: dict) -> str:
    return f"{name} {row['tokens']:,} tokens, {_cost(row['cost_usd'], row['unknown_cost_runs'])}"


def _cost(cost_usd: float | None, unknown_runs: int) -> str:
    """A cost that is not known is said to be unknown, never shown as $0."""
    if cost_usd is None:
        return "cost unknown"
    return f"${cost_usd:.2f}" + (f" + {unknown_runs} run(s) of unknown cost" if unknown_runs else "")


TASK_ID = re.compile(r"t-[0-9a-z][0-9a-z_-]{0,39}")


def status_filter(pending: bool, done: bool, blocked: bool) -> Status | None:
    chosen = [status for status, wanted in zip(Status, (pending, done, blocked), strict=True) if wanted]
    if len(chosen) > 1:
        raise InvalidInput("choose one of --pending, --done, --blocked")
    return chosen[0] if chosen else None


# --- task ------------------------------------------------------------------------------------


@click.group()
def task() -> None:
    """Add, finish, accept, reject and order tasks."""


# What an option looks like: no JSON value starts with a dash and a letter (-5 is a number).
_OPTION_LIKE = re.compile(r"--?[A-Za-z][\w-]*(=.*)?", re.DOTALL)


def _parse_task_json(ctx: click.Context, values: tuple[str, ...]) -> list:
    items: list = []
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
    from ralph.ops import tasks

    if from_stdin:
        json_tasks = (*json_tasks, sys.stdin.read())
    items = _parse_task_json(ctx, json_tasks)
    if name is not None and json_tasks:
        raise InvalidInput("task add: give the task as JSON or with --name, not both")
    if name is not None:
        fields = {"name": name, "accept": accept, "priority": priority, "notes": notes, "spec": spec}
        fields["deps"] = [d.strip() for d in deps.split(",") if d.strip()] if deps else None
        items.append({key: value for key, value in fields.items() if value is not None})
    elif any(v is not None for v in (accept, deps, priority, notes, spec)):
        raise InvalidInput("task add: --accept/--deps/--priority/--notes/--spec go with --name")
    if not items:
        given = "the JSON holds no task" if json_tasks else "give a task as JSON or with --name"
        raise InvalidInput(f"task add: {given}")
    added = tasks.add(root_of(ctx), items, commit_choice(no_commit), os.environ.get("RALPH_ISSUE_ID") or None)
    for record in added:
        emit(record) if as_json else click.echo(f"added {record['id']}: {printable(record['name'])}")


@task.command("done")
@click.argument("task_id", metavar="[ID]", required=False, shell_complete=task_ids)
@no_commit_option
@json_option
@click.pass_context
def task_done(ctx, task_id, no_commit, as_json):
    """Mark a task done (default: $RALPH_TASK_ID, else the task `ralph query next` shows)."""
    from ralph.ops import tasks

    record = tasks.done(root_of(ctx), task_or_current(task_id), commit_choice(no_commit))
    emit(record) if as_json else click.echo(f"done {record['id']}: {printable(record['name'])}")


@task.command("accept")
@click.argument("task_id", metavar="[ID]", required=False, shell_complete=task_ids)
@no_commit_option
@json_option
@click.pass_context
def task_accept(ctx, task_id, no_commit, as_json):
    """Accept a done task (default: $RALPH_TASK_ID, else every done task); its line becomes an
    accept tombstone."""
    from ralph.ops import tasks

    for record in tasks.accept(root_of(ctx), task_or_current(task_id), commit_choice(no_commit)):
        emit({"id": record["id"], "accepted": True}) if as_json else click.echo(
            f"accepted {record['id']}: {printable(record['name'])}"
        )


@task.command("reject")
@click.argument("args", metavar="[ID] REASON", nargs=-1, required=True, shell_complete=task_ids)
@click.option("--kill-reason", type=click.Choice(["timeout", "context_limit", "doom_loop"]), hidden=True)
@click.option("--kill-log", hidden=True)
@no_commit_option
@json_option
@click.pass_context
def task_reject(ctx, args, kill_reason, kill_log, no_commit, as_json):
    """Send a done task back to pending with the reason (default ID: $RALPH_TASK_ID, else the
    only done task)."""
    from ralph.ops import tasks

    if len(args) > 2:
        raise InvalidInput("task reject takes [ID] REASON: quote the reason")
    task_id, reason = (args[0], args[1]) if len(args) == 2 else (current_task(), args[0])
    if len(args) == 1 and TASK_ID.fullmatch(reason):
        raise InvalidInput(
            f"task reject {printable(reason)}: give the reason too (ralph task reject ID REASON)"
        )
    task_id = task_or_current(task_id)
    record = tasks.reject(root_of(ctx), task_id, reason, kill_reason, kill_log, commit_choice(no_commit))
    emit(record) if as_json else click.echo(
        f"rejected {record['id']}: {printable(record['name'])} (pending again)"
    )


@task.command("delete")
@click.argument("task_id", metavar="ID", shell_complete=task_ids)
@click.option("--force", is_flag=True, help="Also drop the dependencies other tasks have on it.")
@no_commit_option
@json_option
@click.pass_context
def task_delete(ctx, task_id, force, no_commit, as_json):
    """Remove a task; tasks that need it then need its subtasks (tasks with it as parent)."""
    from ralph.ops import tasks

    record, rewired = tasks.delete(root_of(ctx), task_id, force, commit_choice(no_commit))
    if as_json:
        return emit({"id": record["id"], "deleted": True, "updated": list(rewired)})
    suffix = f" ({', '.join(rewired)} updated)" if rewired else ""
    click.echo(f"deleted {record['id']}: {printable(record['name'])}{suffix}")


@task.command("prioritize")
@click.option("--spec", help="Only tasks of this spec (and tasks without one).")
@no_commit_option
@json_option
@click.pass_context
def task_prioritize(ctx, spec, no_commit, as_json):
    """Set the priority of pending tasks that have none set by a person; print the counts (JSON,
    with or without --json)."""
    from ralph.ops import tasks

    counts = tasks.prioritize(root_of(ctx), spec, commit_choice(no_commit))
    emit(counts)


@task.command("list")
@click.option("--pending", is_flag=True, help="Only pending tasks.")
@click.option("--done", is_flag=True, help="Only done tasks.")
@click.option("--blocked", is_flag=True, help="Only blocked tasks.")
@json_option
@click.pass_context
def task_list(ctx, pending, done, blocked, as_json):
    """List the tasks in the plan, one line each."""
    from ralph.ops import reads

    for record in reads.tasks(root_of(ctx), status_filter(pending, done, blocked)):
        if as_json:
            emit(record)
        else:
            flags = " ".join(f"[{f}]" for f in (record.get("priority"), record.get("kill_reason")) if f)
            line = f"{record['id']}  {status_of(record).name.lower()}  {printable(record['name'])}"
            click.echo(line + (f"  {flags}" if flags else ""))


@task.command("show")
@click.argument("task_id", metavar="ID", shell_complete=task_ids)
@json_option
@click.pass_context
def task_show(ctx, task_id, as_json):
    """Print one task as JSON (with or without --json)."""
    from ralph.ops import reads

    emit(reads.task(root_of(ctx), task_id))


# --- issue -----------------------------------------------------------------------------------


@click.group()
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
    from ralph.ops import issues

    record = issues.add(root_of(ctx), text, priority, commit_choice(no_commit))
    emit(record) if as_json else click.echo(f"added {record['id']}: {printable(record['text'])}")


@issue.command("resolve")
@click.argument("issue_id", metavar="ID", shell_complete=issue_ids)
@click.option("--note", help="How it was resolved (goes into the commit message).")
@no_commit_option
@json_option
@click.pass_context
def issue_resolve(ctx, issue_id, note, no_commit, as_json):
    """Resolve an issue: its line is removed (git history keeps it)."""
    from ralph.ops import issues

    record = issues.resolve(root_of(ctx), issue_id, note, commit_choice(no_commit))
    if as_json:
        return emit({**record, "resolved": True})
    click.echo(f"resolved {record['id']}: {printable(record['text'])}")


@issue.command("keep")
@click.argument("issue_id", metavar="ID", shell_complete=issue_ids)
@click.argument("reason")
@no_commit_option
@json_option
@click.pass_context
def issue_keep(ctx, issue_id, reason, no_commit, as_json):
    """Leave an issue open on purpose (a person must decide): INVESTIGATE skips it from now on."""
    from ralph.ops import issues

    record = issues.keep_open(root_of(ctx), issue_id, reason, commit_choice(no_commit))
    emit(record) if as_json else click.echo(f"kept open {record['id']}: {printable(record['text'])}")


@issue.command("list")
@json_option
@click.pass_context
def issue_list(ctx, as_json):
    """List the open issues, one line each."""
    from ralph.ops import reads

    for record in reads.issues(root_of(ctx)):
        emit(record) if as_json else click.echo(f"{record['id']}  {printable(record['text'])}")


# --- query (machine-readable) ----------------------------------------------------------------


@click.group()
def query() -> None:
    """Read the plan for scripts and agents (JSON or a single word)."""


@query.command("stage")
@json_option
@click.pass_context
def query_stage(ctx, as_json):
    """The stage the plan is in: INVESTIGATE, BUILD, VERIFY, DECOMPOSE or COMPLETE (--json:
    {"stage": ...})."""
    from ralph.ops import reads

    stage = reads.stage(root_of(ctx))
    emit({"stage": stage}) if as_json else click.echo(stage)


@query.command("iteration", short_help="The construct loop's current iteration number.")
@json_option
@click.pass_context
def query_iteration(ctx, as_json):
    """The construct loop's current iteration number (--json: {"iteration": N})."""
    from ralph.ops import reads

    iteration = reads.iteration(root_of(ctx))
    emit({"iteration": iteration}) if as_json else click.echo(iteration)


# The query commands below print JSON either way; --json is accepted so that every command that
# prints data takes it, as the README promises.


@query.command("next")
@json_option
@click.pass_context
def query_next(ctx, as_json):
    """The next task to build, as one JSON object (exit 1 when none is ready)."""
    from ralph.ops import reads

    emit(reads.next_task(root_of(ctx)))


@query.command("tasks")
@click.option("--pending", is_flag=True, help="Only pending tasks.")
@click.option("--done", is_flag=True, help="Only done tasks.")
@click.option("--blocked", is_flag=True, help="Only blocked tasks.")
@json_option
@click.pass_context
def query_tasks(ctx, pending, done, blocked, as_json):
    """The tasks, one JSON object per line."""
    from ralph.ops import reads

    for record in reads.tasks(root_of(ctx), status_filter(pending, done, blocked)):
        emit(record)


@query.command("issues")
@json_option
@click.pass_context
def query_issues(ctx, as_json):
    """The open issues, one JSON object per line."""
    from ralph.ops import reads

    for record in reads.issues(root_of(ctx)):
        emit(record)
