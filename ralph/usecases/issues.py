"""The issue commands: add an issue for INVESTIGATE, resolve one."""

from __future__ import annotations

from pathlib import Path

from ralph.plan.document import Record
from ralph.plan.intake import require_text
from ralph.store.transaction import transaction
from ralph.usecases.names import named


def add(root: Path, text: str, priority: str | None = None, commit: bool | None = None) -> Record:
    with transaction(root, commit) as change:
        issue = change.plan.add_issue(text, priority)
        change.message = f"ralph: issue add {named([issue], 'text')}"
    return issue


def resolve(root: Path, issue_id: str, note: str | None = None, commit: bool | None = None) -> Record:
    if note is not None:
        require_text(note, "the note")
    with transaction(root, commit) as change:
        issue = change.plan.resolve_issue(issue_id, note)
        change.message = f"ralph: issue resolve {named([issue], 'text')}" + (f"\n\n{note}" if note else "")
    return issue


def keep_open(root: Path, issue_id: str, reason: str, commit: bool | None = None) -> Record:
    with transaction(root, commit) as change:
        issue = change.plan.keep_issue_open(issue_id, reason)
        change.message = f"ralph: issue keep {named([issue], 'text')}\n\n{reason}"
    return issue
