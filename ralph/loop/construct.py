"""`ralph construct`: iterations of INVESTIGATE -> BUILD -> VERIFY (and DECOMPOSE for failed work)
until the spec's tasks are all accepted, a budget is spent, or nothing can make progress.

The loop only sequences stages, checks budgets and records outcomes; each stage acts through a
`Workspace` and returns a `StageReport`. Every state change goes through plan.jsonl; every unit of
finished work is a git commit. The agents run with RALPH_COMMIT=0, so their plan changes are
committed together with their code once ralph has checked the work (the gate after BUILD).
"""

from __future__ import annotations

import contextlib
import os
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, fields
from enum import Enum, StrEnum
from pathlib import Path
from typing import Any

from ralph import secrets
from ralph.agents import make_adapter
from ralph.errors import PlanInvalid, RemoteError, disk_full
from ralph.loop import preflight
from ralph.loop.observe import report_data
from ralph.loop.observe.console import Console
from ralph.loop.observe.journal import Journal
from ralph.loop.observe.remaining import remaining_lines
from ralph.loop.observe.report_data import (
    AcceptedTask,
    AspectReview,
    Draft,
    LeftTask,
    OpenIssue,
    OpenQuestion,
    ResolvedIssue,
    Spent,
)
from ralph.loop.process.hooks import Hooks
from ralph.loop.process.signals import deferred_signals, signal_number, stop_signals_interrupt
from ralph.loop.process.supervisor import BudgetSpent, Supervisor
from ralph.loop.runs.agent_process import LOG_DIR, AgentRunner, AgentUnavailable, SandboxFailed
from ralph.loop.runs.cost import CostSpent, CostUnknown, Spending, SpendingRow, TokensSpent, known_cost
from ralph.loop.runs.rate_limits import AgentAuthFailed, LimitTooLong
from ralph.loop.share.coordinator import Solo
from ralph.loop.stages import plan as stage_plan
from ralph.loop.stages.agent_errors import AgentFailing
from ralph.loop.stages.check import CheckStage, open_work, reviewed_after_check
from ralph.loop.stages.check_outcome import CheckOutcome
from ralph.loop.stages.modules import stage_run
from ralph.loop.stages.plan import PlanStage
from ralph.loop.stages.retries import Deadline
from ralph.loop.stages.review import ReviewStage, nothing_to_review, start_fields
from ralph.loop.stages.review_outcome import ReviewOutcome
from ralph.loop.stages.workspace import StageReport, StageRun, Workspace
from ralph.loop.tree.plan_access import PLAN_FILE
from ralph.plan import stage_declarations
from ralph.plan.plan import Plan
from ralph.plan.records import Stage
from ralph.plan.schedule import only_questions_left
from ralph.plan.scope import Coverage, coverage_total
from ralph.plan.stages import stage_of
from ralph.store import pending_ops
from ralph.store.git import Repo
from ralph.store.lock import CONSTRUCT_LOCK_NAME, exclusive_run
from ralph.store.reader import read_plan
from ralph.text import plural
from ralph.usecases.settings import Settings
from ralph.usecases.spec_checks import already_met, spec_digest

NO_PROGRESS_LIMIT = 2  # iterations in a row that change nothing before the loop gives up
# One iteration: failed work is split first, then issues, builds, splits of what BUILD killed, verdicts.
# The order is declared with each stage (ralph.plan.stage_declarations).
ITERATION: tuple[type[StageRun], ...] = tuple(
    stage_run(declared) for declared in stage_declarations.iteration()
)


class Outcome(Enum):
    """How a run ended; the value is the exit code (an interrupt's is 128 + its signal)."""

    COMPLETE = 0
    MAX_ITERATIONS = 3
    MAX_MINUTES = 4
    STUCK = 5
    AGENT_UNAVAILABLE = 6
    AGENT_AUTH = 7  # the agent CLI could not log in
    AGENT_LIMITED = 8  # a rate or usage limit lifts later than max_wait allows
    WAITING = 9  # what is left waits for a person's answers to questions (`ralph answer`)
    MAX_COST = 10  # the next run would pass the money budget
    REMOTE = 11  # the git remote runners share is unreachable, or refused a push (errors.EXIT_REMOTE)
    AGENT_FAILING = 12  # the agent failed without doing anything max_agent_failures times in a row
    MAX_TOKENS = 13  # the next run would pass the token budget, or a running one passed it
    DISK_FULL = 14  # git or ralph could not write (ENOSPC, EDQUOT): the change under way is undone later
    INTERRUPTED = 130


class Ending(StrEnum):
    """Which of an outcome's endings a run came to, where one outcome covers several (the report's
    and the journal's `ending`; None where the outcome says it all)."""

    PLANNED = "planned"  # `ralph plan`: PLAN ran and made tasks (outcome COMPLETE, exit 0)
    REVIEWED = "reviewed"  # `ralph review` without --fix: the review ran, its findings recorded (exit 0)
    PLAN_STOPPED = "plan_stopped"  # STUCK: the PLAN run was stopped (time, context), nothing kept
    PLAN_EMPTY = "plan_empty"  # STUCK: PLAN finished and added no task
    PLAN_FAILED = "plan_failed"  # STUCK: PLAN added no task, and its runs broke the stage's rules
    BLOCKED = "blocked"  # STUCK: only blocked tasks and issues kept open for a person are left
    NO_PROGRESS = "no_progress"  # STUCK: NO_PROGRESS_LIMIT iterations in a row changed nothing
    CHECK_STOPPED = "check_stopped"  # STUCK: the spec check was stopped (time, context), nothing kept
    CHECK_FAILED = "check_failed"  # STUCK: the spec check's agent failed (see its log), nothing kept
    REVIEW_FAILED = "review_failed"  # STUCK: no review aspect's run finished (see their logs), nothing kept
    COST_UNKNOWN = "cost_unknown"  # MAX_COST: a run's cost was unknown, so the money budget cannot hold


