"""What one BUILD attempt changes on its task's record, in place. `record_on` makes each kind: a
failure counted with its fingerprint (whether it repeats one: ralph.plan.families), a build, a
resubmission, a set-aside, a question. ralph.plan.attempts reads the task's line and writes it
back once; the same change worked out on a copy answers what a failure would leave
(attempts.BuildHistory.after)."""

from __future__ import annotations

from ralph.plan import questions, tasks
from ralph.plan.document import Record
from ralph.plan.families import fingerprint, note_repeat
from ralph.plan.reading import PlanReader
from ralph.plan.records import VERIFY_KILL_FIELDS, Recorded, Status, Verdict
from ralph.plan.run_records import AttemptRecord


def record_on(
    task: Record, attempt: AttemptRecord, rebuilding: bool, plan: PlanReader | None = None
) -> Record | None:
    """`attempt` made on the task's record, in place; the record to add after its line (a
    set-aside's reject record, a question), which only a `plan` makes."""
    kind = attempt.kind
    if kind is Recorded.FAILED:
        _failed(task, attempt, rebuilding)
    elif kind is Recorded.BUILT:
        _built(task, attempt, rebuilding)
    elif kind is Recorded.RESUBMITTED:
        _resubmitted(task, attempt)
    elif plan is not None and kind is Recorded.SET_ASIDE:
        if attempt.kill_reason is None:
            raise ValueError("a set-aside is recorded with why (its kill_reason)")
        return tasks.set_aside_on(task, attempt.text, attempt.kill_reason, attempt.kill_log)
    elif plan is not None and kind is Recorded.ASKED:
        question, _ = questions.question_on(plan, task, attempt.text, attempt.asked_at, attempt.asked_by)
        for stale in ("fingerprint", "repeated_failure", "repeated_from", "rejection_fingerprint"):
            task.pop(stale, None)
        return question
    return None


def _built(task: Record, attempt: AttemptRecord, rebuilding: bool) -> None:
    """A build passed the gate: count it, note the files it changed, the model it ran with and
    its cost, and clear what earlier failures left on the task."""
    _count_build(task, rebuilding)
    task["files"] = sorted(attempt.files)
    task["verdict"] = Verdict.BUILT
    add_usage(task, attempt.tokens, attempt.cost_usd)
    _record_model(task, attempt.model)
    stale_failure = ("gate_failure", "fingerprint", "repeated_failure", "repeated_from", "resubmitted")
    for stale in (*stale_failure, "merge_conflict", "kill_reason", "kill_log", *VERIFY_KILL_FIELDS):
        task.pop(stale, None)


def _failed(task: Record, attempt: AttemptRecord, rebuilding: bool) -> None:
    """A build failed: back to pending with its verdict, the reason and the model it ran with.
    Its fingerprint (its `files`: the paths the build changed, whose names it takes out) against
    its last failure's and its ancestors' says whether it repeats one (families.note_repeat)."""
    verdict, failure = attempt.verdict, attempt.text
    if verdict is None:
        raise ValueError("a failed build is recorded with its verdict")
    task["s"] = Status.PENDING
    _count_build(task, rebuilding)
    task["verdict"] = verdict
    print_ = fingerprint(verdict, failure, [task["id"], *attempt.files])
    note_repeat(task, print_, task.get("fingerprint"), task.get("gate_failure"), failure)
    task["fingerprint"] = print_
    task["gate_failure"] = failure
    add_usage(task, attempt.tokens, attempt.cost_usd)
    _record_model(task, attempt.model)


def _resubmitted(task: Record, attempt: AttemptRecord) -> None:
    """Resubmitted unchanged, with its argument (`task done --unchanged`): no build to count; a
    fresh verifier judges it, and only a rejection of it counts, as a rebuild (tasks.reject)."""
    task["verdict"] = Verdict.BUILT
    add_usage(task, attempt.tokens, attempt.cost_usd)
    for stale in ("gate_failure", "fingerprint", "repeated_failure", "repeated_from", *VERIFY_KILL_FIELDS):
        task.pop(stale, None)


def _count_build(task: Record, rebuilding: bool) -> None:
    """One more build: every build counts in `attempts` (the history of builds), and those after
    a rejection also in `rebuilds`, their own budget."""
    task["attempts"] = task.get("attempts", 0) + 1
    if rebuilding:
        task["rebuilds"] = task.get("rebuilds", 0) + 1


def add_usage(task: Record, tokens: int, cost_usd: float | None) -> None:
    """Sum an attempt's usage onto the task, so `git log -p plan.jsonl` shows what it cost."""
    if tokens:
        task["tokens"] = task.get("tokens", 0) + tokens
        task["attempt_tokens"] = [*task.get("attempt_tokens", []), tokens]
    if cost_usd is None:  # counted, so that no one reads the known part as the whole cost
        task["unknown_cost_runs"] = task.get("unknown_cost_runs", 0) + 1
    else:
        task["cost_usd"] = round(task.get("cost_usd", 0) + cost_usd, 6)


def _record_model(task: Record, model: str | None) -> None:
    """The model the task's last build ran with; none given (the CLI's default): none recorded."""
    if model:
        task["model"] = model
    else:
        task.pop("model", None)
