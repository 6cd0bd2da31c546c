"""What one BUILD attempt came to, applied in one place. `apply` takes the attempt's `BuildOutcome`
(ralph.loop.stages.build_outcome), works out everything it changes as one value (`Changes`: the
records as plain values, the log, the commit), then makes those changes in this order: the run's
own record written to the plan, the work tree settled in one call
(ralph.loop.tree.work_tree.settle_attempt: the task held back, its changes kept, the question or
the build committed), then what the plan adds beside the task (set aside for DECOMPOSE, a question
for a person); and the journal, the console and the report told last."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from ralph.failures import gist
from ralph.loop.runs.agent_process import AgentResult
from ralph.loop.stages.build_outcome import BuildOutcome, Counted, Exit, Failure, Next, StaleBase, Write
from ralph.loop.stages.workspace import StageReport, Workspace
from ralph.loop.tree.plan_access import PLAN_FILE
from ralph.loop.tree.work_tree import Commit, Keep, Settled, settle_attempt
from ralph.plan.document import Record
from ralph.plan.plan import Plan
from ralph.plan.records import VERDICT_WORDS, KillReason, Recorded, Verdict
from ralph.plan.run_records import AttemptRecord
from ralph.text import plural, shown_path

KILL_TEXT = {
    KillReason.TIMEOUT: "the agent run hit its time limit",
    KillReason.CONTEXT_LIMIT: "the agent's context window filled up",
    KillReason.DOOM_LOOP: "the build kept failing; split it into smaller tasks",
    KillReason.REPEATED_FAILURE: "its last two builds failed the same way; split it into smaller tasks",
}


class Attempt(NamedTuple):
    """One attempt's run, and what applying its outcome needs of it besides."""

    result: AgentResult
    changed: frozenset[str] = frozenset()  # the build's files, as its gate and hook left them
    others: tuple[str, ...] = ()  # the other tasks ready to build (a deferral says how many)
    questions: tuple[str, ...] = ()  # the questions its agent asked
    counted: Counted | None = None  # its failure counted: the task as that leaves it
    name: str = ""  # the task's name as its run left it (a build's commit is named after it)


class Change(NamedTuple):
    """One write of the attempt to its task, as a value (plan.attempts.record_attempt): the record,
    and the subject of its commit said of what was written (None: a build, which the build's own
    commit carries)."""

    record: AttemptRecord
    subject: Callable[[Record], str] | None


class Changes(NamedTuple):
    """Everything the attempt changes, worked out before any of it is made: the run's own record
    (its failure counted, the build, the resubmission), the log its kept changes go beside, what
    the work tree commits as it settles, and what the plan adds beside the task once the tree has
    settled (set aside, a question for a person: after the tree, so that its commit carries the
    draft the tree kept and wrote on the task)."""

    run: Change | None
    log: Path
    commit: Commit | None
    beside: Change | None


def apply(ws: Workspace, task_id: str, outcome: BuildOutcome, attempt: Attempt, report: StageReport) -> None:
    """What the attempt came to, done: its changes worked out as one value (`changes`), then made
    in their order (the run's record, the work tree settled, what the plan adds beside the task),
    then the person told."""
    made = changes(ws, task_id, outcome, attempt)
    written = record(ws, task_id, *made.run) if made.run else None
    settled = settle_attempt(
        ws.tree,
        task_id,
        outcome.keep,
        made.log,
        hold=outcome.next is Next.AFTER_OTHERS,
        wait=outcome.next is Next.WAIT_FOR_CODE,
        reset_plan=outcome.write is Write.RESET,
        commit=made.commit,
    )
    asked = record(ws, task_id, *made.beside) if made.beside else None
    _tell(ws, task_id, outcome, attempt, report, Told(made.log, settled, written, asked))
    if outcome.next is Next.AFTER_NEIGHBOURS:
        raise StaleBase(task_id, outcome.failure, attempt.result)


def changes(ws: Workspace, task_id: str, outcome: BuildOutcome, attempt: Attempt) -> Changes:
    """What the attempt changes, as one value (Changes), from its outcome and its run."""
    log = _log_of(ws, task_id, outcome, attempt.result)
    return Changes(
        _run_change(task_id, outcome, attempt),
        log,
        _commit_of(task_id, outcome, attempt),
        _beside_change(task_id, outcome, attempt),
    )


def _run_change(task_id: str, outcome: BuildOutcome, attempt: Attempt) -> Change | None:
    """The run's own record on its task: its failure counted, its build (left for the build's
    commit), or its resubmission."""
    result, failure, write = attempt.result, outcome.failure, outcome.write
    usage = result.tracker.usage
    if outcome.counted and failure is not None:
        return Change(failed(failure, result), _failed_subject(task_id))
    if write is Write.BUILD:
        files = tuple(shown_path(path) for path in sorted(result.changed - {PLAN_FILE}))
        return Change(AttemptRecord(Recorded.BUILT, usage.total, usage.cost_usd, result.model, files), None)
    if write is Write.RESUBMISSION:
        subject = f"ralph(build): {task_id} resubmitted unchanged, with its argument"
        return Change(AttemptRecord(Recorded.RESUBMITTED, usage.total, usage.cost_usd), lambda _: subject)
    return None