def _disk_full_message(exc: Exception) -> str:
    said = " ".join(str(exc).split()) or "No space left on device"
    return (
        f"the disk is full ({said}): what was under way is kept as interrupted; free some space,"
        " then run ralph construct again (or ralph doctor --fix), which undoes it onto its draft"
    )


def ended_as(outcome: Outcome, ending: str | None) -> str:
    """How a run's ending is named in its commit, the state record, the journal and its report:
    the outcome's name, but `ralph plan`'s PLANNED (its outcome COMPLETE, exit 0, says nothing of
    the spec being complete)."""
    if outcome is Outcome.COMPLETE and ending in (Ending.PLANNED, Ending.REVIEWED):
        return ending.upper()  # `ralph review`'s REVIEWED likewise
    return outcome.name


_AGENT_OUTCOMES: dict[type, Outcome] = {
    AgentAuthFailed: Outcome.AGENT_AUTH,
    LimitTooLong: Outcome.AGENT_LIMITED,
    AgentFailing: Outcome.AGENT_FAILING,
}
ERROR_OUTCOME = "ERROR"  # a run an error ended (printed in one line, or a crash log): its journal and hooks


@dataclass(frozen=True)
class Report:
    """How a run ended and what it did: built by the loop, printed by the command line (its text
    and its --json, from this one value)."""

    outcome: Outcome
    message: str
    exit_code: int
    iterations: int = 0
    accepted: list[str] = field(default_factory=list)
    remaining: list[str] = field(default_factory=list)
    log_dir: str = str(LOG_DIR)
    tokens: int = 0
    stopped: list[str] = field(default_factory=list)  # agent runs stopped (time, context) and what came of it
    questions: list[str] = field(default_factory=list)  # open questions of the spec, for a person
    failed: list[str] = field(default_factory=list)  # failed build attempts and VERIFY's rejections, and why
    cost_usd: float | None = 0.0  # of the runs whose cost is known; None: no run's is (unknown, not $0)
    unknown_cost_runs: int = 0
    by_stage: dict[str, Spent] = field(default_factory=dict)
    by_task: dict[str, Spent] = field(default_factory=dict)  # task or issue id -> what its runs spent
    resume: str = ""  # the command that goes on from here (set by the command line)
    agent_error: list[str] = field(default_factory=list)  # AGENT_FAILING: the agent's last lines, redacted
    began: bool = False  # the run got past its checks: what it says is a report, not an error
    # The same as data, for --json: each task accepted in this run or left, each open issue and
    # open question of the spec.
    tasks: list[AcceptedTask | LeftTask] = field(default_factory=list)
    issues: list[OpenIssue] = field(default_factory=list)
    open_questions: list[OpenQuestion] = field(default_factory=list)
    resolved: list[ResolvedIssue] = field(default_factory=list)  # issues resolved in the run
    ending: Ending | None = None  # which ending of its outcome, where the outcome has several
    drafts: list[Draft] = field(default_factory=list)  # unfinished work kept on a branch
    coverage: list[Coverage] = field(default_factory=list)  # scoped tasks' scope beside their files
    reviews: list[AspectReview] = field(default_factory=list)  # each review aspect's run and its findings

    @property
    def ended_as(self) -> str:
        """The ending's name as its commit says it (PLANNED for `ralph plan`; else the outcome's)."""
        return ended_as(self.outcome, self.ending)

    def to_json(self) -> dict[str, Any]:
        """Every field by its name, in order (docs/json-output.md): the outcome by its name, the
        items and spending rows as objects."""
        data: dict[str, Any] = {item.name: getattr(self, item.name) for item in fields(self)}
        return {
            **data,
            "outcome": self.outcome.name,
            "by_stage": {key: row.to_json() for key, row in self.by_stage.items()},
            "by_task": {key: row.to_json() for key, row in self.by_task.items()},
            "tasks": [task.to_json() for task in self.tasks],
            "issues": [issue.to_json() for issue in self.issues],
            "open_questions": [question.to_json() for question in self.open_questions],
            "resolved": [issue.to_json() for issue in self.resolved],
            "ending": self.ending.value if self.ending else None,
            "drafts": [draft.to_json() for draft in self.drafts],
            "reviews": [review.to_json() for review in self.reviews],
            "coverage": {
                "tasks": [row.to_json() for row in self.coverage],
                "total": coverage_total(self.coverage),
            },
        }


