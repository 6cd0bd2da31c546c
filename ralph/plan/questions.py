"""Issues for INVESTIGATE and questions for a person; a question blocks its task until answered."""

from __future__ import annotations

from ralph.errors import InvalidInput, Refused
from ralph.plan.document import Record, RecordLine
from ralph.plan.intake import new_id, require_text
from ralph.plan.reading import PlanReader, drop_claim, is_question
from ralph.plan.records import (
    KillReason,
    Status,
    blocking_question,
    count_kill,
    is_blocked,
    is_done,
    is_pending,
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


def ask(
    plan: PlanReader,
    task_id: str,
    text: str,
    asked_at: str,
    asked_by: str | None = None,
    family: str | None = None,
) -> Record:
    """Record a question for a person about a task, and block the task (and so everything that
    depends on it) until it is answered. `family`: the question is about a failure that survived
    a split of that family, whose other tasks wait with it (hold_for_question)."""
    require_text(text, "the question")
    if not text.strip():
        raise InvalidInput("the question is empty")
    line = plan.task_line(task_id)
    record, blocked = question_on(plan, line.record, text, asked_at, asked_by, family)
    if blocked:
        plan.doc.rewrite(line)
    plan.doc.append(record)
    return record


def question_on(
    plan: PlanReader,
    task: Record,
    text: str,
    asked_at: str,
    asked_by: str | None = None,
    family: str | None = None,
) -> tuple[Record, bool]:
    """`ask` on the task's record, in place: the question to append after its line, and whether
    the task changed (it is blocked by the question), for the caller to rewrite its line once."""
    task_id = task["id"]
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
    if family:
        record["family"] = family
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
        return record, True
    return record, False


def hold_for_question(plan: PlanReader, task_id: str, question_id: str) -> Record:
    """The task waits with its family for the open question about that family's failure: blocked
    by it (its answer unblocks the task). What it remembers of its own failures goes: the question
    has the evidence, and once answered its builds start a fresh count of identical failures."""
    question = next((q for q in plan.questions() if q["id"] == question_id), None)
    if question is None:
        raise Refused(f"no open question {question_id}")
    line = plan.task_line(task_id)
    task = line.record
    if not is_pending(task):
        raise Refused(f"task {task_id} is not pending: only a pending task waits for a question")
    task["s"] = Status.BLOCKED
    task["blocked_by"] = question_id
    family = question.get("family") or question.get("task")
    task["blocked_reason"] = (
        f"waits with its family ({family}) for the answer to question {question_id}: {question['text'][:200]}"
    )
    for stale in ("fingerprint", "repeated_failure", "repeated_from", "rejection_fingerprint"):
        task.pop(stale, None)
    drop_claim(task)
    plan.doc.rewrite(line)
    return task


def answer(plan: PlanReader, question_id: str, text: str, answered_at: str) -> tuple[Record, Record | None]:
    """Record a person's answer. Each task it blocks (the one asked about, and those waiting
    with its family) goes back to pending once none of its own questions is open (a task the
    loop blocked for another reason stays blocked). Returns the question and the task asked
    about (None when it is gone)."""
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
    for task_line in plan.task_lines():
        task = task_line.record
        asked_about = task["id"] == question.get("task")
        if blocking_question(task) and (asked_about or task.get("blocked_by") == question_id):
            _unblock(plan, task_line)
    return question, plan.find_task(question.get("task", ""))


def _unblock(plan: PlanReader, line: RecordLine) -> None:
    """An answered question blocked the task: it waits for the next of its own open questions,
    or goes back to pending."""
    task = line.record
    still_open = plan.questions_of(task["id"])
    if still_open:
        task["blocked_by"] = still_open[0]["id"]
        task["blocked_reason"] = _question_reason(still_open[0])
    else:
        task["s"] = Status.PENDING
        task.pop("blocked_by", None)
        task.pop("blocked_reason", None)
    plan.doc.rewrite(line)


def resolve_issue(plan: PlanReader, issue_id: str, note: str | None = None) -> Record:
    """The issue goes; with a note, a resolve record keeps it (the commit that would carry it is
    the loop's, when an agent resolves the issue with RALPH_COMMIT=0)."""
    line = plan.issue_line(issue_id)
    plan.doc.remove(line)
    if note and note.strip():
        require_text(note, "the note")
        resolved = {"t": "resolve", "id": issue_id, "note": note.strip(), "text": line.record["text"][:200]}
        for kept in ("spec", "aspect"):  # the spec it belonged to, the review aspect that found it
            if line.record.get(kept):
                resolved[kept] = line.record[kept]
        plan.doc.append(resolved)
    return line.record


def _question_reason(question: Record) -> str:
    """blocked_reason's words for people; what blocks the task is its blocked_by field."""
    return f"waiting for the answer to question {question['id']}: {question['text'][:200]}"