def _log_of(ws: Workspace, task_id: str, outcome: BuildOutcome, result: AgentResult) -> Path:
    """The log the attempt's kept changes go beside: its run's, or one of their own when the
    attempt is given back uncounted (the plan's copy goes beside it too)."""
    if outcome.write is Write.RESET:
        kind = "stale" if outcome.exit is Exit.STALE_BASE else "deferred"
        return ws.agents.rel(ws.agents.new_log(kind, task_id))
    return result.log_path


def _commit_of(task_id: str, outcome: BuildOutcome, attempt: Attempt) -> Commit | None:
    """What the work tree commits as it settles: the agent's question, or the build's files with
    the plan that records it (named after the task, as its run left it), which the work tree
    records on the task (in a worktree: its copy, once merged)."""
    if outcome.write is Write.QUESTION:
        return Commit(f"ralph(build): {task_id} waits for an answer to {', '.join(attempt.questions)}")
    if outcome.keep is not Keep.COMMIT:
        return None
    files = sorted(attempt.changed - {PLAN_FILE})
    return Commit(f"ralph(build): {task_id} {attempt.name}", frozenset({*files, PLAN_FILE}), task_id)


def _beside_change(task_id: str, outcome: BuildOutcome, attempt: Attempt) -> Change | None:
    """What the plan adds beside the task once the tree has settled: its set-aside for DECOMPOSE,
    or ralph's question about the same failure twice."""
    write, result = outcome.write, attempt.result
    if write is Write.SET_ASIDE and outcome.kill is not None:
        return _set_aside_change(task_id, outcome.kill, str(result.log_path))
    if write is Write.ASK and attempt.counted is not None:
        text, by = same_twice_question(task_id, attempt.counted), "ralph (BUILD: the same failure twice)"
        asked = AttemptRecord(Recorded.ASKED, text=text, asked_at=now(), asked_by=by)
        return Change(asked, lambda q: f"ralph(build): {task_id} failed the same way twice; asks {q['id']}")
    return None


def set_aside(ws: Workspace, task_id: str, reason: KillReason, log: str) -> None:
    """Killed, or failed too often: set aside for DECOMPOSE."""
    record(ws, task_id, *_set_aside_change(task_id, reason, log))


def _set_aside_change(task_id: str, reason: KillReason, log: str) -> Change:
    aside = AttemptRecord(Recorded.SET_ASIDE, text=KILL_TEXT[reason], kill_reason=reason, kill_log=log)
    return Change(aside, lambda _: f"ralph(build): {task_id} killed ({reason})")


def record(
    ws: Workspace, task_id: str, attempt: AttemptRecord, subject: Callable[[Record], str] | None
) -> Record:
    """The attempt's one change to the plan (plan.attempts.record_attempt): committed, its
    `subject` said of what was written; without one (a build), left with the loop's spending for
    the build's commit to carry. What was written: the task, or the question asked."""
    with ws.plan.change(commit=subject is not None) as change:
        plan: Plan = change.plan
        written = plan.record_attempt(task_id, attempt)
        if subject is not None:
            change.message = subject(written)
        elif not ws.tree.in_worktree:  # the loop's own plan: the spending goes in with it
            ws.plan.save_spending(into=change.plan)
    return written


def record_failure(ws: Workspace, task_id: str, failure: Failure, result: AgentResult) -> int:
    """The attempt failed: back to pending with its verdict and the reason; the code stays for
    the next try."""
    said = record(ws, task_id, failed(failure, result), _failed_subject(task_id))
    attempts: int = said["attempts"]
    journal_failure(ws, task_id, attempts, failure, result)
    return attempts


def _failed_subject(task_id: str) -> Callable[[Record], str]:
    return lambda task: f"ralph(build): {task_id} attempt {task['attempts']} failed"


def journal_failure(
    ws: Workspace, task_id: str, attempts: int, failure: Failure, result: AgentResult
) -> None:
    ws.journal.event(
        "build_failed", item=task_id, attempts=attempts, verdict=failure.verdict, log=str(result.log_path)
    )


def failed(failure: Failure, result: AgentResult) -> AttemptRecord:
    """A failed attempt as the plan records it: its verdict and words, what its run used, and the
    files it changed (names its fingerprint takes out)."""
    usage, files = result.tracker.usage, tuple(sorted(result.changed - {PLAN_FILE}))
    return AttemptRecord(
        Recorded.FAILED, usage.total, usage.cost_usd, result.model, files, failure.verdict, failure.text
    )


