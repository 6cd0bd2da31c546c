"""`ralph construct`: iterations of INVESTIGATE -> BUILD -> VERIFY (and DECOMPOSE for failed work)
until the spec's tasks are all accepted, a budget is spent, or nothing can make progress.

Every state change goes through plan.jsonl; every unit of finished work is a git commit. The
agents run with RALPH_COMMIT=0, so their plan changes are committed together with their code
once ralph has checked the work (the gate after BUILD).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ralph import ops, process, store
from ralph.agentrun import LOG_DIR, AgentResult, AgentRunner, AgentUnavailable
from ralph.agents import make_adapter
from ralph.console import Console
from ralph.errors import InvalidInput, PlanInvalid, Refused
from ralph.journal import Journal
from ralph.plan import Plan
from ralph.settings import Settings
from ralph.stage_build import BuildStage
from ralph.stage_decompose import DecomposeStage
from ralph.stage_verify import VerifyStage
from ralph.worktree import WorkTree

PLAN_FILE = store.PLAN_NAME
NO_PROGRESS_LIMIT = 2  # iterations in a row that change nothing before the loop gives up


@dataclass(frozen=True)
class Outcome:
    name: str
    exit_code: int


COMPLETE = Outcome("COMPLETE", 0)
MAX_ITERATIONS = Outcome("MAX_ITERATIONS", 3)
MAX_MINUTES = Outcome("MAX_MINUTES", 4)
STUCK = Outcome("STUCK", 5)
AGENT_UNAVAILABLE = Outcome("AGENT_UNAVAILABLE", 6)
INTERRUPTED = Outcome("INTERRUPTED", 130)


class BudgetSpent(Exception):
    pass


@dataclass
class Report:
    outcome: Outcome
    message: str
    iterations: int = 0
    accepted: list[str] = field(default_factory=list)
    remaining: list[str] = field(default_factory=list)
    log_dir: str = str(LOG_DIR)
    tokens: int = 0


class Loop:
    def __init__(self, root: Path, settings: Settings, console: Console | None = None):
        self.root, self.settings = root, settings
        self.console = console or Console()
        self.journal = Journal(root / LOG_DIR / "events.jsonl")
        self.adapter = make_adapter(settings.agent, settings.agent_cmd, settings.model, settings.agent_args)
        self.runner = AgentRunner(root, settings, self.adapter, self.journal, self.console)
        self.worktree: WorkTree | None = None
        self.user_dirty: set[str] = set()
        self.accepted: list[str] = []
        self.iterations_run = 0
        self.tokens = 0
        self.started = time.monotonic()

    # --- the loop -----------------------------------------------------------------------------
    def run(self, plan_only: bool = False) -> Report:
        try:
            self.runner.require_program()
        except AgentUnavailable as exc:
            return self._report(AGENT_UNAVAILABLE, str(exc))
        self._prepare()
        span = self.journal.span("construct", spec=self.settings.spec)
        try:
            outcome, message = self._plan_only() if plan_only else self._iterate()
        except BudgetSpent as exc:
            outcome, message = MAX_MINUTES, str(exc)
        except AgentUnavailable as exc:
            outcome, message = AGENT_UNAVAILABLE, str(exc)
        except KeyboardInterrupt:
            self._on_interrupt()
            outcome, message = INTERRUPTED, "interrupted; run `ralph construct` again to resume"
        if outcome is not INTERRUPTED:
            self._commit_loose_state(outcome)
        span.end(outcome=outcome.name)
        self.console.close()
        return self._report(outcome, message)

    def _commit_loose_state(self, outcome: Outcome) -> None:
        """Leave nothing uncommitted: the loop's last state change goes in with the ending."""
        with store.transaction(self.root, fold_earlier=True) as change:
            change.plan.update_state(stage=outcome.name)
            change.message = f"ralph: construct {self.settings.spec} ended: {outcome.name}"

    def _iterate(self) -> tuple[Outcome, str]:
        if self._needs_planning():
            self._plan_stage()
            if self._complete():
                return STUCK, "the PLAN stage added no tasks; see its log"
        unchanged = 0
        for _ in range(self.settings.max_iterations):
            if self._complete():
                return COMPLETE, "every task of the spec is accepted"
            before = self._work_snapshot()
            self._iteration()
            unchanged = unchanged + 1 if self._work_snapshot() == before else 0
            if unchanged >= NO_PROGRESS_LIMIT:
                return STUCK, f"no progress in {NO_PROGRESS_LIMIT} iterations: the remaining work is stuck"
        if self._complete():
            return COMPLETE, "every task of the spec is accepted"
        return MAX_ITERATIONS, f"the iteration budget ({self.settings.max_iterations}) is spent"

    def _plan_only(self) -> tuple[Outcome, str]:
        self._plan_stage()
        if self._complete():
            return STUCK, "the PLAN stage added no tasks; see its log"
        return COMPLETE, f"planned {len(self.tasks())} tasks"

    def _iteration(self) -> None:
        number = self.read_plan().iteration() + 1
        self.iterations_run += 1
        self.set_state(iteration=number, stage="INVESTIGATE")
        span = self.journal.span("iteration", iteration=number)
        self.console.event(f"iteration {number}")
        DecomposeStage(self).run(number)
        self.investigate_stage(number)
        BuildStage(self).run(number)
        DecomposeStage(self).run(number)
        VerifyStage(self).run(number)
        span.end()

    # --- preparing and reading ----------------------------------------------------------------
    def _prepare(self) -> None:
        spec = self.root / self.settings.spec
        if not spec.is_file():
            raise InvalidInput(f"no spec file {self.settings.spec}")
        if not (self.root / PLAN_FILE).exists():
            ops.init(self.root)
        self.worktree = WorkTree(self.root)
        dirty = self.worktree.changed_paths() - {PLAN_FILE}
        if dirty and not self.settings.allow_dirty:
            shown = ", ".join(sorted(dirty)[:5]) + (f" (+{len(dirty) - 5} more)" if len(dirty) > 5 else "")
            raise Refused(f"uncommitted changes: {shown}; commit or stash them, or pass --allow-dirty")
        self.user_dirty = dirty
        with store.transaction(self.root) as change:
            plan = change.plan
            if self.settings.spec not in plan.specs():
                plan.doc.append({"t": "spec", "path": self.settings.spec})
            plan.update_state(spec=self.settings.spec)
            change.message = f"ralph: construct {self.settings.spec}"

    def read_plan(self) -> Plan:
        return store.read_plan(self.root)

    def _mine(self, record: dict) -> bool:
        return record.get("spec") in (None, self.settings.spec)

    def tasks(self, plan: Plan | None = None) -> list[dict]:
        return [task for task in (plan or self.read_plan()).tasks() if self._mine(task)]

    def issues(self, plan: Plan | None = None) -> list[dict]:
        return [issue for issue in (plan or self.read_plan()).issues() if self._mine(issue)]

    def _complete(self) -> bool:
        plan = self.read_plan()
        return not self.tasks(plan) and not self.issues(plan)

    def _needs_planning(self) -> bool:
        plan = self.read_plan()
        return not plan.tasks() and not plan.issues() and not plan.accepted()

    def _work_snapshot(self) -> bytes:
        doc = self.read_plan().doc
        return b"".join(line.raw for line in doc.lines if not (line.record and line.record["t"] == "state"))

    def set_state(self, **fields) -> None:
        # Written, not committed: the next commit of the loop carries it.
        with store.transaction(self.root, commit=False) as change:
            change.plan.update_state(**fields)

    def check_budget(self) -> None:
        limit = self.settings.max_minutes
        if limit is not None and time.monotonic() - self.started > limit * 60:
            raise BudgetSpent(f"the time budget ({limit:g} minutes) is spent")

    # --- running agents -----------------------------------------------------------------------
    def agent(
        self, stage: str, iteration: int, item: str | None, values: dict, compacted: str | None = None
    ) -> AgentResult:
        self.check_budget()
        self.set_state(stage=stage)
        what = f"{stage} {item or self.settings.spec}"
        self.console.status(iteration, stage, item or "")
        self.console.event(f"{what}: agent started")
        result = self.runner.run(stage, iteration, item, values, compacted)
        self.tokens += result.tracker.usage.total
        self.console.status(iteration, stage, item or "", self.tokens)
        self.console.event(f"{what}: agent {result.describe()} ({result.run.duration_s:.1f}s)")
        return result

    def check_plan(self, result: AgentResult) -> str | None:
        """After an agent run: if plan.jsonl no longer loads, keep the broken copy in the logs and
        put back the last committed state. Returns the problem, or None."""
        data = (self.root / PLAN_FILE).read_bytes()
        try:
            store.load_checked(self.root, data)  # unchanged content is not validated again
            return None
        except PlanInvalid as exc:
            broken = self.root / result.log_path.with_suffix(".plan.jsonl.broken")
            broken.write_bytes(data)
            store.restore_plan(self.root, self.worktree.head_plan() or b"")
            self.journal.event(
                "plan_restored", problem=str(exc), broken_copy=str(broken.relative_to(self.root))
            )
            self.console.event(f"the agent left plan.jsonl invalid ({exc}); restored it from HEAD")
            return str(exc)

    def commit_stage(self, message: str) -> str | None:
        paths = self.worktree.changed_paths() - self.user_dirty
        commit, files = self.worktree.commit(paths, message)
        if commit:
            self.journal.event("commit", commit=commit, message=message.splitlines()[0], files=files)
        return commit

    # --- PLAN ---------------------------------------------------------------------------------
    def _plan_stage(self) -> None:
        span = self.journal.span("stage", stage="PLAN")
        result = self.agent("PLAN", self.read_plan().iteration(), None, {})
        self.check_plan(result)
        count = len(self.tasks())
        self.commit_stage(f"ralph(plan): {self.settings.spec}: {count} tasks")
        self.prioritize()
        span.end(tasks=count)

    def prioritize(self) -> None:
        ops.task_prioritize(self.root, self.settings.spec, fold_earlier=True)

    # --- INVESTIGATE --------------------------------------------------------------------------
    def investigate_stage(self, iteration: int) -> None:
        issues = self.issues()
        if not issues:
            return
        span = self.journal.span("stage", stage="INVESTIGATE", iteration=iteration, items=len(issues))
        for issue in issues:
            result = self.agent(
                "INVESTIGATE", iteration, issue["id"], {"issue_id": issue["id"], "issue_text": issue["text"]}
            )
            self.check_plan(result)
            if any(open_issue["id"] == issue["id"] for open_issue in self.issues()):
                self.journal.event("issue_unresolved", item=issue["id"], log=str(result.log_path))
            self.commit_stage(f"ralph(investigate): {issue['id']} {issue['text'][:60]}")
        span.end()

    def find_task(self, task_id: str) -> dict | None:
        return next((t for t in self.read_plan().tasks() if t["id"] == task_id), None)

    def set_aside(self, log_path: Path) -> None:
        paths = self.worktree.changed_paths() - self.user_dirty - {PLAN_FILE}
        if paths:
            patch = self.root / log_path.with_suffix(".patch")
            self.worktree.save_patch(paths, patch)
            self.worktree.revert(paths)
            self.journal.event(
                "changes_set_aside", patch=str(patch.relative_to(self.root)), files=sorted(paths)
            )

    # --- ending -------------------------------------------------------------------------------
    def _on_interrupt(self) -> None:
        """Stop the agents, set the interrupted unit's partial work aside, and leave the plan as
        last committed, so the next run redoes that unit."""
        process.stop_all(self.settings.grace_s)
        if self.worktree is None:
            return
        log = self.runner.new_log("interrupted")
        self.set_aside(log.relative_to(self.root))
        head_plan = self.worktree.head_plan()
        if head_plan is not None and (self.root / PLAN_FILE).read_bytes() != head_plan:
            (self.root / log.with_suffix(".plan.jsonl")).write_bytes((self.root / PLAN_FILE).read_bytes())
            store.restore_plan(self.root, head_plan)
        self.journal.event("interrupted", log=str(log.relative_to(self.root)))

    def _report(self, outcome: Outcome, message: str) -> Report:
        remaining = []
        try:
            plan = self.read_plan()
            for task in self.tasks(plan):
                why = task.get("kill_reason") or task.get("reject_reason") or task.get("gate_failure") or ""
                state = {"p": "pending", "d": "done"}[task.get("s", "p")]
                remaining.append(
                    f"{task['id']} {state}: {task['name']}"
                    + (f" ({why.splitlines()[0][:100]})" if why else "")
                )
            remaining += [f"{issue['id']} issue: {issue['text'][:100]}" for issue in self.issues(plan)]
        except PlanInvalid as exc:
            remaining.append(f"plan.jsonl does not load: {exc}")
        return Report(
            outcome, message, self.iterations_run, self.accepted, remaining, str(LOG_DIR), self.tokens
        )
