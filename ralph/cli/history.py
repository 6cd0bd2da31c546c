"""`ralph log`: the plan's timeline from git history, and `ralph completion`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from ralph.cli.common import json_line, json_option, root_of, say, task_ids
from ralph.text import joined_lines, printable

if TYPE_CHECKING:
    from ralph.plan.history import Event

MAX_DETAIL = 200  # characters of one free text (a gate failure, a reason) on a line of the log
FAILURE_LINES = 12  # lines of a failed attempt's recorded failure under `ralph log --task`


@click.command("log", short_help="The plan's timeline from git history, oldest first.")
@click.option("--since", metavar="DATE|REV", help="Only commits after this revision, or from this date on.")
@click.option(
    "--task",
    "task_id",
    metavar="ID",
    shell_complete=task_ids,
    help="One task's whole story (its subtasks' creation too).",
)
@json_option
@click.pass_context
def log(ctx: click.Context, since: str | None, task_id: str | None, as_json: bool) -> None:
    """The plan's timeline from git history, oldest first: tasks created, done, rejected, killed,
    decomposed, accepted, deleted; issues added and resolved; hand edits as what they changed.

    Each event names its commit, time and author. With --json, one JSON object per event."""
    from ralph.secrets import FieldsRedactor, redact
    from ralph.usecases import history

    events = history.timeline(root_of(ctx), since, task_id)
    summary = history.story(events, task_id) if task_id else None
    # One write for the whole log: a thousand-commit history is thousands of lines.
    # Redacted: a history written before ralph redacted what it stored can hold secrets.
    if as_json:
        redact_fields = FieldsRedactor(root_of(ctx))
        printed = [json_line(redact_fields(event)) for event in (*events, *([summary] if summary else []))]
        text = "\n".join(printed)
    else:
        printed = [line(event) for event in events] + (story_lines(summary) if summary else [])
        text = redact("\n".join(printed), root_of(ctx))
    if printed:
        say(text)


def _a_file_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`-o ''` names no file (open('') fails with no name to say): a usage error, as click's own."""
    if value == "":
        raise click.BadParameter("an empty file name names no file", ctx, param)
    return value


@click.command("report", short_help="One HTML page of the plan's history, cost and attempts.")
@click.option(
    "-o",
    "output",
    type=click.Path(dir_okay=False),
    callback=_a_file_name,
    help="Write the page to this file (default: stdout).",
)
@click.pass_context
def report(ctx: click.Context, output: str | None) -> None:
    """One self-contained HTML page of the plan's history: a burndown, attempts, cycle time,
    tokens and cost per task, the gate-failure rate, the slowest tasks, each task's scope beside
    the files it changed, and what each review aspect found. No network, no scripts."""
    from ralph.usecases import report as pages

    page = pages.build(root_of(ctx))
    if output is None:
        say(page, nl=False)
        return
    try:
        with open(output, "w", encoding="utf-8") as out:
            out.write(page)
    except OSError as exc:  # a write or close that fails (/proc/version) names no file: name it
        raise OSError(exc.errno, exc.strerror, exc.filename or output) from None
    say(f"wrote {printable(output)}")


