"""`ralph spec new NAME`: a spec to fill in, from a template that says what a good spec holds;
`ralph spec check FILE`: whether a spec is ready to be planned (ralph.usecases.spec_lint)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ralph.cli.common import emit, json_option, root_of, say
from ralph.cli.lazy import lazy_group
from ralph.errors import EXIT_INVALID
from ralph.text import printable

if TYPE_CHECKING:
    from ralph.usecases.spec_lint import SpecReport


@click.group(
    cls=lazy_group({"draft": "ralph.cli.drafts:spec_draft"}),
    short_help="Write a spec: from a template, drafted by an agent; check one.",
)
def spec() -> None:
    """Write specs for `ralph construct`, and check them before they are planned."""


@spec.command("new", short_help="Write specs/NAME.md: a spec template to fill in.")
@click.argument("name")
@json_option
@click.pass_context
def spec_new(ctx: click.Context, name: str, as_json: bool) -> None:
    """Write specs/NAME.md from a template that says what a good spec holds: the goal,
    requirements as a checklist of checkable items, constraints, what is out of scope, and how to
    verify. An existing file is never overwritten; nothing is committed."""
    from ralph.usecases.specs import new_spec

    path = new_spec(root_of(ctx), name)
    if as_json:
        emit({"path": path})
        return
    say(f"wrote {printable(path)}: replace each comment with your text and commit it, then")
    say(f"  ralph construct {printable(path)} --dry-run    # what the first run would do")


@spec.command("check", short_help="Check that FILE is ready to be planned.")
@click.argument("file", type=click.Path(dir_okay=False))
@json_option
@click.pass_context
def spec_check(ctx: click.Context, file: str, as_json: bool) -> None:
    """Check that FILE is ready for `ralph construct`, as construct checks it before planning: no
    placeholder of the template left, at least one requirement (a `- [ ]` item under
    `## Requirements`), and a `verify:` part in each (docs/specs.md). Prints `ok` and exits 0;
    else one line per problem, `FILE:LINE: problem`, on stderr, and exits 2. Reads only."""
    from pathlib import Path

    from ralph.usecases.spec_lint import check_spec_file, problem_line

    start = Path(ctx.find_root().params.get("directory") or ".")
    report = check_spec_file(start / file, file)
    if as_json:
        emit(
            {
                "path": file,
                "ok": report.ok,
                "requirements": report.requirements,
                "problems": [problem.as_dict() for problem in report.problems],
            }
        )
        for problem in report.problems:
            say(f"ralph: {problem_line(file, problem)}", err=True)
    else:
        show_report(file, report)
    if not report.ok:
        ctx.exit(EXIT_INVALID)


def show_report(file: str, report: SpecReport) -> None:
    """A spec check's report as a person reads it: `ok` on stdout, else each problem on stderr."""
    from ralph.usecases.spec_lint import problem_line

    if report.ok:
        say(f"{printable(file)}: ok ({report.requirements} requirements, each with a way to verify it)")
    for problem in report.problems:
        say(f"ralph: {problem_line(file, problem)}", err=True)
