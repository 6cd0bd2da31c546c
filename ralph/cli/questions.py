"""The questions a person answers: `ralph ask` (for agents), `ralph answer` and `ralph questions`
(for people). Each parses its arguments, calls ralph.usecases.questions, and prints."""

from __future__ import annotations

import os

import click

from ralph.cli.common import commit_choice, emit, json_option, no_commit_option, root_of, say, task_or_current
from ralph.plan.records import is_pending, status_of
from ralph.text import printable


@click.command(short_help="Ask a person a question; its task waits for the answer.")
@click.argument("text", metavar="QUESTION")
@click.option("--task", "task_id", metavar="ID", help="The task it blocks. [default: $RALPH_TASK_ID]")
@click.option(
    "--choice",
    "choices",
    multiple=True,
    metavar="ANSWER",
    help="An answer to offer (repeatable); a person may still answer otherwise. For questions"
    " about a spec draft.",
)
@no_commit_option
@json_option
@click.pass_context
def ask(
    ctx: click.Context,
    text: str,
    task_id: str | None,
    choices: tuple[str, ...],
    no_commit: bool,
    as_json: bool,
) -> None:
    """Ask a person a question about a task: the task (and what depends on it) is blocked until
    `ralph answer`. For a decision the spec leaves open that changes the result; not for what you
    can find out yourself. An agent drafting a spec ($RALPH_DRAFT set by `ralph spec draft`) asks
    about its draft, and may offer answers with --choice."""
    from ralph.usecases import questions

    record = questions.ask(
        root_of(ctx),
        text,
        task_or_current(task_id),
        questions.who_asks(os.environ),
        commit_choice(no_commit),
        draft=os.environ.get("RALPH_DRAFT") or None,
        choices=choices,
    )
    if as_json:
        emit(record)
    elif record.get("draft"):
        say(f"asked {record['id']} (about the spec draft {record['draft']}): {printable(record['text'])}")
    else:
        blocks = f"blocks {record['task']} until answered"
        say(f"asked {record['id']} ({blocks}): {printable(record['text'])}")


@click.command(short_help="Answer a question; its task goes on once it is answered.")
@click.argument("question_id", metavar="ID")
@click.argument("text", metavar="ANSWER")
@no_commit_option
@json_option
@click.pass_context
def answer(ctx: click.Context, question_id: str, text: str, no_commit: bool, as_json: bool) -> None:
    """Answer a question: its task is unblocked (once none of its questions is open), and its next
    BUILD prompt carries the question and the answer."""
    from ralph.usecases import questions

    record, task = questions.answer(root_of(ctx), question_id, text, commit_choice(no_commit))
    if as_json:
        emit({**record, "task_status": status_of(task) if task else None})
        return
    if record.get("draft"):
        then = f"run `ralph spec draft {record['draft']}` to go on with the draft"
    elif task is None:
        then = f"its task {record.get('task')} is gone"
    elif is_pending(task):
        then = f"{task['id']} is unblocked"
    else:
        then = f"{task['id']} stays blocked: {printable(task.get('blocked_reason', ''))[:120]}"
    say(f"answered {record['id']}; {then}")


@click.command(short_help="List the open questions a person must answer.")
@json_option
@click.pass_context
def questions(ctx: click.Context, as_json: bool) -> None:
    """List the open questions: what, which task, since when, who asked in which run."""
    from ralph.usecases import questions as ops

    for record in ops.open_questions(root_of(ctx)):
        if as_json:
            emit(record)
            continue
        about = f"draft {record['draft']}" if record.get("draft") else f"task {record.get('task', '?')}"
        say(f"{record['id']}  {about}  since {record.get('asked_at', '?')}")
        say(f"    {printable(record['text'])}")
        if record.get("choices"):
            say(f"    choices: {' | '.join(printable(choice) for choice in record['choices'])}")
        say(f"    asked by {printable(record.get('asked_by') or 'unknown')}")
