"""Questions asked while an agent drafts a spec (`ralph spec draft NAME`): they block no task; the
next drafting run is given their answers, and accepting or rejecting the draft takes them out of
the plan (the accepted spec's commit keeps them)."""

from __future__ import annotations

from ralph.errors import InvalidInput
from ralph.plan.document import Record
from ralph.plan.intake import new_id, require_text
from ralph.plan.reading import PlanReader, is_question
from ralph.plan.validate import record_problems

MAX_CHOICES = 9  # a person picks one by a single digit on the terminal


def ask_about_draft(
    plan: PlanReader,
    draft: str,
    spec: str,
    text: str,
    choices: list[str],
    asked_at: str,
    asked_by: str | None = None,
) -> Record:
    """Record a question for a person about the draft of `spec`, with the answers offered."""
    require_text(text, "the question")
    if not text.strip():
        raise InvalidInput("the question is empty")
    offered = [choice.strip() for choice in choices]
    for choice in offered:
        require_text(choice, "a choice")
    if any(not choice for choice in offered) or len(offered) > MAX_CHOICES:
        raise InvalidInput(f"give up to {MAX_CHOICES} choices, none empty")
    record: Record = {
        "t": "issue",
        "id": new_id("i", plan.taken_ids()),
        "kind": "question",
        "text": text.strip(),
        "draft": draft,
        "spec": spec,
        "asked_at": asked_at,
    }
    if offered:
        record["choices"] = offered
    if asked_by:
        record["asked_by"] = asked_by
    problems = record_problems(record)
    if problems:
        raise InvalidInput("; ".join(problems))
    plan.doc.append(record)
    return record


def draft_questions(plan: PlanReader, draft: str) -> list[Record]:
    """The questions asked about the draft, open and answered, in the order they were asked."""
    return [line.record for line in plan.of("issue") if is_draft_question(line.record, draft)]


def is_draft_question(record: Record, draft: str) -> bool:
    return is_question(record) and record.get("draft") == draft


def forget_draft(plan: PlanReader, draft: str) -> list[Record]:
    """The draft's questions out of the plan (the draft was accepted or rejected); returns them."""
    gone = [line for line in plan.of("issue") if is_draft_question(line.record, draft)]
    for line in gone:
        plan.doc.remove(line)
    return [line.record for line in gone]
