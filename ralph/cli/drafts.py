"""`ralph spec draft NAME "idea"`: an agent drafts the spec, asking through ralph what only the
person can decide; the person approves the draft before anything is built. The steps are
ralph.loop.spec_drafts'; this module parses, asks the person on a terminal, and prints."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ralph.cli.common import agent_names, root_of, say
from ralph.cli.construct import AGENT_HELP, Duration, Shlex
from ralph.text import printable

if TYPE_CHECKING:
    from pathlib import Path

    from ralph.loop.spec_drafts import Decision, Draft
    from ralph.plan.document import Record
    from ralph.usecases.settings import Settings

NOT_A_TERMINAL = "no terminal"


@click.command("draft", short_help="An agent drafts specs/NAME.md from an idea; you approve it.")
@click.argument("name")
@click.argument("idea", required=False)
@click.option(
    "--agent",
    help=AGENT_HELP,
    shell_complete=agent_names,
)
@click.option(
    "--agent-cmd", type=Shlex(), help="The program and its arguments (split like a shell, never run by one)."
)
@click.option("--agent-args", type=Shlex(), help="Extra arguments passed through to the agent CLI.")
@click.option("--model", help="Model name passed to the agent CLI.")
@click.option("--timeout", "timeout_s", type=Duration(), help="Limit for one agent run (90s, 5m).")
@click.option(
    "--sandbox",
    type=click.Choice(["off", "auto", "required"]),
    help="Fence the agent as `ralph construct` does. [default: auto]",
)
@click.option(
    "--accept",
    "decision",
    flag_value="accept",
    help="Accept the draft once it is ready: write and commit specs/NAME.md.",
)
@click.option("--reject", "decision", flag_value="reject", help="Drop the draft and its questions.")
@click.option(
    "--revise", "feedback", metavar="FEEDBACK", help="Have the agent revise the draft with this feedback."
)
@click.pass_context
# ctx positional-only (/): click passes it so, and beside **flags a named ctx does not type-check.
def spec_draft(
    ctx: click.Context,
    /,
    name: str,
    idea: str | None,
    decision: str | None,
    feedback: str | None,
    **flags: Any,
) -> None:
    """Have the agent draft specs/NAME.md from IDEA: it explores the repository (read-only, fenced
    like PLAN) and writes the spec in the template's sections (goal, requirements each with how to
    verify it, constraints, out of scope) to a draft under build/ralph-logs/drafts/.

    When it needs a decision it asks (`ralph ask`): on a terminal each question is shown at once
    with its choices, and the draft goes on with the answer. Then the draft is shown and you
    accept it (specs/NAME.md is written and committed, with the questions and answers in the
    commit's message), revise it with feedback, open it in $EDITOR, or reject it.

    Without a terminal the command ends with exit 9 when it waits for a person: for answers (`ralph
    answer ID TEXT`) or for a decision (--accept, --revise FEEDBACK, --reject). Run the same
    command again to go on: the draft remembers its idea and agent flags. Nothing is built before
    the spec is accepted."""
    from ralph.loop import spec_drafts as drafts
    from ralph.usecases.specs import spec_of

    root = root_of(ctx)
    if decision == "reject":
        drafts.reject(drafts.find_draft(root, name))
        say(f"dropped the draft of {spec_of(name.removesuffix('.md'))} and its questions")
        return
    draft = drafts.open_draft(root, name, idea, flags)
    flags = drafts.agent_flags(draft)
    if feedback is not None:
        drafts.revise(draft, feedback)
    person = _Person() if sys.stdin.isatty() else None
    accepted = _until_decided(ctx, draft, decision, person, flags)
    if accepted is None:
        return
    say(f"accepted: wrote and committed {accepted}")
    if not _checked(root, accepted):
        return
    if person is not None and click.confirm(f"start `ralph construct {accepted}` now?", default=False):
        from ralph.cli.construct import construct

        ctx.invoke(construct, spec=str(root / accepted), **flags)
    else:
        say(f"next: ralph construct {accepted} --dry-run    # what the first run would do")


def _checked(root: Path, spec: str) -> bool:
    """The accepted spec checked as `ralph spec check` checks it, so a person sees what `ralph
    construct` would refuse before paying for a run. False (no run offered) when it has problems."""
    from ralph.cli.specs import show_report
    from ralph.usecases.spec_lint import check_spec_file

    report = check_spec_file(root / spec, spec)
    show_report(spec, report)
    if not report.ok:
        say(
            f"next: fix what is above in {spec}, then: ralph spec check {spec}"
            "    # construct refuses it until then"
        )
    return report.ok


def _until_decided(
    ctx: click.Context, draft: Draft, decision: str | None, person: _Person | None, flags: dict[str, Any]
) -> str | None:
    """Run the draft's steps until it is accepted (its spec's path), rejected (None), or waits
    for a person who is not at a terminal (exit 9)."""
    from ralph.loop import spec_drafts as drafts
    from ralph.loop.spec_drafts import Step

    settings: Settings | None = None
    while True:
        now = drafts.step(draft)
        if now is Step.QUESTIONS:
            waiting = [q for q in drafts.questions(draft) if not q.get("answer")]
            if person is None:
                return _waiting_for_answers(ctx, draft, waiting)
            for question in waiting:
                _answer(draft, question, person.answer(question))
        elif now is Step.RUN:
            settings = settings or _settings(draft, flags)
            _run(draft, settings)
        elif decision == "accept":
            return drafts.accept(draft)[0]
        elif person is None:
            _waiting_for_decision(ctx, draft)
        else:
            chosen = person.decide(draft)
            if chosen is drafts.Decision.ACCEPT:
                return drafts.accept(draft)[0]
            if chosen is drafts.Decision.REJECT:
                drafts.reject(draft)
                say(f"rejected: the draft of {draft.spec} is gone; nothing was written")
                return None
            if chosen is drafts.Decision.REVISE:
                drafts.revise(draft, person.feedback())
            else:
                click.edit(filename=str(draft.file))


def _settings(draft: Draft, flags: dict[str, Any]) -> Settings:
    from ralph.store.reader import plan_path, read_plan
    from ralph.usecases.settings import Settings, read_user_config

    config = read_plan(draft.root).config() if plan_path(draft.root).exists() else {}
    settings = Settings.resolve(draft.spec, config, dict(flags), read_user_config())
    if draft.agent != settings.agent:
        draft.agent = settings.agent
        draft.save()
    return settings


def _run(draft: Draft, settings: Settings) -> None:
    from ralph.loop import spec_drafts as drafts
    from ralph.loop.observe.console import Console

    what = "revising" if draft.exists() else "drafting"
    say(f"{what} {draft.spec} with the {settings.agent} agent (read-only on the code)...", err=True)
    outcome = drafts.run(draft, settings, Console(live=False))
    if outcome.asked:
        say(f"the agent asked {len(outcome.asked)} question(s); log {printable(outcome.log)}", err=True)
    else:
        say(f"draft written: {draft.relative()}; log {printable(outcome.log)}", err=True)


def _answer(draft: Draft, question: Record, text: str) -> None:
    from ralph.usecases import questions

    questions.answer(draft.root, question["id"], text)


def _waiting_for_answers(ctx: click.Context, draft: Draft, waiting: list[Record]) -> NoReturn:
    from ralph.loop.spec_drafts import EXIT_WAITING

    say(f"ralph: WAITING: the draft of {draft.spec} waits for {len(waiting)} answer(s):")
    for question in waiting:
        say(f"  {question['id']}: {printable(question['text'])}")
        for choice in question.get("choices") or ():
            say(f"      - {printable(choice)}")
    say(f'answer each with `ralph answer ID "text"`, then run `ralph spec draft {draft.name}` again')
    ctx.exit(EXIT_WAITING)


def _waiting_for_decision(ctx: click.Context, draft: Draft) -> NoReturn:
    from ralph.loop.spec_drafts import EXIT_WAITING

    say(f"ralph: WAITING: the draft of {draft.spec} waits for your decision: read {draft.relative()}, then")
    say(f"  ralph spec draft {draft.name} --accept              # write and commit {draft.spec}")
    say(f'  ralph spec draft {draft.name} --revise "feedback"   # the agent revises it')
    say(f"  ralph spec draft {draft.name} --reject              # drop it")
    ctx.exit(EXIT_WAITING)


class _Person:
    """The person at the terminal: asked each question at once, then for a decision on the draft.
    What the agent wrote is shown escaped: it never drives the terminal."""

    def answer(self, question: Record) -> str:
        choices = question.get("choices") or []
        say(f"\nquestion {question['id']}: {printable(question['text'])}")
        for number, choice in enumerate(choices, 1):
            say(f"  {number}) {printable(choice)}")
        hint = f"1-{len(choices)}, or your own answer" if choices else "your answer"
        while True:
            given = click.prompt(hint, prompt_suffix=": ").strip()
            if given.isdigit() and 1 <= int(given) <= len(choices):
                return str(choices[int(given) - 1])
            if given:
                return given

    def decide(self, draft: Draft) -> Decision:
        from ralph.loop.spec_drafts import Decision
        from ralph.text import terminal_text

        click.echo_via_pager(terminal_text(draft.text()))
        keys = {"a": Decision.ACCEPT, "r": Decision.REVISE, "e": Decision.EDIT, "j": Decision.REJECT}
        said = click.prompt(
            f"{draft.spec}: [a]ccept, [r]evise with feedback, [e]dit in $EDITOR, re[j]ect",
            type=click.Choice(list(keys)),
            show_choices=False,
        )
        return keys[said]

    def feedback(self) -> str:
        said: str = click.prompt("what should change", prompt_suffix=": ")
        return said.strip()
