"""The construct loop's commands: `ralph construct`, `ralph plan`, `ralph watch`, `ralph pr` and
`ralph agents`. The main group loads this module only when one of them is named (or listed in
--help), so the state commands never load the loop."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ralph.agents import names_in_words
from ralph.cli import run_text
from ralph.cli.common import agent_names, emit, root_of, say
from ralph.durations import parse_duration
from ralph.errors import InvalidInput, RalphError
from ralph.text import printable
from ralph.usecases.settings import DEFAULTS

if TYPE_CHECKING:
    from ralph.plan.plan import Plan
    from ralph.usecases.settings import Settings

    # click's ParamType is generic over the value it converts to from click 8.4 on; ralph allows
    # click 8.1, where subscripting it fails at run time, so only the type checker sees it.
    _Seconds = click.ParamType[float]
    _Argv = click.ParamType[tuple[str, ...]]
    _StageModels = click.ParamType[tuple[str, tuple[str, ...]]]
else:
    _Seconds = _Argv = _StageModels = click.ParamType

AGENT_HELP = f"{names_in_words()} (see `ralph agents`)."  # from the adapter table, never by hand

# A click command function, or a command, that options decorate.
_Command = TypeVar("_Command", bound=Callable[..., Any])


class Duration(_Seconds):
    """A duration in milliseconds ('300000') or with a unit ('90s', '5m', '1500ms'); as seconds."""

    name = "duration"

    def convert(self, value: str | float, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            return parse_duration(value)
        except InvalidInput as exc:
            self.fail(str(exc), param, ctx)


class Shlex(_Argv):
    """A command line split like a shell would (never run by one): an argv tuple."""

    name = "command"

    def convert(
        self, value: str | tuple[str, ...], param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, ...]:
        if isinstance(value, tuple):
            return value
        import shlex

        try:
            return tuple(shlex.split(value))
        except ValueError as exc:  # unbalanced quotes
            self.fail(f"cannot split {value!r}: {exc}", param, ctx)


class StageModel(_StageModels):
    """STAGE=MODEL (--stage-model VERIFY=claude-opus-4-5), or STAGE=M1,M2 (an escalation, cheap
    first: BUILD=claude-haiku-4-5,claude-sonnet-4-5): a (stage, models) pair."""

    name = "stage=model"

    def convert(
        self,
        value: str | tuple[str, tuple[str, ...]],
        param: click.Parameter | None,
        ctx: click.Context | None,
    ) -> tuple[str, tuple[str, ...]]:
        if isinstance(value, tuple):
            return value
        from ralph.usecases.config_values import MODEL_STAGES

        stage, _, given = value.partition("=")
        stage = stage.strip().upper()
        models = tuple(model.strip() for model in given.split(","))
        if stage not in MODEL_STAGES or not all(models):
            self.fail(
                f"{value!r} is not STAGE=MODEL or STAGE=MODEL,MODEL,... with STAGE one of"
                f" {', '.join(MODEL_STAGES)}",
                param,
                ctx,
            )
        return stage, models


def _loop_options(command: _Command) -> _Command:
    defaults = DEFAULTS
    options = [
        click.option(
            "--agent",
            help=AGENT_HELP,
            shell_complete=agent_names,
        ),
        click.option(
            "--agent-cmd",
            type=Shlex(),
            help="The program and its arguments (split like a shell, never run by one);"
            " for a named CLI, the path of its binary.",
        ),
        click.option("--agent-args", type=Shlex(), help="Extra arguments passed through to the agent CLI."),
        click.option("--model", help="Model name passed to the agent CLI (each stage's default)."),
        click.option(
            "--stage-model",
            "stage_models",
            type=StageModel(),
            multiple=True,
            help="A stage's model, over --model: STAGE=MODEL, e.g. VERIFY=claude-opus-4-5; or an"
            " escalation, cheap first, each build of a task after a failed one taking the next:"
            " BUILD=claude-haiku-4-5,claude-sonnet-4-5. Repeatable.",
        ),
        click.option(
            "--timeout",
            "timeout_s",
            type=Duration(),
            help=f"Limit for one agent run: milliseconds, or with a unit (90s, 5m)."
            f" [default: {defaults.timeout_s:g}s]",
        ),
        click.option(
            "--spec-check/--no-spec-check",
            default=None,
            help="Refuse a spec that still holds the template's placeholders, has no requirement,"
            " or has one with no way to verify it (`ralph spec check`); --no-spec-check plans it"
            " as it is. [default: check]",
        ),
        click.option(
            "--allow-dirty",
            is_flag=True,
            default=None,
            help="Start even with uncommitted changes (they are never committed).",
        ),
        click.option(
            "--sandbox",
            type=click.Choice(["off", "auto", "required"]),
            help="Fence each agent and gate run with bubblewrap: only its work tree, /tmp and its CLI's"
            " state writable, secrets hidden. auto: where the system has it; required: refuse"
            " to run without. [default: auto]",
        ),
        click.option("--json", "as_json", is_flag=True, help="Print the final report as JSON."),
    ]
    for option in reversed(options):
        command = option(command)
    return click.argument("spec", type=click.Path(dir_okay=False), required=False)(command)


def _budget_options(command: _Command) -> _Command:
    defaults = DEFAULTS
    options = [
        click.option(
            "--max-iterations",
            type=click.IntRange(min=1),
            help=f"Iterations to run at most. [default: {defaults.max_iterations}]",
        ),
        click.option(
            "--max-minutes",
            type=click.FloatRange(min=0, min_open=True),
            help="Wall-clock budget in minutes. [default: none]",
        ),
        click.option(
            "--max-attempts",
            type=click.IntRange(min=1),
            help=f"Builds per task before it is decomposed. [default: {defaults.max_attempts}]",
        ),
        click.option(
            "--parallel",
            type=click.IntRange(min=1),
            help=f"Builds and VERIFY runs at once (builds in worktrees). [default: {defaults.parallel}]",
        ),
        click.option(
            "--max-cost",
            "max_cost_usd",
            type=click.FloatRange(min=0, min_open=True),
            help="Money budget in USD: no run starts that would likely pass it, and a running agent"
            " whose streamed tokens pass it is stopped, its work set aside. [default: none]",
        ),
        click.option(
            "--max-tokens",
            type=click.IntRange(min=1),
            help="Token budget of all agent runs together, held like --max-cost. [default: none]",
        ),
        click.option(
            "--gate",
            type=Shlex(),
            help='Quality gate command run after each build ("" for none).'
            f" [default: {' '.join(defaults.gate)}]",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.command(short_help="Run the agent on SPEC, stage by stage, until it is built.")
@_loop_options
@_budget_options
@click.option(
    "--review/--no-review",
    default=None,
    help="Before COMPLETE, review the whole change since the run began, one agent per"
    " aspect (config review: the aspects; `.ralph/review/NAME.md` adds one), and build what"
    " they find. [default: review]",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print what the next iteration would run (agent and gate argv, prompt sizes, budget);"
    " run, write and commit nothing.",
)
@click.option(
    "--remote",
    metavar="NAME",
    help="Share the work with runners on other machines through this git remote: claim each task"
    " by a pushed plan commit, push each build (see docs/many-machines.md).",
)
@click.option("--runner", metavar="NAME", help="This runner's name in its claims. [default: host-pid]")
@click.option(
    "--claim-ttl",
    "claim_ttl_s",
    type=Duration(),
    help="Age after which another runner's claim may be taken over. [default: 30m]",
)
@click.option(
    "--pr",
    is_flag=True,
    help="At the end, push the branch and open a pull request with the report (gh, or glab for a"
    " GitLab remote; a draft unless complete). See `ralph pr`.",
)
@click.pass_context
# ctx positional-only (/): click passes it so, and beside **flags a named ctx does not type-check.
def construct(ctx: click.Context, /, spec: str | None, dry_run: bool, pr: bool, **flags: Any) -> None:
    """Run INVESTIGATE -> BUILD -> VERIFY iterations until SPEC is implemented (default: the spec
    the loop last worked on).

    Exit codes: 0 complete, 3 iteration budget spent, 4 time budget spent, 5 stuck (no progress
    possible), 6 agent unavailable, 7 the agent could not log in, 8 a rate or usage limit lifts
    later than max_wait_ms allows, 9 waiting for answers to questions (`ralph questions`), 10 money
    budget spent, 11 the --remote is unreachable or refused a push, 12 the agent itself fails (the
    same error on two items or twice before doing anything, or max_agent_failures failures in a
    row), 13 token budget spent, 14 the disk is full (the build under way is undone by the next
    run or `ralph doctor --fix`), 130 interrupted by Ctrl-C, 143 by SIGTERM, 129 by SIGHUP (run
    again to resume). Rate and usage limits, network errors, overloaded servers and crash signals
    are waited out, which is no attempt; an error an agent reports on one task is that task's.
    """
    _run(ctx, spec, flags, plan_only=False, dry_run=dry_run, pr=pr)


@click.command("plan", short_help="Run one PLAN stage: the agent turns SPEC into tasks.")
@_loop_options
@click.pass_context
def plan_command(ctx: click.Context, /, spec: str | None, **flags: Any) -> None:
    """Run one PLAN stage: the agent turns SPEC into prioritized tasks."""
    _run(ctx, spec, flags, plan_only=True)


@click.command("review", short_help="Review the branch's change, one agent per aspect.")
@click.option(
    "--base",
    "review_from",
    metavar="REF",
    help="Review the change since HEAD's merge base with REF. [default: the default branch: the one"
    " origin/HEAD names, else main or master]",
)
@click.option(
    "--fix", is_flag=True, help="Then build and verify what the review found, and review once more."
)
@_loop_options
@_budget_options
@click.pass_context
def review_command(
    ctx: click.Context, /, spec: str | None, review_from: str | None, fix: bool, **flags: Any
) -> None:
    """Review the current branch's change however it was made: one fresh agent per aspect (config
    review; `.ralph/review/NAME.md` changes or adds one) reads `git diff BASE...HEAD` against SPEC
    (default: the spec the loop last worked on) and records its findings as tasks and issues.
    With --fix, the loop then builds and verifies them, and reviews once more for critical
    findings only. Exit codes as `ralph construct`'s."""
    flags["review"] = True  # with the aspects the config names, if it names some
    _run(ctx, spec, flags, plan_only=False, review_only=(review_from, fix))


