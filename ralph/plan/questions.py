"""Issues for INVESTIGATE and questions for a person; a question blocks its task until answered."""

from __future__ import annotations

from ralph.errors import InvalidInput, Refused
from ralph.plan.document import Record
from ralph.plan.intake import new_id, require_text
from ralph.plan.reading import PlanReader, is_question
from ralph.plan.records import (
    KillReason,
    Status,
    blocking_question,
    count_kill,
    is_blocked,
    is_done,
)
from ralph.plan.validate import record_problems


def add_issue(plan: PlanReader, text: str, priority: str | None = None) -> Record:
    require_text(text, "the issue")
    record = {"t": "issue", "id": new_id("i", plan.taken_ids()), "text": text.strip()}
    if priority:
        record["priority"] = priority
    if plan.state().get("spec"):
        record["spec"] = plan.state()["spec"]
    problems = record_problems(record)
    if problems:
        raise InvalidInput("; ".join(problems))
    plan.doc.append(record)
    return record


def keep_issue_open(plan: PlanReader, issue_id: str, reason: str) -> Record:
    """INVESTIGATE leaves the issue open on purpose (a person must decide): not investigated
    again, and not resolved by ralph when tasks were made from it. The loop does the same
    with an issue whose INVESTIGATE runs kept being stopped."""
    require_text(reason, "the reason")
    if not reason.strip():
        raise InvalidInput("say why the issue stays open")
    line = plan.issue_line(issue_id)
    line.record["keep_open"] = reason.strip()
    plan.doc.rewrite(line)
    return line.record


def record_investigation_kill(plan: PlanReader, issue_id: str, kill_reason: KillReason, kill_log: str) -> int:
    """An INVESTIGATE run of the issue was stopped (its time limit, a full context): the issue
    records why and the run's log; returns how many of its runs were stopped so far."""
    line = plan.issue_line(issue_id)
    kills = count_kill(line.record, "", kill_reason, kill_log)
    plan.doc.rewrite(line)
    return kills


def ask(plan: PlanReader, task_id: str, text: str, asked_at: str, asked_by: str | None = None) -> Record:
    """Record a question for a person about a task, and block the task (and so everything that
    depends on it) until it is answered."""
    require_text(text, "the question")
    if not text.strip():
        raise InvalidInput("the question is empty")
    line = plan.task_line(task_id)
    task = line.record
    if is_done(task):
        raise Refused(f"task {task_id} is done; reject it first, or ask about a pending task")
    record = {
        "t": "issue",
        "id": new_id("i", plan.taken_ids()),
        "kind": "question",
        "text": text.strip(),
        "task": task_id,
        "asked_at": asked_at,
    }
    if asked_by:
        record["asked_by"] = asked_by
    spec = task.get("spec") or plan.state().get("spec")
    if spec:
        record["spec"] = spec
    problems = record_problems(record)
    if problems:
        raise InvalidInput("; ".join(problems))
    if not is_blocked(task) or blocking_question(task):
        task["s"] = Status.BLOCKED
        task["blocked_by"] = record["id"]
        task["blocked_reason"] = _question_reason(record)
        plan.doc.rewrite(line)
    plan.doc.append(record)
    return record


def answer(plan: PlanReader, question_id: str, text: str, answered_at: str) -> tuple[Record, Record | None]:
    """Record a person's answer. The task goes back to pending once none of its questions is
    open (a task the loop blocked for another reason stays blocked). Returns the question and
    the task (None when the task is gone)."""
    require_text(text, "the answer")
    if not text.strip():
        raise InvalidInput("the answer is empty")
    line = next((line for line in plan.of("issue") if line.record["id"] == question_id), None)
    if line is None or not is_question(line.record):
        raise Refused(f"no question {question_id}" + (": it is an issue" if line else ""))
    question = line.record
    if question.get("answer"):
        raise Refused(f"question {question_id} is already answered")
    question["answer"], question["answered_at"] = text.strip(), answered_at
    plan.doc.rewrite(line)
    task = plan.find_task(question.get("task", ""))
    if task is not None and blocking_question(task):
        still_open = plan.questions_of(task["id"])
        task_line = plan.task_line(task["id"])
        if still_open:
            task["blocked_by"] = still_open[0]["id"]
            task["blocked_reason"] = _question_reason(still_open[0])
        else:
            task["s"] = Status.PENDING
            task.pop("blocked_by", None)
            task.pop("blocked_reason", None)
        plan.doc.rewrite(task_line)
    return question, task


def resolve_issue(plan: PlanReader, issue_id: str, note: str | None = None) -> Record:
    """The issue goes; with a note, a resolve record keeps it (the commit that would carry it is
    the loop's, when an agent resolves the issue with RALPH_COMMIT=0)."""
    line = plan.issue_line(issue_id)
    plan.doc.remove(line)
    if note and note.strip():
        require_text(note, "the note")
        resolved = {"t": "resolve", "id": issue_id, "note": note.strip(), "text": line.record["text"][:200]}
        if line.record.get("spec"):
            resolved["spec"] = line.record["spec"]
        plan.doc.append(resolved)
    return line.record


def _question_reason(question: Record) -> str:
    """blocked_reason's words for people; what blocks the task is its blocked_by field."""
    return f"waiting for the answer to question {question['id']}: {question['text'][:200]}"