@click.command("completion", short_help="Print the shell completion script for bash, zsh or fish.")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell completion script for ralph: commands, options, and the task and issue ids
    of the plan.

    \b
    bash: eval "$(ralph completion bash)"   (in ~/.bashrc)
    zsh:  eval "$(ralph completion zsh)"    (in ~/.zshrc)
    fish: ralph completion fish > ~/.config/fish/completions/ralph.fish"""
    from click.shell_completion import get_completion_class

    root = ctx.find_root().command  # the whole `ralph` group is what gets completed
    completion_class = get_completion_class(shell)
    assert completion_class is not None  # click knows each shell the argument's Choice takes
    complete = completion_class(root, {}, "ralph", "_RALPH_COMPLETE")
    say(complete.source(), nl=False)


CLAIM_EVENTS = {
    "claimed": "claimed by {runner}",
    "claim renewed": "claim renewed by {runner}",
    "released": "released by {runner}",
    "taken over": "taken over from {was} by {runner}",
}


def line(event: Event) -> str:
    """One event as one line: commit, time, author, item, what happened."""
    when = event["time"][:16].replace("T", " ")
    who = printable(event["author"])
    item = printable(event["id"]) if event.get("id") else "-"
    what = event["event"]
    if what == "attempt failed":  # labelled by why: "gate failed", "no changes", "not marked done"
        from ralph.plan.history import verdict_words

        what = verdict_words(event.get("verdict", ""))
    if what in CLAIM_EVENTS:  # "claimed by R", "taken over from R by S": the runner is the news
        what = CLAIM_EVENTS[what].format(
            runner=printable(str(event.get("runner"))), was=printable(str(event.get("was_claimed_by")))
        )
    detail = describe(event)
    hand = "  [by hand]" if event.get("by_hand") else "  [merged]" if event.get("merged") else ""
    if event.get("aspect"):  # what a review aspect found, and what became of it
        detail += f" (found by the {printable(str(event['aspect']))} review)"
    return f"{event['commit'][:7]} {when} {who}  {item}  {what}{': ' + detail if detail else ''}{hand}"


def describe(event: Event) -> str:
    """What the event says beyond its name, escaped to one line."""
    kind = event["event"]
    parts: list[str] = []
    if kind in ("created", "done", "reopened", "accepted", "deleted", "unaccepted") and event.get("name"):
        parts.append(event["name"])
        if event.get("parent"):
            parts.append(f"(subtask of {event['parent']})")
    elif kind in ("added", "resolved"):
        parts.append(event.get("text") or "")
        if event.get("note"):
            parts.append(f"({event['note']})")
    elif kind == "decomposed":
        parts.append("into " + ", ".join(event.get("into", [])))
    elif kind in (
        "rejected",
        "resubmitted",
        "killed",
        "stopped",
        "blocked",
        "kept open",
        "rejection removed",
    ):
        parts.append(": ".join(str(event[key]) for key in ("kill_reason", "reason") if event.get(key)))
    elif kind in ("built", "attempt failed"):
        from ralph.failures import gist

        failure = str(event.get("gate_failure") or "").removeprefix(f"{event.get('verdict')}: ")
        model = f" with {event['model']}" if event.get("model") else ""
        said = [f"attempt {event.get('attempt')}{model}", gist(failure, 120)]
        said += ["files " + ", ".join(event.get("files") or []) if event.get("files") else "", _usage(event)]
        parts.append("; ".join(part for part in said if part))
    elif kind == "build commit":
        parts.append(event["build_commit"][:12])
    elif kind.endswith("changed") and event.get("fields"):
        parts.append(
            "; ".join(
                f"{name} {_value(old)} -> {_value(new)}" for name, (old, new) in event["fields"].items()
            )
        )
    elif kind in ("line added", "line removed"):
        parts.append(_cut(event.get("line", "")))
    return printable(_cut(joined_lines(" ".join(str(part) for part in parts if part))))  # 5 is "5"


def story_lines(summary: dict[str, Any]) -> list[str]:
    """The summary under `ralph log --task ID`: where the task ended, its attempts and cost."""
    lines = [f"{summary['id']}: {printable(str(summary.get('name') or ''))}", f"  now: {summary.get('now')}"]
    from ralph.plan.history import verdict_words

    for attempt in summary["attempts"]:
        verdict = "passed the gate" if attempt["passed"] else verdict_words(attempt.get("verdict", ""))
        usage = _usage(attempt)
        model = f" with {printable(attempt['model'])}" if attempt.get("model") else ""
        lines.append(
            f"  attempt {attempt.get('attempt')}{model}: {verdict}{', ' + usage if usage else ''}"
            f" ({attempt['commit'][:7]})"
        )
        lines += [f"    | {printable(_cut(text))}" for text in _failure_lines(attempt.get("gate_failure"))]
    usage = _usage(summary)
    lines.append(
        f"  attempts: {len(summary['attempts'])}, failed: {summary['failed_attempts']}"
        f" (gate failures: {summary['gate_failures']}), rejections: {summary['rejections']}"
        f"{', ' + usage if usage else ''}"
    )
    if summary.get("build_commit"):
        lines.append(f"  build commit: {printable(summary['build_commit'])}")
    if summary.get("files"):
        lines.append(f"  files: {printable(', '.join(summary['files']))}")
    if summary.get("into"):
        lines.append(f"  decomposed into: {printable(', '.join(summary['into']))}")
    if summary.get("coverage"):
        lines += _coverage_lines(summary["coverage"])
    return lines


def _coverage_lines(cover: dict[str, Any]) -> list[str]:
    """The task's scope beside the files its build changed."""
    from ralph.plan.scope import COVERAGE_WORDS

    lines = [f"  scope: {printable(', '.join(cover['scope']))}"]
    for key, said in COVERAGE_WORDS:
        lines.append(f"    {said}: {printable(', '.join(cover[key])) or '-'}")
    return lines


def _failure_lines(failure: object) -> list[str]:
    """A recorded failure's lines as the person reads them under its attempt (the gate's own
    pick of lines: its errors and the end of its output), blank lines left out."""
    lines = [line.rstrip() for line in str(failure or "").splitlines() if line.strip()]
    return lines if len(lines) <= FAILURE_LINES else [*lines[: FAILURE_LINES - 1], "...", lines[-1]]


def _usage(item: dict[str, Any]) -> str:
    found = []
    if item.get("tokens"):
        found.append(f"{item['tokens']} tokens")
    if item.get("cost_usd"):
        found.append(f"${item['cost_usd']:.4f}")
    if item.get("cost_unknown"):
        found.append(f"{'+ ' if item.get('cost_usd') else ''}cost unknown")
    return ", ".join(found)


def _value(value: object) -> str:
    return "(none)" if value is None else _cut(json.dumps(value, ensure_ascii=False), 80)


def _cut(text: str, limit: int = MAX_DETAIL) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