@click.command("watch")
@click.option("--once", is_flag=True, help="Print one snapshot and exit (for scripts and tests).")
@click.pass_context
def watch(ctx: click.Context, once: bool) -> None:
    """Follow the running construct from another terminal.

    Shows what its console shows, read from the journal and the agents' transcripts: the clock,
    each running agent (stage, task, name, time, log), the last gate result, tokens and cost, and
    the agents' last actions. Exits when the run ends. Exit codes: 0 when the run was followed to
    its end (or with --once, after the snapshot), 1 at once when no run is active."""
    import sys

    from ralph.loop.observe.watch import watch as follow

    try:
        code = follow(root_of(ctx), sys.stdout, once=once, err=sys.stderr, keyboard=sys.stdin)
    except KeyboardInterrupt:
        code = 130
    ctx.exit(code)


@click.command("pr", short_help="Push the branch and open a pull request with the last report.")
@click.option(
    "--remote", default="origin", metavar="NAME", help="The git remote to push to. [default: origin]"
)
@click.option("--base", metavar="BRANCH", help="The branch to merge into. [default: the forge's default]")
@click.option("--title", help="The title. [default: the spec's first heading and the run's outcome]")
@click.option(
    "--forge",
    type=click.Choice(["gh", "glab"]),
    help="The forge's CLI. [default: glab for a remote whose host names gitlab, else gh]",
)
@click.option("--draft/--ready", default=None, help="Open it as a draft. [default: draft unless COMPLETE]")
@click.option("--json", "as_json", is_flag=True, help="Print what was opened as JSON.")
@click.pass_context
def pull_request(
    ctx: click.Context,
    remote: str,
    base: str | None,
    title: str | None,
    forge: str | None,
    draft: bool | None,
    as_json: bool,
) -> None:
    """Push the branch checked out to REMOTE and open a pull request (GitHub, through `gh pr
    create`) or merge request (GitLab, `glab mr create`) with the last `ralph construct` run's
    report as its description. The CLI must be installed and logged in; ralph keeps no token."""
    from dataclasses import replace

    from ralph.usecases import pullrequest

    root = root_of(ctx)
    last = pullrequest.last_report(root)
    request = pullrequest.request_for(root, last["spec"], last["outcome"], last["report"])
    request = replace(
        request,
        base=base,
        title=title or request.title,
        draft=request.draft if draft is None else draft,
    )
    print_opened(pullrequest.open_pull_request(root, request, remote, forge), as_json)