def tell_failure(
    ws: Workspace, task_id: str, attempts: int, failure: Failure, report: StageReport, model: str | None
) -> None:
    """Why the attempt failed, and the model it ran with, where the person looks: the console
    (a failed gate's lines were shown as it ended) and the final report."""
    words, reason = VERDICT_WORDS[failure.verdict], failure.text.removeprefix(f"{failure.verdict}: ")
    attempt = f"attempt {attempts}" + (f" with {model}" if model else "")
    report.failed.append(f"{task_id} {attempt}: {words}: {gist(reason)}")
    shown = "" if failure.verdict == Verdict.GATE_FAILED else reason
    # In a worktree, builds run side by side: their lines name their task.
    said = f"{attempt} failed ({words})"
    ws.console.verdict("BUILD", task_id, said, shown, tagged=ws.tree.in_worktree)


class Told(NamedTuple):
    """What the person hears besides the outcome: the log the kept changes went beside, what the
    tree did (the branch the changes went on, the commit it made), the run's record as written
    (a counted failure's attempts) and ralph's question (as written)."""

    log: Path
    settled: Settled
    written: Record | None = None
    asked: Record | None = None


def _tell(
    ws: Workspace, task_id: str, outcome: BuildOutcome, attempt: Attempt, report: StageReport, told: Told
) -> None:
    """The journal, the console and the report hear what the attempt came to: its counted failure
    first, its commit, then how it ended."""
    result, settled = attempt.result, told.settled
    if outcome.counted and outcome.failure is not None and told.written is not None:
        attempts: int = told.written["attempts"]
        journal_failure(ws, task_id, attempts, outcome.failure, result)
        tell_failure(ws, task_id, attempts, outcome.failure, report, result.model)
    if settled.commit and outcome.keep is Keep.COMMIT:
        report.commits.append(settled.commit)
        report.builds.append(settled.commit)
    _tell_exit(ws, task_id, outcome, attempt, report, told)


def _tell_exit(
    ws: Workspace, task_id: str, outcome: BuildOutcome, attempt: Attempt, report: StageReport, told: Told
) -> None:
    """How the attempt ended, where the person looks (`told`: what the tree did, ralph's question)."""
    result, exit_, next_, settled, log = attempt.result, outcome.exit, outcome.next, told.settled, told.log
    asked = str(told.asked["id"]) if told.asked else None
    journal, console, run_log = ws.journal, ws.console, str(result.log_path)
    if outcome.kill is not None:
        reason = outcome.kill
        journal.event("task_killed", item=task_id, kill_reason=reason, log=run_log)
        then = "set aside for DECOMPOSE"
        report.stopped.append(f"{task_id} BUILD killed ({reason}), {then}; log {result.log_path}")
        console.event(f"{task_id} killed ({reason}); it will be decomposed")
    elif exit_ is Exit.LEFT_THE_PLAN:
        journal.event("task_left_the_plan", item=task_id, draft=settled.draft, log=run_log)
        if settled.draft:
            console.event(
                f"{task_id} left the plan during its build: its changes are kept on {settled.draft}"
            )
    elif exit_ is Exit.ASKED:
        ids = ", ".join(attempt.questions)
        report.commits += [settled.commit] if settled.commit else []
        journal.event("question_asked", item=task_id, questions=ids, log=run_log)
        console.event(f"{task_id} asked a question ({ids}); it waits for `ralph answer`")
    elif exit_ is Exit.RESUBMITTED:
        journal.event("resubmitted", item=task_id, log=run_log)
        console.event(f"{task_id} resubmitted unchanged; a fresh verifier judges it")
    elif exit_ is Exit.STALE_BASE and next_ is Next.AFTER_OTHERS:
        journal.event("build_stale_base", item=task_id, base=ws.tree.repo.head(), log=str(log))
        console.event(
            f"{task_id}: other runners' work this build may lack is published or under way; built again after"
        )
    elif exit_ is Exit.DEFERRED and outcome.failure is not None:
        others = attempt.others
        journal.event("build_deferred", item=task_id, others=len(others), log=run_log)
        console.event(
            f"{task_id}: {gist(outcome.failure.text)}; built again once other tasks have changed the"
            f" code ({plural(len(others), 'other task')} ready; not counted as an attempt)"
        )
    elif next_ is Next.FAMILY and attempt.counted is not None:
        ancestor, family = attempt.counted.ancestor, attempt.counted.family
        journal.event("failure_survived_split", item=task_id, ancestor=ancestor, family=family, log=run_log)
        console.event(f"{task_id} failed as its ancestor {ancestor} did: family {family} goes to a person")
    elif next_ is Next.PERSON and exit_ is Exit.FAILED:
        journal.event("question_asked", item=task_id, questions=asked, repeated=True, log=run_log)
        report.stopped.append(f"{task_id} failed the same way twice; question {asked} for a person")
        console.event(f"{task_id} failed the same way twice; it waits for `ralph answer {asked}`")


def same_twice_question(task_id: str, counted: Counted) -> str:
    """The question about a task that failed the same way twice and cannot be split further."""
    first, second = counted.repeated
    return (
        f"Task {task_id} failed the same way twice in a row and cannot be split further"
        f" (decomposed {counted.depth} times). How should it be done, or should it be"
        f" dropped?\n\nThe first failure:\n{first}\n\nThe second:\n{second}"
    )


def now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")
