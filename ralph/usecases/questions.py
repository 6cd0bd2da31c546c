"""The question commands: an agent asks a person (`ralph ask`), which blocks its task; a person
answers (`ralph answer`), which unblocks it; `ralph questions` lists what waits for an answer."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from ralph.errors import InvalidInput
from ralph.plan.document import Record
from ralph.plan.records import is_pending
from ralph.store.reader import read_plan
from ralph.store.transaction import transaction
from ralph.usecases.names import named

PROMPT_SUFFIX = ".prompt.md"  # the loop writes each run's prompt beside its log


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def who_asks(env: Mapping[str, str]) -> str:
    """Who is asking, in which run: an agent of the construct loop (its stage, iteration and log),
    or a person."""
    stage = env.get("RALPH_STAGE")
    if not stage:
        return f"{env.get('USER') or 'a person'} (not in a construct run)"
    said = f"{stage} agent, iteration {env.get('RALPH_ITERATION', '?')}"
    prompt = env.get("RALPH_PROMPT_FILE", "")
    if prompt.endswith(PROMPT_SUFFIX):
        said += f", log build/ralph-logs/{Path(prompt).name.removesuffix(PROMPT_SUFFIX)}.log"
    return said


def ask(
    root: Path,
    text: str,
    task_id: str | None,
    asked_by: str,
    commit: bool | None = None,
    draft: str | None = None,
    choices: tuple[str, ...] = (),
) -> Record:
    """A question about a task; or, from an agent drafting a spec (`draft`, its $RALPH_DRAFT, and
    no task named), about that draft, which blocks no task."""
    if draft and not task_id:
        return _ask_about_draft(root, draft, text, asked_by, commit, choices)
    if not task_id:
        raise InvalidInput("name the task the question blocks: --task ID (no $RALPH_TASK_ID is set)")
    if choices:
        raise InvalidInput("--choice is for questions about a spec draft (ralph spec draft)")
    with transaction(root, commit) as change:
        question = change.plan.ask(task_id, text, now(), asked_by)
        change.message = f"ralph: ask {named([question], 'text')}\n\nblocks {task_id} until answered"
    return question


def _ask_about_draft(
    root: Path, draft: str, text: str, asked_by: str, commit: bool | None, choices: tuple[str, ...]
) -> Record:
    from ralph.usecases.specs import spec_of

    with transaction(root, commit) as change:
        question = change.plan.ask_about_draft(draft, spec_of(draft), text, list(choices), now(), asked_by)
        change.message = f"ralph: ask {named([question], 'text')}\n\nabout the spec draft {draft}"
    return question


def answer(
    root: Path, question_id: str, text: str, commit: bool | None = None
) -> tuple[Record, Record | None]:
    with transaction(root, commit) as change:
        question, task = change.plan.answer(question_id, text, now())
        unblocked = f"; {task['id']} unblocked" if task and is_pending(task) else ""
        change.message = f"ralph: answer {named([question], 'text')}{unblocked}"
    return question, task


def open_questions(root: Path) -> list[Record]:
    return read_plan(root).questions()
