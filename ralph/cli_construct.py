"""CLI commands of the construct loop: `ralph construct` and `ralph plan`."""

from __future__ import annotations

import json

import click


def _loop_options(command):
    options = [
        click.option("--agent", help="claude, codex, opencode, gemini or command (see `ralph agents`)."),
        click.option(
            "--agent-cmd",
            help="The program and its arguments (split like a shell, never run by one);"
            " for a named CLI, the path of its binary.",
        ),
        click.option("--agent-args", help="Extra arguments passed through to the agent CLI."),
        click.option("--model", help="Model name passed to the agent CLI."),
        click.option("--timeout", help="Limit for one agent run: milliseconds, or with a unit (90s, 5m)."),
        click.option(
            "--allow-dirty",
            is_flag=True,
            default=None,
            help="Start even with uncommitted changes (they are never committed).",
        ),
        click.option("--json", "as_json", is_flag=True, help="Print the final report as JSON."),
    ]
    for option in reversed(options):
        command = option(command)
    return click.argument("spec", type=click.Path(dir_okay=False))(command)


def register(group: click.Group) -> None:
    @group.command()
    @_loop_options
    @click.option(
        "--max-iterations", type=click.IntRange(min=1), help="Iterations to run at most (default 10)."
    )
    @click.option("--max-minutes", type=click.FloatRange(min=0, min_open=True), help="Wall-clock budget.")
    @click.option(
        "--max-attempts",
        type=click.IntRange(min=1),
        help="Builds per task before it is decomposed (default 3).",
    )
    @click.option("--parallel", type=click.IntRange(min=1), help="VERIFY runs at once (default 4).")
    @click.option(
        "--gate", help='Quality gate command run after each build (default: make verify; "" for none).'
    )
    @click.pass_context
    def construct(ctx, spec, **flags):
        """Run INVESTIGATE -> BUILD -> VERIFY iterations until SPEC is implemented.

        Exit codes: 0 complete, 3 iteration budget spent, 4 time budget spent, 5 stuck (no
        progress possible), 6 agent unavailable, 130 interrupted (run again to resume).
        """
        _run(ctx, spec, flags, plan_only=False)

    @group.command("plan")
    @_loop_options
    @click.pass_context
    def plan_command(ctx, spec, **flags):
        """Run one PLAN stage: the agent turns SPEC into prioritized tasks."""
        _run(ctx, spec, flags, plan_only=True)

    _agents_command(group)


def _agents_command(group: click.Group) -> None:
    @group.command("agents")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of text.")
    def agents(as_json):
        """List the agent adapters and whether each CLI is installed."""
        import shutil

        from ralph.agents import ADAPTERS, make_adapter

        for name in ADAPTERS:
            program = make_adapter(name, None).program if name != "command" else "(any)"
            found = shutil.which(program) if name != "command" else None
            if as_json:
                click.echo(
                    json.dumps({"agent": name, "program": program, "installed": bool(found), "path": found})
                )
            elif name == "command":
                click.echo("command   any program: --agent-cmd 'prog args' (see docs/agent-contract.md)")
            else:
                click.echo(f"{name:<9} {program}: {found or 'not installed'}")


def _run(ctx: click.Context, spec: str, flags: dict, plan_only: bool) -> None:
    import shlex
    from pathlib import Path

    from ralph.cli import _root
    from ralph.construct import Loop
    from ralph.settings import Settings
    from ralph.store import plan_path, read_plan

    root = _root(ctx)
    spec_path = (Path.cwd() / spec).resolve()
    try:
        spec_rel = str(spec_path.relative_to(root))
    except ValueError:
        spec_rel = spec
    as_json = flags.pop("as_json")
    if flags.get("gate") is not None:
        flags["gate"] = shlex.split(flags["gate"])  # --gate "" runs no gate
    config = read_plan(root).config() if plan_path(root).exists() else {}
    settings = Settings.resolve(spec_rel, config, flags)
    report = Loop(root, settings).run(plan_only=plan_only)
    _print_report(report, as_json)
    ctx.exit(report.outcome.exit_code)


def _print_report(report, as_json: bool) -> None:
    if as_json:
        data = {key: value for key, value in report.__dict__.items() if key != "outcome"}
        click.echo(
            json.dumps({"outcome": report.outcome.name, "exit_code": report.outcome.exit_code, **data})
        )
        return
    click.echo(f"ralph: {report.outcome.name}: {report.message}")
    click.echo(f"iterations run: {report.iterations}; tokens: {report.tokens:,}")
    if report.accepted:
        click.echo(f"accepted ({len(report.accepted)}):")
        for item in report.accepted:
            click.echo(f"  {item}")
    if report.remaining:
        click.echo(f"left ({len(report.remaining)}):")
        for item in report.remaining:
            click.echo(f"  {item}")
    click.echo(f"logs: {report.log_dir}/ (events: {report.log_dir}/events.jsonl)")