@click.command("agents")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of text.")
def agents(as_json: bool) -> None:
    """List the agent adapters and whether each CLI is installed."""
    import shutil

    from ralph.agents import ADAPTERS, make_adapter

    for name in ADAPTERS:
        program = make_adapter(name, None).program if name != "command" else "(any)"
        found = shutil.which(program) if name != "command" else None
        if as_json:
            emit({"agent": name, "program": program, "installed": bool(found), "path": found})
        elif name == "command":
            say("command   any program: --agent-cmd 'prog args' (see docs/agent-contract.md)")
        else:
            say(f"{name:<9} {program}: {printable(found) if found else 'not installed'}")


def _run(
    ctx: click.Context,
    spec: str | None,
    flags: dict[str, Any],
    plan_only: bool,
    dry_run: bool = False,
    pr: bool = False,
    review_only: tuple[str | None, bool] | None = None,
) -> None:
    """`review_only`: `ralph review`'s --base and --fix."""
    from dataclasses import replace

    from ralph.loop.construct import Loop
    from ralph.usecases.settings import Settings, read_user_config

    root = root_of(ctx)
    plan = _plan_of(root, dry_run)
    if spec is None:  # continue the spec the loop last worked on
        spec = plan.state().get("spec") if plan else None
        if spec is None:
            raise InvalidInput("name the spec to build: ralph construct specs/x.md (none is in progress)")
        spec = str(root / spec)
    spec_rel = _spec_in(root, Path(ctx.find_root().params.get("directory") or "."), spec)
    as_json = flags.pop("as_json")
    flags["stage_models"] = dict(flags.get("stage_models") or ()) or None
    config = plan.config() if plan else {}
    user = read_user_config()
    settings = Settings.resolve(spec_rel, config, flags, user)
    if dry_run:
        _dry_run(ctx, root, settings, config, user, flags, as_json)
    if review_only is not None:
        from ralph.loop.review_only import ReviewLoop

        report = ReviewLoop(root, settings, *review_only).run()
    else:
        report = Loop(root, settings).run(plan_only=plan_only)
    if report.outcome.name != "COMPLETE" and report.began:
        again = {
            **flags,
            **({"review_from": review_only[0], "fix": review_only[1]} if review_only else {}),
        }
        report = replace(report, resume=resume_command(ctx, spec_rel, again))
    run_text.print_report(report, as_json)
    if not report.began:
        ctx.exit(report.exit_code)
    from ralph.usecases import pullrequest

    text = "\n".join(run_text.report_lines(report))
    pullrequest.save_report(root, spec_rel, report.ended_as, text)  # for a later `ralph pr`
    if pr and report.outcome.name != "INTERRUPTED":
        request = pullrequest.request_for(root, spec_rel, report.ended_as, text)
        try:
            opened = pullrequest.open_pull_request(root, request, settings.remote or "origin")
        except RalphError as exc:  # the run's own exit code wins; a complete run's is the error's
            say(f"ralph: no pull request: {printable(str(exc))}", err=True)
            ctx.exit(report.exit_code or exc.exit_code)
        print_opened(opened, as_json)
    ctx.exit(report.exit_code)