class Loop:
    def __init__(self, root: Path, settings: Settings, console: Console | None = None):
        self.root, self.settings = root, settings
        secrets.use_repository(root)  # its .env files' values are redacted (its worktrees have none)
        self.console = console or Console()
        self.journal = Journal(root / LOG_DIR / "events.jsonl")
        self.supervisor = Supervisor(settings.grace_s)
        self.hooks = Hooks(root, settings, self.supervisor, self.journal, LOG_DIR)
        self.journal.listener = self.hooks.notify
        adapter = make_adapter(settings.agent, settings.agent_cmd, settings.model, settings.agent_args)
        self.runner = AgentRunner(root, settings, adapter, self.journal, self.console, self.supervisor)
        self.deadline = Deadline(settings.max_minutes)
        self.supervisor.deadline_at = self.deadline.at
        self.ws: Workspace | None = None
        self.accepted: list[str] = []
        self.accepted_tasks: list[dict[str, Any]] = []
        self.stopped: list[str] = []
        self.failed: list[str] = []
        self.iterations_run = 0
        self.ending: Ending | None = None
        self.resolved_before: set[str] = set()  # the issues resolved with a note before the run
        self.agent_error: list[str] = []  # what a failing agent said last (AGENT_FAILING)
        self.reviewed: list[AspectReview] = []  # each review aspect's run in this run

    @property
    def workspace(self) -> Workspace:
        """The run's workspace: _prepare makes it before any stage runs."""
        assert self.ws is not None
        return self.ws

    # --- the loop -----------------------------------------------------------------------------
    def run(self, plan_only: bool = False) -> Report:
        try:
            return self._run(plan_only)
        finally:  # the live region goes whatever ended the run (an error is printed after it)
            pending_ops.own_record_fenced(False)  # what runs next in this process vouches anew
            self.console.close()
            if self.runner.sandbox is not None:
                self.runner.sandbox.close()
            if self.runner.logs is not None:
                self.journal.folder_fd = None
                self.runner.logs.close()

    def _run(self, plan_only: bool) -> Report:
        unavailable = preflight.agent_problem(self.runner)
        if unavailable:
            return self._report(Outcome.AGENT_UNAVAILABLE, str(unavailable))
        # Adopting orphans: a daemon an agent or gate starts (setsid) is ended with its run.
        with stop_signals_interrupt(), self._one_loop_per_repository(), self.supervisor.adopting_orphans():
            try:
                try:
                    self.ws = self._prepare(needs_gate=self._builds(plan_only))
                except SandboxFailed as exc:  # before anything changed: the named outcome, once
                    return self._report(Outcome.AGENT_UNAVAILABLE, str(exc))
                except RemoteError as exc:  # the shared remote, first fetched before the start's commit
                    return self._report(Outcome.REMOTE, str(exc), Outcome.REMOTE.value)
                except Exception as exc:  # settling an earlier run's change, on a disk still full
                    if not disk_full(exc):
                        raise
                    return self._report(Outcome.DISK_FULL, _disk_full_message(exc))
                span = self.journal.span("construct", spec=self.settings.spec)
                try:
                    outcome, message, exit_code = self._run_stages(plan_only)
                except Exception as exc:  # an error ends the run too: its run_ended hooks hear of it
                    span.end(outcome=ERROR_OUTCOME, message=f"{type(exc).__name__}: {exc}")
                    self.hooks.close()
                    raise
                span.end(outcome=self._ended_as(outcome), message=message, ending=self.ending)
                with contextlib.suppress(KeyboardInterrupt):  # the run ended, and is committed, before
                    self.hooks.close()  # the signal: its outcome stands, its notification goes out
            except KeyboardInterrupt as exc:  # stopped before the run began: nothing to undo
                return self._report(Outcome.INTERRUPTED, "interrupted", 128 + signal_number(exc))
        return self._report(outcome, message, exit_code)

    def _run_stages(self, plan_only: bool) -> tuple[Outcome, str, int]:
        try:
            outcome, message = self._stages(plan_only)
        except (CostSpent, TokensSpent) as exc:
            outcome, message = self._money_or_tokens_spent(exc)
        except BudgetSpent as exc:
            outcome, message = self._time_spent(exc)
        except AgentUnavailable as exc:
            outcome, message = Outcome.AGENT_UNAVAILABLE, str(exc)
        except RemoteError as exc:  # the shared remote is unreachable or refuses: one line, exit 11
            outcome, message = Outcome.REMOTE, str(exc)
        except (AgentAuthFailed, LimitTooLong, AgentFailing) as exc:
            outcome, message = self._agent_failed(exc)
        except KeyboardInterrupt as exc:
            signum = signal_number(exc)
            with deferred_signals():
                self._on_interrupt(signum)
                self._release_claims(quietly=True)
            return Outcome.INTERRUPTED, "interrupted; run `ralph construct` again to resume", 128 + signum
        except Exception as exc:  # any other error ends the run too: its claims go back, as after Ctrl-C
            if disk_full(exc):
                return self._disk_full(exc)
            with deferred_signals(), contextlib.suppress(Exception):  # the error to report is the first
                self._release_claims(quietly=True)
            raise
        with deferred_signals():  # the ending's commit is not cut in half by a late signal
            self._commit_loose_state(outcome)
        try:
            # A remote that just failed every retry is tried once more, not retried all over again.
            self._release_claims(quietly=outcome is Outcome.REMOTE)
        except RemoteError as exc:
            return Outcome.REMOTE, str(exc), Outcome.REMOTE.value
        return outcome, message, outcome.value

    def _disk_full(self, exc: Exception) -> tuple[Outcome, str, int]:
        """git or ralph could not write: the run ends DISK_FULL, committing nothing more (it could
        not). What was under way stays recorded as interrupted (a build in this work tree, a
        commit: ralph.store.intent), and the next start (or `ralph doctor --fix`) undoes or
        finishes it once there is room: its files are never taken for the person's."""
        with deferred_signals(), contextlib.suppress(Exception):
            self.supervisor.stop_all()
            self._release_claims(quietly=True)
        with contextlib.suppress(OSError):
            self.journal.event("disk_full", error=str(exc))
        return Outcome.DISK_FULL, _disk_full_message(exc), Outcome.DISK_FULL.value

    def _money_or_tokens_spent(self, exc: CostSpent | TokensSpent) -> tuple[Outcome, str]:
        outcome = Outcome.MAX_COST if isinstance(exc, CostSpent) else Outcome.MAX_TOKENS
        if isinstance(exc, CostUnknown):
            self.ending = Ending.COST_UNKNOWN
        message = str(exc)
        if exc.stopped_run:  # a running agent passed the budget: as after Ctrl-C, its work waits
            with deferred_signals():
                self.supervisor.stop_all()  # the other runs going too
                log = self._set_aside_unfinished("budget")
            self.journal.event("budget_spent", budget=outcome.name, stopped_run=True, log=str(log))
            message += " with the other runs going, their work set aside"
        return outcome, message

    def _time_spent(self, exc: BudgetSpent) -> tuple[Outcome, str]:
        if not exc.stopped_run:
            return Outcome.MAX_MINUTES, str(exc)
        with deferred_signals():  # an agent or gate stopped half-way: as after Ctrl-C, its work waits
            self.supervisor.stop_all()  # the other verifiers too
            log = self._set_aside_unfinished("budget")
        self.journal.event("budget_spent", stopped_run=True, log=str(log))
        minutes = f"{self.settings.max_minutes:g} minutes"
        return (
            Outcome.MAX_MINUTES,
            f"the time budget ({minutes}) is spent: the running agent was stopped, its work set aside",
        )

    def _agent_failed(self, exc: AgentAuthFailed | LimitTooLong | AgentFailing) -> tuple[Outcome, str]:
        outcome, message = _AGENT_OUTCOMES[type(exc)], str(exc)
        self.agent_error = exc.lines if isinstance(exc, AgentFailing) else []
        with deferred_signals():  # what the failed run left is set aside, as after Ctrl-C
            self.supervisor.stop_all()
            log = self._set_aside_unfinished(outcome.name.lower())
        self.journal.event(outcome.name.lower(), message=message, log=str(log))
        return outcome, message

    def _release_claims(self, quietly: bool = False) -> None:
        """With --remote: the claims the run still holds go back, and its commits are pushed.
        Quietly (after an interrupt): once, errors ignored; the claims expire anyway."""
        if self.ws is not None:
            self.ws.coordinator.release(quietly)

    def _commit_loose_state(self, outcome: Outcome) -> None:
        """Leave nothing uncommitted: the loop's last state change goes in with the ending."""
        self.workspace.plan.save_spending()
        self.workspace.tree.commit_beside()
        self.workspace.tree.drop_accepted_drafts()  # accepted meanwhile (by another runner, caught up with)
        with self.workspace.plan.change(commit=True) as change:
            change.plan.update_state(stage=self._ended_as(outcome))
            change.message = f"ralph: construct {self.settings.spec} ended: {self._ended_as(outcome)}"

    def _ended_as(self, outcome: Outcome) -> str:
        return ended_as(outcome, self.ending)

    def _builds(self, plan_only: bool) -> bool:
        """Whether the run may build (its gate is checked before it starts)."""
        return not plan_only

    def _stages(self, plan_only: bool) -> tuple[Outcome, str]:
        """The run's stages: PLAN alone (`ralph plan`), or the iterations."""
        return self._plan_only() if plan_only else self._iterate()

    def _based(self, plan: Plan, head: str | None) -> dict[str, object]:
        """What the run records of its base in the state record (stage_review.start_fields)."""
        return start_fields(plan, self.settings.spec, head)

    def _iterate(self, plan_first: bool = True) -> tuple[Outcome, str]:
        coordinator = self.workspace.coordinator  # runners sharing a git remote: one of them plans
        if (
            plan_first
            and self._needs_planning()
            and coordinator.claims_spec(stage_declarations.BY_NAME["PLAN"])
        ):
            planned = self._stage(PlanStage, self.read_plan().iteration())
            coordinator.spec_done()
            if self._complete():
                return self._stuck(*_no_plan(planned))
        unchanged = 0
        for _ in range(self.settings.max_iterations):
            ended = self._ended_by_check()
            if ended:
                return ended
            waiting = self._waiting()
            if waiting:
                return Outcome.WAITING, waiting
            if self._blocked():
                return self._stuck(
                    Ending.BLOCKED, "what is left is blocked: a person must decide (see below)"
                )
            before = self._work_snapshot()
            self._iteration()
            unchanged = unchanged + 1 if self._work_snapshot() == before else 0
            if unchanged >= NO_PROGRESS_LIMIT:
                why = f"no progress in {NO_PROGRESS_LIMIT} iterations: the remaining work is stuck"
                return self._stuck(Ending.NO_PROGRESS, why)
        ended = self._ended_by_check()
        if ended:
            return ended
        waiting = self._waiting()
        if waiting:
            return Outcome.WAITING, waiting
        return Outcome.MAX_ITERATIONS, f"the iteration budget ({self.settings.max_iterations}) is spent"

    def _ended_by_check(self) -> tuple[Outcome, str] | None:
        """With every task of the spec accepted: the spec check (stage_check), then the review
        (stage_review), which end the run COMPLETE when they find nothing; None while there is
        work (they may have added some). Once a review round has run since the run's base, after a
        spec check that found nothing, its findings built are reviewed again, not checked again."""
        plan = self.read_plan()
        if open_work(plan, self.settings.spec):  # the cut of an earlier check waits for this one
            return None
        if reviewed_after_check(plan, self.settings.spec):
            return self._ended_by_review()
        outcome = self._check_spec(plan)
        if outcome is CheckOutcome.STOPPED:
            why = (
                "the spec check was stopped and nothing of it kept: give it more time (--timeout), run again"
            )
            return self._stuck(Ending.CHECK_STOPPED, why)
        if outcome is CheckOutcome.FAILED:
            return self._stuck(
                Ending.CHECK_FAILED, "the spec check's agent run failed, nothing of it kept (see below)"
            )
        if outcome in (CheckOutcome.MET, CheckOutcome.ALREADY_MET):  # it added nothing
            if open_work(self.read_plan(), self.settings.spec):
                return None  # a person added work while it ran: the run goes on with it
            return self._ended_by_review()
        return None

    def _ended_by_review(self) -> tuple[Outcome, str] | None:
        """The review round due, if any (stage_review): COMPLETE when it finds nothing or none
        is due; None while there is work."""
        outcome = self._review()
        if outcome is ReviewOutcome.FAILED:
            why = "no review aspect's run finished, nothing of them kept (see below): run again"
            return self._stuck(Ending.REVIEW_FAILED, why)
        if outcome in (None, ReviewOutcome.ADDED) or open_work(self.read_plan(), self.settings.spec):
            return None
        said = ", and the review found nothing more" if outcome is ReviewOutcome.CLEAN else ""
        return (
            Outcome.COMPLETE,
            f"every task of the spec is accepted, and the spec check found nothing missing{said}",
        )

    def _review(self) -> ReviewOutcome | None:
        """The review round, run here; with --remote only by the runner that claims the spec for
        it, as the spec check is. None: not run here (another runner did, or work came in)."""
        coordinator = self.workspace.coordinator
        if not coordinator.claims_spec(stage_declarations.BY_NAME["REVIEW"], self._nothing_to_review):
            plan = self.read_plan()  # as the remote has it now: reviewed by another runner, or not
            reviewed = not open_work(plan, self.settings.spec) and self._nothing_to_review(plan)
            return ReviewOutcome.NOT_DUE if reviewed else None
        plan = self.read_plan()
        review = ReviewStage(self.workspace, plan)
        try:
            self._take_report(review.run(plan.iteration()))
        finally:
            self.reviewed += review.reviewed
            coordinator.spec_done()
        return review.outcome

    def _nothing_to_review(self, plan: Plan) -> bool:
        """No review round due, or none with a change to read: here, nor on the shared branch."""
        heads = ("HEAD", *filter(None, [self.workspace.coordinator.shared_head()]))
        return nothing_to_review(plan, self.settings, self.workspace.tree.repo, heads)

    def _check_spec(self, plan: Plan) -> CheckOutcome | None:
        """The spec check, run here; with --remote only by the runner that claims the spec for it
        (the others wait for its verdict, or go on with the work it added). None: not run here."""
        coordinator = self.workspace.coordinator
        # Not here when another runner checked, or added work meanwhile.
        if not coordinator.claims_spec(stage_declarations.BY_NAME["CHECK"], self._already_met):
            plan = self.read_plan()  # as the remote has it now
            complete = not open_work(plan, self.settings.spec)
            return CheckOutcome.ALREADY_MET if complete and self._already_met(plan) else None
        if not isinstance(coordinator, Solo):
            plan = self.read_plan()  # its claim brought in the other runners' work
        check = CheckStage(self.workspace, plan)
        try:
            self._take_report(check.run(plan.iteration()))
        finally:
            coordinator.spec_done()
        return check.outcome

    def _already_met(self, plan: Plan) -> bool:
        spec = self.settings.spec
        return already_met(self.workspace.tree.repo, plan, spec, spec_digest(self.root, spec))

    def _stuck(self, ending: Ending, message: str) -> tuple[Outcome, str]:
        self.ending = ending
        return Outcome.STUCK, message

    def _plan_only(self) -> tuple[Outcome, str]:
        planned = self._stage(PlanStage, self.read_plan().iteration())
        if self._complete():
            return self._stuck(*_no_plan(planned))
        self.ending = Ending.PLANNED
        return Outcome.COMPLETE, f"planned {len(self.workspace.plan.tasks())} tasks"

    def _iteration(self) -> None:
        plan = self.read_plan()
        number = plan.iteration() + 1
        self.iterations_run += 1
        self.workspace.plan.set_state(iteration=number, stage="INVESTIGATE")
        span = self.journal.span("iteration", iteration=number)
        self.console.event(f"iteration {number}")
        self._progress(plan)  # set_state changed no task
        if self.iterations_run > 1:  # another runner may have accepted a task this run kept a draft of
            self.workspace.tree.drop_accepted_drafts()
        for stage in ITERATION:
            self._stage(stage, number)
        span.end()

    def _stage(self, stage: type[StageRun], iteration: int) -> StageReport:
        self.workspace.tree.commit_beside()  # a person's commands since: theirs, in commits of their own
        report = stage(self.workspace).run(iteration)
        if report.accepted_tasks:
            self.workspace.tree.drop_drafts(report.accepted_tasks)
        self._take_report(report)
        if stage is PlanStage or report.accepted or report.commits:
            self._progress(self.read_plan())  # what it accepted, and what it added (INVESTIGATE, VERIFY, ...)
        return report

    def _take_report(self, report: StageReport) -> None:
        self.accepted += report.accepted
        self.accepted_tasks += report.accepted_tasks
        self.stopped += report.stopped
        self.failed += report.failed

    def _progress(self, plan: Plan) -> None:
        """Accepted of total and the budgets, for the live view (and `ralph watch`, from the journal)."""
        spec = self.settings.spec
        served = plan.doc.values_of("accept", "spec")  # not a record made of 10,000 finished tasks
        accepted = served.count(None) + (served.count(spec) if spec is not None else 0)
        fields = {
            "accepted": accepted,
            "total": accepted + len(self.workspace.plan.tasks(plan)),
            "max_iterations": self.settings.max_iterations,
            "max_minutes": self.settings.max_minutes,
            "max_cost_usd": self.settings.max_cost_usd,
        }
        self.console.progress(**fields)
        self.journal.event("progress", **fields)

    # --- preparing and reading ----------------------------------------------------------------
    def _one_loop_per_repository(self) -> AbstractContextManager[None]:
        # Two loops in one work tree would build the same task twice and mix their work in one commit.
        return exclusive_run(self._construct_lock(), "ralph construct")

    def _construct_lock(self) -> Path:
        return Repo(self.root).git_dir() / CONSTRUCT_LOCK_NAME

    def _clean_up_after_a_killed_run(self) -> None:
        """What a killed run recorded making is cleaned up as `ralph doctor --fix` would: its
        worktrees removed (their changes kept as patches), its merged branches deleted, its
        branches with unmerged work kept and named."""
        from ralph.usecases.doctor import clean_after_killed_run

        for line in clean_after_killed_run(self.root, self._construct_lock()):
            self.journal.event("cleaned_up", what=line)
            self.console.event(f"cleaned up after an earlier run: {line}")

    def _settle_interrupted_changes(self) -> None:
        """A merge, commit or PLAN a killed run cut in half is finished or undone (each kind's
        record says which: ralph.store.intent), one line each."""
        from ralph.usecases.doctor import finish_interrupted

        for line in finish_interrupted(self.root):
            self.journal.event("interrupted_change", what=line)
            self.console.event(f"after an earlier run: {line}")

    def _prepare(self, needs_gate: bool) -> Workspace:
        # The same checks `--dry-run` lists (ralph/loop/preflight.py); here the first one stops the run.
        for refusal in preflight.start_problems(self.root, self.settings, needs_gate, self.runner.adapter):
            raise refusal
        self._settle_interrupted_changes()  # before anything reads the plan or the work tree
        self._open_log_folder()
        with open(self.journal.path, "a", encoding="utf-8"):
            pass  # a log folder ralph cannot write stops the run before it commits anything
        self._fence()
        self._say_skill_problems()
        if not (self.root / PLAN_FILE).exists():
            from ralph.usecases.initialize import init

            init(self.root)
        ws = Workspace.at(self.root, self.settings, self.runner, self.journal, self.console, self.deadline)
        dirty = preflight.dirty_paths(self.root)
        problem = preflight.dirty_problem(dirty, self.settings)
        if problem:
            raise problem
        ws.tree.user_dirty = frozenset(dirty)
        # The loop loads its plan many times: every line's head read once now (in passes of C), each
        # later load looks its lines up instead of reading a long history's starts again each time.
        ws.plan.read().doc.heads()
        ws.tree.repo.state.run_branch = ws.tree.repo.branch()  # nothing of the run lands on another one
        self._clean_up_after_a_killed_run()  # after every check that may refuse the run
        coordinator = None
        if self.settings.remote:  # runners on several machines: BUILD claims through the remote
            from ralph.loop.share.remote import RemoteCoordinator

            coordinator = RemoteCoordinator(
                self.root,
                self.settings.spec,
                self.settings.remote,
                self.settings.runner,
                self.settings.claim_ttl_s,
                check=self.deadline.check,
                journal=self.journal,
            )
            coordinator.hold_name()  # one live run per runner name on this host
            ws.coordinator = coordinator
        ws.tree.drop_accepted_drafts()  # accepted since the draft was made (by a person, another runner)
        ws.tree.commit_beside(earlier_runs=True)  # a person's commands beside a run that died first
        if coordinator is not None:
            coordinator.join()  # the start recorded on the remote's work, not a stale clone's
        # What REVIEW reads the change since: the run's start, or the branch's base (`ralph review`).
        with ws.plan.change(commit=True) as change:
            based = self._based(change.plan, ws.tree.repo.head())
            change.plan.add_spec(self.settings.spec)
            if based:
                change.plan.update_state(**based)
            change.message = f"ralph: construct {self.settings.spec}"
            self.resolved_before = set(change.plan.resolutions())
        started = self.runner.started = ws.tree.repo.head()
        if started is not None:  # what judges read, as the run's first commit has it
            from ralph.loop.runs.judged import JudgedInputs

            self.runner.judged = JudgedInputs(ws.tree.repo, started, self.root / LOG_DIR)
        return ws

    def _open_log_folder(self) -> None:
        """The log folder as this run decides it now (ralph.loop.observe.log_folder): refused when it is
        a link; its journal written through the folder opened here."""
        from ralph.loop.observe.log_folder import LogFolder

        logs = LogFolder(self.root, LOG_DIR)
        logs.open()
        self.runner.logs = logs
        self.journal.folder_fd = logs.fd

    def _fence(self) -> None:
        """Make the sandbox every agent and gate runs in (--sandbox), or say once why there is none.
        Raises SandboxUnavailable (exit 1) when it is required and this system has none."""
        from ralph.loop.process import sandbox

        settings = self.settings
        state = self.runner.adapter.state_paths
        logs = (self.root / LOG_DIR,)  # ralph writes the logs and the journal; a run may only read them
        fence, said = sandbox.make(settings.sandbox, self.root, state, settings.sandbox_hide, logs)
        self.runner.sandbox = self.hooks.sandbox = fence
        pending_ops.own_record_fenced(fence is not None)  # else its own record is replayed too
        for refused in self.hooks.refused:  # a hook naming a file of the work tree no commit has
            self.console.event(refused)
        if fence is not None:
            program = self.runner.adapter.invocation("", "", {}).argv[0]
            unseen = sandbox.unseen_program(fence, program, os.environ.get("PATH"))
            if unseen:  # every run would fail "without doing anything": said once, before any
                raise SandboxFailed(unseen)
            fence.make_state_folders(Path.home())
        self.journal.event(
            "sandbox", mode=settings.sandbox, on=fence is not None, program=fence.program if fence else None
        )
        if fence is None and settings.sandbox == "auto":
            self.console.event(said)
        if (
            fence is not None
            and not settings.sandbox_hide
            and sandbox.first_fenced_run(Repo(self.root).git_dir())
        ):
            self.console.event(sandbox.HIDE_HINT)
        installed = fence.installed_inside(self.root) if fence is not None else []
        if installed and sandbox.first_fenced_run(Repo(self.root).git_dir(), sandbox.PREFIX_TOLD_NAME):
            self.console.event(sandbox.PREFIX_HINT.format(where=" and ".join(map(str, installed))))

    def _say_skill_problems(self) -> None:
        """A SKILL.md whose front matter cannot be read: one line each, once; prompts leave it out."""
        from ralph.loop.runs.skills import in_work_tree

        for problem in in_work_tree(self.root)[1]:
            self.console.event(f"warning: skill not listed in prompts: {problem}")

    def read_plan(self) -> Plan:
        return self.workspace.plan.read()

    def _complete(self) -> bool:
        plan = self.read_plan()
        return not self.workspace.plan.tasks(plan) and not self.workspace.plan.issues(plan)

    def _blocked(self) -> bool:
        plan = self.read_plan()
        tasks = [task.record for task in self.workspace.plan.tasks(plan)]
        return stage_of(tasks, self.workspace.plan.issues(plan)) is Stage.BLOCKED

    def _waiting(self) -> str:
        """Why the run can only wait for answers (empty when it can do something else): the spec's
        open questions hold every task left, directly or through dependencies, and there is
        nothing to investigate, build, verify or decompose."""
        plan = self.read_plan()
        asked = plan.questions(self.settings.spec)
        if not asked:
            return ""
        tasks = [task.record for task in self.workspace.plan.tasks(plan)]
        if not only_questions_left(tasks, self.workspace.plan.issues(plan), asked):
            return ""
        return (
            f"what is left waits for {plural(len(asked), 'answer')}: answer each question with"
            ' `ralph answer ID "text"`, then run `ralph construct` again'
        )

    def _needs_planning(self) -> bool:
        return stage_plan.needed(self.read_plan(), self.settings.spec)

    def _work_snapshot(self) -> list[bytes]:
        """The plan's lines but the state record's, which every iteration rewrites: equal before
        and after an iteration, it changed no work. Sliced around the state lines: no pass of
        Python over a long history's lines."""
        doc = self.read_plan().doc
        raws, kept, start = doc.raws(), [], 0
        for at in doc.positions("state"):
            kept += raws[start:at]
            start = at + 1
        return kept + raws[start:]

    # --- ending -------------------------------------------------------------------------------
    def _on_interrupt(self, signum: int) -> None:
        """Stop every child, set the interrupted unit's partial work aside, and leave the plan as
        last committed, so the next run redoes that unit."""
        self.supervisor.stop_all()
        log = self._set_aside_unfinished("interrupted")
        self.journal.event("interrupted", signal=signum, log=str(log))

    def _set_aside_unfinished(self, why: str) -> Path:
        """The stopped unit's partial work saved as a patch and undone, the plan as last committed;
        a build's work is kept on its task's draft branch too, which the plan then records."""
        log = self.runner.new_log(why)
        ws = self.workspace
        if ws.tree.agents_elsewhere:  # parallel builds: each sets its own worktree's work aside
            ws.tree.leave_foreign_changes(f"when the run was {why}", among=ws.tree.changed_paths())
            ws.tree.reset_plan(self.root / log.with_suffix(".plan.jsonl"))
            return log.relative_to(self.root)
        task_id = ws.agents.current_build
        draft = ws.tree.keep_draft(task_id) if task_id else None
        ws.tree.set_aside(log.relative_to(self.root))
        ws.tree.reset_plan(self.root / log.with_suffix(".plan.jsonl"))
        if task_id and draft:
            ws.plan.record_draft(task_id, draft, commit=True)
        return log.relative_to(self.root)

    def _report(self, outcome: Outcome, message: str, exit_code: int | None = None) -> Report:
        spent = self.ws.agents.spending if self.ws else None
        return Report(
            outcome,
            message,
            outcome.value if exit_code is None else exit_code,
            self.iterations_run,
            self.accepted,
            self._remaining(),
            str(LOG_DIR),
            self.ws.agents.tokens if self.ws else 0,
            self.stopped,
            self._questions(),
            self.failed,
            began=self.ws is not None,
            ending=self.ending,
            agent_error=self.agent_error,
            **self._items(),
            **(_spending(spent) if spent is not None else {}),
        )

    def _items(self) -> dict[str, Any]:
        """The report's tasks, issues and questions as data (--json)."""
        accepted: list[AcceptedTask | LeftTask] = [
            AcceptedTask(task["id"], task["name"]) for task in self.accepted_tasks
        ]
        if not (self.root / PLAN_FILE).exists():
            return {"tasks": accepted, "reviews": self.reviewed}
        try:
            plan = read_plan(self.root)
        except PlanInvalid:
            return {"tasks": accepted, "reviews": self.reviewed}
        spec = self.settings.spec
        return {
            "tasks": accepted + report_data.left_tasks(plan, spec),
            "issues": report_data.open_issues(plan, spec),
            "resolved": report_data.resolved_issues(plan, spec, self.resolved_before),
            "open_questions": report_data.open_questions(plan, spec),
            "drafts": report_data.drafts(plan, spec),
            "coverage": report_data.coverages(plan, spec, self.accepted_tasks),
            "reviews": report_data.reviews(plan, self.reviewed),
        }

    def _questions(self) -> list[str]:
        """The spec's open questions, for a person: what, which task, since when, who asked."""
        if not (self.root / PLAN_FILE).exists():
            return []
        try:
            asked = read_plan(self.root).questions(self.settings.spec)
        except PlanInvalid:
            return []
        return [
            f"{q['id']} on {q.get('task')}: {q['text'][:200]} (asked {q.get('asked_at', '?')}"
            f" by {q.get('asked_by') or 'unknown'})"
            for q in asked
        ]

    def _remaining(self) -> list[str]:
        """What is left of the spec: its tasks and open issues, each with why it is not done."""
        if not (self.root / PLAN_FILE).exists():
            return []
        try:
            plan = read_plan(self.root)
        except PlanInvalid as exc:
            return [f"plan.jsonl does not load: {exc}"]
        return remaining_lines(plan, self.settings.spec)


