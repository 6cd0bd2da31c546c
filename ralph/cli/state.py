"""The state commands: init, merge-driver, check, schema and status (the task, issue and query
groups are in cli/tasks.py, cli/issues.py and cli/queries.py; the questions a person answers in
cli/questions.py). Each parses its arguments, calls ralph.usecases, and prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ralph.cli.common import (
    describe_cost,
    emit,
    json_option,
    no_commit_option,
    root_of,
    say,
)
from ralph.durations import spoken
from ralph.errors import EXIT_INVALID, EXIT_REFUSED
from ralph.plan.records import Stage
from ralph.text import plural, printable

if TYPE_CHECKING:
    from ralph.usecases.claim_listing import RemoteClaim
    from ralph.usecases.reads import Spending, StageSpending, StatusSummary, TaskSpending

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
    from ralph.usecases.initialize import init as initialize

    root = root_of(ctx)
    created = initialize(root, commit=not no_commit)
    if as_json:
        emit({"root": str(root), "created": created})
    elif created:
        say(f"initialized ralph in {printable(str(root))}: " + ", ".join(created))
        # The on-ramp: a repository set up just now, with no spec yet, is told what to do first.
        if "plan.jsonl" in created and not any((root / "specs").glob("*.md")):
            say("next: `ralph spec new NAME` writes specs/NAME.md, a spec to fill in")
    else:
        say(f"ralph is already initialized in {printable(str(root))}")


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
    from ralph.usecases.mergedriver import merge_files

    merged = merge_files(base, ours, theirs, path)
    for conflict in merged.conflicts:
        say(printable(str(conflict)), err=True)
    if merged.conflicts:
        ctx.exit(EXIT_REFUSED)


def _warn_if_driver_unregistered(root: Path) -> None:
    from ralph.usecases.mergedriver import unregistered

    warning = unregistered(root)
    if warning:
        say(f"ralph: {warning}", err=True)


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
    from ralph.usecases import reads

    root = root_of(ctx)
    result = reads.check(root, staged)
    problems = result.problems
    if as_json:
        emit({"ok": not problems, "records": result.records, "problems": result.problem_objects()})
    elif problems:
        for problem in problems:
            say(printable(str(problem)), err=True)
    else:
        say(f"plan.jsonl{' (staged)' if staged else ''}: ok ({result.records} records)")
    _warn_if_driver_unregistered(root)
    if problems:
        ctx.exit(EXIT_INVALID)


@click.command(short_help="Print the JSON Schema of a plan.jsonl line.")
@json_option
def schema(as_json: bool) -> None:
    """Print the JSON Schema of a plan.jsonl line (--json: on one line)."""
    from ralph.plan.models import json_schema

    emit(json_schema()) if as_json else say(json.dumps(json_schema(), indent=2))


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
    from ralph.usecases import reads

    root = root_of(ctx)
    if remote is not None:
        _remote_status(root, remote, as_json)
        return
    summary = reads.status(root)
    if as_json:
        emit(summary.to_json())
    else:
        _print_status(summary)
    _warn_if_driver_unregistered(root)


def _remote_status(root: Path, name: str, as_json: bool) -> None:
    from ralph.usecases import claim_listing

    found = claim_listing.remote_status(root, name)
    if as_json:
        emit(found.to_json())
        return
    where = f"{found.remote}/{found.branch}"
    if found.head is None:
        say(f"{printable(where)}: no such branch yet (nothing pushed)")
        return
    live = [claim for claim in found.claims if not claim.stale]
    stale = [claim for claim in found.claims if claim.stale]
    ttl = spoken(found.claim_ttl_s)
    say(f"{printable(where)}: {plural(len(live), 'live claim')}, {len(stale)} stale (claim_ttl {ttl})")
    if found.turn is not None:
        turn = found.turn
        holder = turn.runner or f"a commit ralph did not make ({turn.commit[:12]})"
        holder += f" on {turn.host}" if turn.host else ""
        late = ": stale, the next runner that loses a race takes it over" if turn.stale else ""
        say(f"turn to publish: {printable(holder)}, committed {spoken(turn.age_s)} ago{late}")
    for title, rows in (
        ("live", live),
        (f"stale (older than {ttl}: another runner may take them over)", stale),
    ):
        if rows:
            say(f"{title}:")
        for claim in rows:
            runner = f"{claim.runner} on {claim.host}" if claim.host else claim.runner  # namesakes differ
            who = f"{claim.task} {printable(claim.name[:60])}: {printable(runner)}"
            say(f"  {who}{_held(claim)}, {_age(claim, found.at)}")


def _held(claim: RemoteClaim) -> str:
    """What a held claim waits for: the builds its own failed beside, and code published."""
    if claim.waits_for is None:
        return ""
    if not claim.waits_for:
        return " (held: waits for code to be published)"
    return f" (held: waits for {', '.join(printable(task) for task in claim.waits_for)} to be published)"


def _age(claim: RemoteClaim, at: str) -> str:
    """A claim's age by the rule, and the two ages it is the lesser of: since its commit on the
    remote's history (its claimed_at when no commit is known) and since this clone first saw it."""
    from datetime import datetime

    def since(stamp: str) -> str:
        return spoken((datetime.fromisoformat(at) - datetime.fromisoformat(stamp)).total_seconds())

    if claim.age_s is None:
        return f"age unknown (claimed_at {printable(str(claim.since))})"
    made = (
        f"committed {since(claim.committed_at)} ago"
        if claim.committed_at
        else f"not in the remote's history, claimed_at {printable(str(claim.since))}"
    )
    return f"{spoken(claim.age_s)} old ({made}, seen here for {since(claim.seen_at)})"