def _plan_of(root: Path, dry_run: bool) -> Plan | None:
    """The plan, or None where there is none yet. A dry run reads it without the validation
    cache, which would write to .git."""
    from ralph.store.reader import plan_path, read_plan

    if not plan_path(root).exists():
        return None
    if not dry_run:
        return read_plan(root)
    from ralph.plan.loader import load
    from ralph.plan.plan import Plan
    from ralph.store.reader import PLAN_NAME, read_bytes

    return Plan(load(read_bytes(root), PLAN_NAME))


def _dry_run(
    ctx: click.Context,
    root: Path,
    settings: Settings,
    config: dict[str, Any],
    user: dict[str, Any],
    flags: dict[str, Any],
    as_json: bool,
) -> None:
    """What the next iteration would run, printed; exits with the code the real run would refuse
    with (0 when it would start)."""
    from dataclasses import replace

    from ralph.loop import dryrun
    from ralph.usecases.settings import flag_layer, layered, user_config_path

    # Where each setting that is not a default came from, as `ralph config list --origin` says.
    found = layered(config, user, str(user_config_path()), flag_layer(flags))
    origins = {key: origin for key, (_, origin) in found.items() if origin != "default"}
    result = replace(dryrun.preview(root, settings), origins=origins)
    if as_json:
        emit(result.to_json())
    else:
        say("\n".join(printable(line) for line in run_text.dry_run_lines(result)))
    # Each reason the real run would refuse, as the line it would print; its exit code.
    for refusal in result.refusals:
        say(f"ralph: {printable(refusal.message)}", err=True)
    ctx.exit(result.refusals[0].exit_code if result.refusals else 0)


