"""`ralph doctor`: report (and with --fix repair) what a killed ralph left behind."""

from __future__ import annotations

import click

from ralph.cli.common import emit, json_option, root_of, say
from ralph.errors import EXIT_REFUSED
from ralph.text import printable


@click.command(short_help="Find and --fix what a killed ralph left behind.")
@click.option("--fix", is_flag=True, help="Repair what it finds (nothing is committed).")
@click.option("--force", is_flag=True, help="With --fix, also delete ralph/* branches with unmerged commits.")
@json_option
@click.pass_context
def doctor(ctx: click.Context, fix: bool, force: bool, as_json: bool) -> None:
    """Find what a killed ralph left behind, and with --fix repair it.

    Reports a stale lock (plan.jsonl.lock, .git/ralph-construct.lock), leftover temporary files
    beside plan.jsonl, a merge driver that .gitattributes names but this clone's git config lacks,
    worktrees left by a killed `ralph construct` (their uncommitted changes are saved as a patch
    under build/ralph-logs/doctor/ before --fix removes them), and ralph/* branches in no worktree
    (--fix deletes a merged one; one with unmerged commits is kept unless --force). One line per
    finding, with what --fix does. While `ralph construct` runs, --fix refuses. Exit 0 when
    healthy (or all repaired), 1 when problems remain."""
    from ralph.usecases.doctor import doctor as diagnose

    if force and not fix:
        raise click.UsageError("--force goes with --fix")
    found = diagnose(root_of(ctx), fix=fix, force=force)
    if as_json:
        emit(found.as_json())
    else:
        if found.running:
            running = printable(found.running)
            say(f"ralph construct is running ({running}): its worktrees and branches are its own")
        for finding in found.findings:
            say(printable(finding.line()))
        if not found.findings:
            say("ok: nothing to repair")
    if not found.healthy:
        ctx.exit(EXIT_REFUSED)