def _print_status(summary: StatusSummary) -> None:
    from ralph.usecases.runs import describe

    say(printable(describe(summary.run)))
    spec = f" ({printable(summary.spec)})" if summary.spec else ""
    stage: str = summary.stage
    if stage == Stage.PLAN and summary.run.active:
        stage = "PLAN: planning now"
    elif stage == Stage.PLAN:  # not running, nothing planned
        stage = "PLAN: no spec planned yet (`ralph construct SPEC` plans one first)"
    say(f"stage {stage}, iteration {summary.iteration}{spec}")
    say(
        f"tasks: {summary.pending} pending, {summary.done} done, {summary.accepted} accepted"
        + (f", {summary.killed} to decompose" if summary.killed else "")
        + (f", {summary.blocked} blocked" if summary.blocked else "")
    )
    kept = f", {summary.kept_open} kept open" if summary.kept_open else ""
    say(f"issues: {summary.issues} open{kept}")
    if summary.waiting:
        say("waiting for a person:")
        for item in summary.waiting:
            why = item.why.splitlines()[0][:200] if item.why else "(no reason given)"
            say(f"  {item.id}: {printable(why)}")
    if summary.drafts:
        say("drafts (unfinished work, each on a branch of its own):")
        for draft in summary.drafts:
            branch = printable(draft.branch)
            say(f"  {draft.task}: {branch} (git diff HEAD...{branch})")
    if summary.questions:
        say(f"questions: {summary.questions} open (`ralph questions`)")
    _print_spent(summary.spent)
    nxt = summary.next
    say(f"next: {nxt.id} {printable(nxt.name)}" if nxt else "next: none")


def _print_spent(spent: Spending) -> None:
    if not spent.by_stage and not spent.by_task:
        return
    if spent.by_stage:
        say(
            f"spent so far: {plural(spent.runs, 'agent run')}, {spent.tokens:,} tokens,"
            f" cost {describe_cost(spent.cost_usd, spent.unknown_cost_runs)}"
        )
        say("  by stage: " + "; ".join(_usage(name, row) for name, row in spent.by_stage.items()))
    if spent.by_task:
        label = "  by open task (builds): " if spent.by_stage else "spent building open tasks: "
        say(label + "; ".join(_usage(task_id, row) for task_id, row in spent.by_task.items()))


def _usage(name: str, row: StageSpending | TaskSpending) -> str:
    return f"{name} {row.tokens:,} tokens, cost {describe_cost(row.cost_usd, row.unknown_cost_runs)}"