def print_opened(opened: Mapping[str, Any], as_json: bool) -> None:
    if as_json:
        emit({"pull_request": opened})
    else:
        say(f"pull request: {printable(opened['url'] or 'opened (the CLI printed no address)')}")


def resume_command(ctx: click.Context, spec: str, flags: Mapping[str, Any]) -> str:
    """The command that goes on where this run stopped: the same spec and the flags given."""
    import shlex

    words = ["ralph", ctx.info_name or "construct", spec]
    for param in ctx.command.params:
        value = flags.get(param.name)
        if not isinstance(param, click.Option) or value is None or param.name == "as_json":
            continue
        option = max(param.opts, key=len)
        if param.is_flag and param.secondary_opts and not value:  # --no-spec-check
            words.append(max(param.secondary_opts, key=len))
        elif param.is_flag:
            words.append(option) if value else None
        elif isinstance(value, dict):  # --stage-model, repeated
            for stage, models in value.items():
                words += [option, f"{stage}={','.join(models)}"]
        elif isinstance(value, tuple):
            words += [option, shlex.join(value)]
        elif isinstance(param.type, Duration):
            words += [option, f"{value:g}s"]
        else:
            words += [option, f"{value:g}" if isinstance(value, float) else str(value)]
    return shlex.join(words)


def _spec_in(root: Path, start: Path, spec: str) -> str:
    """The spec's path relative to the repository root, as the plan records it: `./specs/x.md`,
    `specs/x.md` and the absolute path are one spec; relative paths start where -C points."""
    path = (start / spec).resolve()
    try:
        return path.relative_to(root.resolve()).as_posix()
    except ValueError:
        raise InvalidInput(f"the spec {printable(spec)} is outside the repository {root}") from None
