"""What a construct run's report says about each task and issue, as data for `construct --json`
(the text report says the same in lines; ralph/loop/observe/remaining.py words them)."""

from __future__ import annotations

from typing import Any

from ralph.loop.observe.remaining import why_left
from ralph.plan.plan import Plan
from ralph.plan.records import IssueView


def left_tasks(plan: Plan, spec: str) -> list[dict[str, Any]]:
    """Each task of the spec not accepted: its id, name, status, why it is left (None when it just
    waits its turn), its build attempts and kill reason."""
    return [
        {
            "id": task.id,
            "name": task.name,
            "status": task.status.name.lower(),
            "why": why_left(task) or None,
            "attempts": task.attempts,
            "kill_reason": str(task.kill_reason) if task.kill_reason else None,
            "draft": task.record.get("draft"),
        }
        for task in plan.task_views(spec)
    ]


def open_issues(plan: Plan, spec: str) -> list[dict[str, Any]]:
    """Each open issue of the spec: its id, text and why it is still open (None: not yet investigated)."""
    return [
        {"id": issue.id, "text": issue.text, "why": issue.why_open or None}
        for issue in map(IssueView, plan.issues(spec))
    ]


def drafts(plan: Plan, spec: str) -> list[dict[str, Any]]:
    """Each task of the spec whose unfinished work is kept on a draft branch: {task, branch}."""
    return [
        {"task": task.id, "branch": task.record["draft"]}
        for task in plan.task_views(spec)
        if task.record.get("draft")
    ]


def open_questions(plan: Plan, spec: str) -> list[dict[str, Any]]:
    """Each open question of the spec: its id, the task it holds, its text, when and who asked."""
    return [
        {
            "id": question["id"],
            "task": question.get("task"),
            "text": question["text"],
            "asked_at": question.get("asked_at"),
            "asked_by": question.get("asked_by"),
        }
        for question in plan.questions(spec)
    ]


def resolved_issues(plan: Plan, spec: str, before: set[str]) -> list[dict[str, Any]]:
    """Each issue of the spec resolved with a note since `before` (the resolve records then): its
    id, text and note (INVESTIGATE's reason it needs no work, or what it became)."""
    return [
        {"id": line.record["id"], "text": line.record.get("text"), "note": line.record["note"]}
        for line in plan.of("resolve")
        if line.record.get("spec") in (None, spec) and line.record["id"] not in before
    ]