def _spending(spent: Spending) -> dict[str, Any]:
    """The report's cost, in all and per stage and task."""
    return {
        "cost_usd": known_cost(spent.cost_usd, spent.known_runs, spent.unknown_runs),
        "unknown_cost_runs": spent.unknown_runs,
        "by_stage": _known_rows(spent.by_stage),
        "by_task": _known_rows(spent.by_item),
    }


def _known_rows(table: dict[str, SpendingRow]) -> dict[str, Spent]:
    """Spending rows (stage or item -> runs, tokens, cost_usd, unknown_runs, model, models) as
    the report gives them: a row none of whose runs' cost is known has cost_usd None."""
    return {
        key: Spent(
            runs=row["runs"],
            tokens=row["tokens"],
            cost_usd=known_cost(row["cost_usd"], row["runs"] - row["unknown_runs"], row["unknown_runs"]),
            unknown_runs=row["unknown_runs"],
            model=row.get("model"),
            models=tuple(row.get("models") or ()),
        )
        for key, row in table.items()
    }


def _no_plan(planned: StageReport) -> tuple[Ending, str]:
    """Why a spec has no tasks after its PLAN stage."""
    if planned.stopped:
        return (
            Ending.PLAN_STOPPED,
            "the PLAN run was stopped and nothing of it kept: give it more time (--timeout) or split the"
            " spec",
        )
    if planned.failed:  # runs that broke the stage's rules: undone, tasks and all (stage_plan)
        return Ending.PLAN_FAILED, "the PLAN stage added no tasks: its runs broke the stage's rules (below)"
    return Ending.PLAN_EMPTY, "the PLAN stage added no tasks; see its log"
