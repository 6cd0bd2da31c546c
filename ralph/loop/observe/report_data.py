"""What a construct run's report says about each task, issue and question, and what each stage and
task spent, as typed values: `construct --json` gives each one's to_json() (the text report says
the same in lines; ralph/loop/observe/remaining.py words them)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from ralph.loop.observe.remaining import why_left
from ralph.plan.plan import Plan
from ralph.plan.records import IssueView, Status
from ralph.plan.scope import Coverage, coverage


@dataclass(frozen=True)
class AcceptedTask:
    """A task VERIFY accepted in this run."""

    id: str
    name: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "status": "accepted"}


@dataclass(frozen=True)
class LeftTask:
    """A task of the spec not accepted: why it is left (None when it just waits its turn), its
    build attempts, kill reason and draft branch."""

    id: str
    name: str
    status: Status
    why: str | None
    attempts: int
    kill_reason: str | None
    draft: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "status": self.status.name.lower(),
            "why": self.why,
            "attempts": self.attempts,
            "kill_reason": self.kill_reason,
            "draft": self.draft,
        }


@dataclass(frozen=True)
class OpenIssue:
    """An open issue of the spec; why: why it is still open (None: not yet investigated)."""

    id: str
    text: str
    why: str | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "why": self.why}


@dataclass(frozen=True)
class OpenQuestion:
    """An open question of the spec: the task it holds, its text, when and who asked."""

    id: str
    task: str | None
    text: str
    asked_at: str | None
    asked_by: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "task": self.task,
            "text": self.text,
            "asked_at": self.asked_at,
            "asked_by": self.asked_by,
        }


@dataclass(frozen=True)
class ResolvedIssue:
    """An issue resolved with a note in this run: INVESTIGATE's reason it needs no work, or what
    it became."""

    id: str
    text: str | None
    note: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "note": self.note}


@dataclass(frozen=True)
class Draft:
    """A task whose unfinished work is kept on a branch of its own."""

    task: str
    branch: str

    def to_json(self) -> dict[str, Any]:
        return {"task": self.task, "branch": self.branch}


@dataclass(frozen=True)
class Spent:
    """What the runs of a stage (or of a task) spent. cost_usd None: no run's cost is known
    (unknown, never 0). model: the model of a stage's runs (the last one, where one is known);
    models: each one, in order, where an escalation used more than one."""

    runs: int
    tokens: int
    cost_usd: float | None
    unknown_runs: int
    model: str | None = None
    models: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "runs": self.runs,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "unknown_runs": self.unknown_runs,
        }
        if self.model:
            data["model"] = self.model
        if len(self.models) > 1:
            data["models"] = list(self.models)
        return data


class Fate(StrEnum):
    """What became of an item a review aspect found."""

    ACCEPTED = "accepted"  # a task built and accepted
    OPEN = "open"  # a task not accepted yet
    ISSUE = "issue"  # an open issue: INVESTIGATE's, or a person's
    RESOLVED = "resolved"  # an issue resolved
    GONE = "gone"  # removed: decomposed into others, or deleted


@dataclass(frozen=True)
class Finding:
    id: str
    text: str  # the task's name, the issue's text
    fate: Fate

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "fate": str(self.fate)}


@dataclass(frozen=True)
class AspectReview:
    """One review aspect's run in one round (from 1), how it ended (finished, stopped, failed),
    the ids of what it found and, in the report, what became of each."""

    aspect: str
    round: int
    end: str
    found: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "aspect": self.aspect,
            "round": self.round,
            "end": self.end,
            "findings": [finding.to_json() for finding in self.findings],
        }


def reviews(plan: Plan, ran: list[AspectReview]) -> list[AspectReview]:
    """Each aspect's run with what became of what it found, as the plan has it now."""
    records: dict[str, tuple[str, dict[str, Any]]] = {}
    found = {item for run in ran for item in run.found}
    for index in plan.doc.with_ids(found):  # only those lines made: a plan may hold 10,000 records
        line = plan.doc.record_line(index)
        kind, record = line.record["t"], line.record
        if kind in ("task", "issue", "accept", "resolve") and isinstance(record.get("id"), str):
            records[record["id"]] = (kind, record)
    return [
        replace(run, findings=tuple(_finding(item, records.get(item)) for item in run.found)) for run in ran
    ]


def _finding(item: str, found: tuple[str, dict[str, Any]] | None) -> Finding:
    if found is None:
        return Finding(item, "", Fate.GONE)
    kind, record = found
    fate = {"task": Fate.OPEN, "issue": Fate.ISSUE, "accept": Fate.ACCEPTED, "resolve": Fate.RESOLVED}[kind]
    return Finding(item, str(record.get("name") or record.get("text") or ""), fate)


def left_tasks(plan: Plan, spec: str) -> list[LeftTask]:
    """Each task of the spec not accepted."""
    return [
        LeftTask(
            id=task.id,
            name=task.name,
            status=task.status,
            why=why_left(task) or None,
            attempts=task.attempts,
            kill_reason=str(task.kill_reason) if task.kill_reason else None,
            draft=task.record.get("draft"),
        )
        for task in plan.task_views(spec)
    ]


def open_issues(plan: Plan, spec: str) -> list[OpenIssue]:
    """Each open issue of the spec."""
    return [
        OpenIssue(issue.id, issue.text, issue.why_open or None) for issue in map(IssueView, plan.issues(spec))
    ]


def drafts(plan: Plan, spec: str) -> list[Draft]:
    """Each task of the spec whose unfinished work is kept on a draft branch."""
    return [
        Draft(task.id, task.record["draft"]) for task in plan.task_views(spec) if task.record.get("draft")
    ]


def open_questions(plan: Plan, spec: str) -> list[OpenQuestion]:
    """Each open question of the spec."""
    return [
        OpenQuestion(
            id=question["id"],
            task=question.get("task"),
            text=question["text"],
            asked_at=question.get("asked_at"),
            asked_by=question.get("asked_by"),
        )
        for question in plan.questions(spec)
    ]


def resolved_issues(plan: Plan, spec: str, before: set[str]) -> list[ResolvedIssue]:
    """Each issue of the spec resolved with a note since `before` (the resolve records then)."""
    return [
        ResolvedIssue(line.record["id"], line.record.get("text"), line.record["note"])
        for line in plan.of("resolve")
        if line.record.get("spec") in (None, spec) and line.record["id"] not in before
    ]


def coverages(plan: Plan, spec: str, accepted: list[dict[str, Any]]) -> list[Coverage]:
    """Each task of the report (accepted in the run, or left) that has a scope and a build: its
    scope beside the files its build changed."""
    records = [*accepted, *(task.record for task in plan.task_views(spec))]
    found = (coverage(record["id"], record.get("scope"), record.get("files")) for record in records)
    return [row for row in found if row is not None]
