"""`ralph construct`: iterations of INVESTIGATE -> BUILD -> VERIFY (and DECOMPOSE for failed work)
until the spec's tasks are all accepted, a budget is spent, or nothing can make progress.

Every state change goes through plan.jsonl; every unit of finished work is a git commit. The
agents run with RALPH_COMMIT=0, so their plan changes are committed together with their code
once ralph has checked the work (the gate after BUILD).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ralph import process, store
from ralph.agentrun import LOG_DIR, AgentResult, AgentRunner, AgentUnavailable
from ralph.agents import make_adapter
from ralph.console import Console
from ralph.errors import InvalidInput, PlanInvalid, Refused
from ralph.gate import run_gate
from ralph.journal import Journal
from ralph.plan import Plan
from ralph.prompts import excerpt, task_details
from ralph.schedule import buildable
from ralph.settings import Settings
from ralph.worktree import WorkTree

PLAN_FILE = store.PLAN_NAME
KILL_REASONS = ("timeout", "context_limit")
MAX_COMPACTIONS = 3  # per build attempt; after that the task is killed for its context
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
        return COMPLETE, f"planned {len(self._tasks())} tasks"

    def _iteration(self) -> None:
        number = self._plan().iteration() + 1
        self.iterations_run += 1
        self._set_state(iteration=number, stage="INVESTIGATE")
        span = self.journal.span("iteration", iteration=number)
        self.console.event(f"iteration {number}")
        self._decompose_stage(number)
        self._investigate_stage(number)
        self._build_stage(number)
        self._decompose_stage(number)
        self._verify_stage(number)
        span.end()

    # --- preparing and reading ----------------------------------------------------------------
    def _prepare(self) -> None:
        spec = self.root / self.settings.spec
        if not spec.is_file():
            raise InvalidInput(f"no spec file {self.settings.spec}")
        if not (self.root / PLAN_FILE).exists():
            from ralph import ops

            ops.init(self.root)
        self.worktree = WorkTree(self.root)
        dirty = self.worktree.changed_paths() - {PLAN_FILE}
        if dirty and not self.settings.allow_dirty:
            shown = ", ".join(sorted(dirty)[:5]) + (f" (+{len(dirty) - 5} more)" if len(dirty) > 5 else "")
            raise Refused(f"uncommitted changes: {shown}; commit or stash them, or pass --allow-dirty")
        self.user_dirty = dirty
        with store.transaction(self.root) as change:
            plan = change.plan
            if not any(r.record.get("path") == self.settings.spec for r in plan._of("spec")):
                plan.doc.append({"t": "spec", "path": self.settings.spec})
            plan.update_state(spec=self.settings.spec)
            change.message = f"ralph: construct {self.settings.spec}"

    def _plan(self) -> Plan:
        return store.read_plan(self.root)

    def _mine(self, record: dict) -> bool:
        return record.get("spec") in (None, self.settings.spec)

    def _tasks(self, plan: Plan | None = None) -> list[dict]:
        return [task for task in (plan or self._plan()).tasks() if self._mine(task)]

    def _issues(self, plan: Plan | None = None) -> list[dict]:
        return [issue for issue in (plan or self._plan()).issues() if self._mine(issue)]

    def _complete(self) -> bool:
        plan = self._plan()
        return not self._tasks(plan) and not self._issues(plan)

    def _needs_planning(self) -> bool:
        plan = self._plan()
        return not plan.tasks() and not plan.issues() and not plan.accepted()

    def _work_snapshot(self) -> bytes:
        doc = self._plan().doc
        return b"".join(line.raw for line in doc.lines if not (line.record and line.record["t"] == "state"))

    def _set_state(self, **fields) -> None:
        # Written, not committed: the next commit of the loop carries it.
        with store.transaction(self.root, commit=False) as change:
            change.plan.update_state(**fields)

    def _budget(self) -> None:
        limit = self.settings.max_minutes
        if limit is not None and time.monotonic() - self.started > limit * 60:
            raise BudgetSpent(f"the time budget ({limit:g} minutes) is spent")

    # --- running agents -----------------------------------------------------------------------
    def _agent(
        self, stage: str, iteration: int, item: str | None, values: dict, compacted: str | None = None
    ) -> AgentResult:
        self._budget()
        self._set_state(stage=stage)
        what = f"{stage} {item or self.settings.spec}"
        self.console.status(iteration, stage, item or "")
        self.console.event(f"{what}: agent started")
        result = self.runner.run(stage, iteration, item, values, compacted)
        self.tokens += result.tracker.usage.total
        self.console.status(iteration, stage, item or "", self.tokens)
        self.console.event(f"{what}: agent {result.describe()} ({result.run.duration_s:.1f}s)")
        return result

    def _check_plan(self, result: AgentResult) -> str | None:
        """After an agent run: if plan.jsonl no longer loads, keep the broken copy in the logs and
        put back the last committed state. Returns the problem, or None."""
        data = (self.root / PLAN_FILE).read_bytes()
        try:
            store.load(data, PLAN_FILE)
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

    def _commit_stage(self, message: str) -> str | None:
        paths = self.worktree.changed_paths() - self.user_dirty
        commit, files = self.worktree.commit(paths, message)
        if commit:
            self.journal.event("commit", commit=commit, message=message.splitlines()[0], files=files)
        return commit

    # --- PLAN ---------------------------------------------------------------------------------
    def _plan_stage(self) -> None:
        span = self.journal.span("stage", stage="PLAN")
        result = self._agent("PLAN", self._plan().iteration(), None, {})
        self._check_plan(result)
        count = len(self._tasks())
        self._commit_stage(f"ralph(plan): {self.settings.spec}: {count} tasks")
        self._prioritize()
        span.end(tasks=count)

    def _prioritize(self) -> None:
        with store.transaction(self.root, fold_earlier=True) as change:
            counts = change.plan.prioritize(self.settings.spec)
            levels = ", ".join(f"{counts[level]} {level}" for level in ("high", "medium", "low"))
            change.message = f"ralph: task prioritize ({levels})"

    # --- INVESTIGATE --------------------------------------------------------------------------
    def _investigate_stage(self, iteration: int) -> None:
        issues = self._issues()
        if not issues:
            return
        span = self.journal.span("stage", stage="INVESTIGATE", iteration=iteration, items=len(issues))
        for issue in issues:
            result = self._agent(
                "INVESTIGATE", iteration, issue["id"], {"issue_id": issue["id"], "issue_text": issue["text"]}
            )
            self._check_plan(result)
            if any(open_issue["id"] == issue["id"] for open_issue in self._issues()):
                self.journal.event("issue_unresolved", item=issue["id"], log=str(result.log_path))
            self._commit_stage(f"ralph(investigate): {issue['id']} {issue['text'][:60]}")
        span.end()

    # --- BUILD --------------------------------------------------------------------------------
    def _build_stage(self, iteration: int) -> None:
        span = self.journal.span("stage", stage="BUILD", iteration=iteration)
        built = 0
        while True:
            plan = self._plan()
            ready = buildable(self._tasks(plan), plan.accepted())
            if not ready:
                break
            self._build_task(ready[0]["id"], iteration)
            built += 1
        span.end(tasks=built)

    def _build_task(self, task_id: str, iteration: int) -> None:
        compacted, compactions = None, 0
        while True:
            plan = self._plan()
            task = plan.task_line(task_id).record
            values = {
                "task_id": task_id,
                "task_name": task["name"],
                "task_details": task_details(task, {t["id"]: t["name"] for t in plan.tasks()}),
                "gate": " ".join(self.settings.gate) or "(none)",
            }
            result = self._agent("BUILD", iteration, task_id, values, compacted)
            problem = self._check_plan(result)
            if result.run.stop_reason == "context_compact" and compactions < MAX_COMPACTIONS:
                compacted, compactions = self._compact(task, result), compactions + 1
                continue
            if result.run.stop_reason == "context_compact":
                result.run.stop_reason = "context_limit"  # compacting again and again is no progress
            compacted = None
            if result.run.stop_reason in KILL_REASONS:
                return self._kill(task_id, result.run.stop_reason, result)
            task = self._find_task(task_id)
            if task is None:
                return  # the agent removed it (e.g. found it already done); its change is recorded
            failure = self._build_failure(task, result, problem, iteration)
            if failure is None:
                return self._record_build(task_id, result)
            attempts = self._record_failure(task_id, failure, result)
            if attempts >= self.settings.max_attempts:
                return self._kill(task_id, "doom_loop", result)

    def _compact(self, task: dict, result: AgentResult) -> str:
        """The compacted context a continuation run opens with: the task, what is done so far,
        the files being changed, the recent output, the next step."""
        fill = result.pressure.fill if result.pressure else 0.0
        self.journal.event(
            "context_compact", item=task["id"], fill_before=round(fill, 4), log=str(result.log_path)
        )
        paths = self.worktree.changed_paths() - self.user_dirty - {PLAN_FILE}
        stat = self.worktree.diff_stat(paths).strip() if paths else ""
        recent = "\n".join(line[:200] for line in result.run.tail[-20:])
        return "\n".join(
            [
                "=== COMPACTED CONTEXT ===",
                f"Task: {task['id']} {task['name']}",
                task_details(task, {}).strip(),
                f"Progress: a previous run worked on this task and was stopped at {fill:.0%} of its context"
                " window. Its changes are still in the work tree:",
                stat or "(no changes to tracked files yet)",
                "Key files: " + (", ".join(sorted(paths)) or "(none yet)"),
                "Recent output:",
                recent or "(none)",
                "Next step: continue from the current state of the files; do not start over, and keep"
                " command output short.",
                "=== END COMPACTED ===",
            ]
        )

    def _find_task(self, task_id: str) -> dict | None:
        return next((t for t in self._plan().tasks() if t["id"] == task_id), None)

    def _build_failure(
        self, task: dict, result: AgentResult, problem: str | None, iteration: int
    ) -> str | None:
        """Why this attempt does not count as built, or None when it passed the gate."""
        if problem:
            return f"the agent left plan.jsonl invalid: {problem}"
        if task.get("s") != "d":
            tail = "\n".join(result.run.tail[-15:])
            return f"the agent ended ({result.describe()}) without running `ralph task done`.\n{tail}"
        log = self.runner.new_log("gate", task["id"])
        span = self.journal.span(
            "gate", item=task["id"], iteration=iteration, log=str(log.relative_to(self.root))
        )
        gate = run_gate(
            self.settings.gate, self.root, log, self.settings.gate_timeout_s, self.settings.grace_s
        )
        span.end(ok=gate.ok)
        self.console.event(f"gate for {task['id']}: {'passed' if gate.ok else 'FAILED'}")
        return None if gate.ok else excerpt(gate.summary)

    def _record_build(self, task_id: str, result: AgentResult) -> None:
        changed = self.worktree.changed_paths() - self.user_dirty
        with store.transaction(self.root, commit=False) as change:
            line = change.plan.task_line(task_id)
            task = line.record
            task["attempts"] = task.get("attempts", 0) + 1
            task["files"] = sorted(changed - {PLAN_FILE})
            self._add_tokens(task, result)
            for stale in ("gate_failure", "kill_reason", "kill_log"):
                task.pop(stale, None)
            change.plan.doc.rewrite(line)
        commit = self._commit_stage(f"ralph(build): {task_id} {task['name']}")
        with store.transaction(self.root, fold_earlier=True) as change:
            line = change.plan.task_line(task_id)
            line.record["commit"] = commit
            change.plan.doc.rewrite(line)
            change.message = f"ralph: record build commit {commit[:10] if commit else 'none'} of {task_id}"

    def _add_tokens(self, task: dict, result: AgentResult) -> None:
        """Sum the attempt's usage onto the task, so `git log -p plan.jsonl` shows what it cost."""
        usage = result.tracker.usage
        if usage.total:
            task["tokens"] = task.get("tokens", 0) + usage.total
            task["attempt_tokens"] = [*task.get("attempt_tokens", []), usage.total]
        if usage.cost_usd:
            task["cost_usd"] = round(task.get("cost_usd", 0) + usage.cost_usd, 6)

    def _record_failure(self, task_id: str, failure: str, result: AgentResult) -> int:
        """The attempt failed: back to pending with the reason; the code stays for the next try."""
        with store.transaction(self.root, fold_earlier=True) as change:
            line = change.plan.task_line(task_id)
            task = line.record
            task["s"] = "p"
            task["attempts"] = task.get("attempts", 0) + 1
            task["gate_failure"] = failure
            self._add_tokens(task, result)
            change.plan.doc.rewrite(line)
            change.message = f"ralph(build): {task_id} attempt {task['attempts']} failed"
        self.journal.event("build_failed", item=task_id, attempts=task["attempts"], log=str(result.log_path))
        return task["attempts"]

    def _kill(self, task_id: str, reason: str, result: AgentResult) -> None:
        """Set the task aside for DECOMPOSE; its partial changes are saved as a patch, then undone."""
        self._set_aside(result.log_path)
        with store.transaction(self.root, fold_earlier=True) as change:
            change.plan.reject(task_id, _KILL_TEXT[reason], kill_reason=reason, kill_log=str(result.log_path))
            change.message = f"ralph(build): {task_id} killed ({reason})"
        self.journal.event("task_killed", item=task_id, kill_reason=reason, log=str(result.log_path))
        self.console.event(f"{task_id} killed ({reason}); it will be decomposed")

    def _set_aside(self, log_path: Path) -> None:
        paths = self.worktree.changed_paths() - self.user_dirty - {PLAN_FILE}
        if paths:
            patch = self.root / log_path.with_suffix(".patch")
            self.worktree.save_patch(paths, patch)
            self.worktree.revert(paths)
            self.journal.event(
                "changes_set_aside", patch=str(patch.relative_to(self.root)), files=sorted(paths)
            )

    # --- DECOMPOSE ----------------------------------------------------------------------------
    def _decompose_stage(self, iteration: int) -> None:
        killed = [t for t in self._tasks() if t.get("kill_reason") and t.get("s", "p") == "p"]
        if not killed:
            return
        span = self.journal.span("stage", stage="DECOMPOSE", iteration=iteration, items=len(killed))
        for task in killed:
            self._decompose(task, iteration)
        span.end()

    def _decompose(self, task: dict, iteration: int) -> None:
        head, tail = _log_sample(self.root / task.get("kill_log", ""))
        values = {
            "task_id": task["id"],
            "task_name": task["name"],
            "task_details": task_details(task, {}),
            "kill_reason": task["kill_reason"],
            "kill_log": task.get("kill_log", "(none)"),
            "log_head": head,
            "log_tail": tail,
        }
        result = self._agent("DECOMPOSE", iteration, task["id"], values)
        self._check_plan(result)
        children = [t["id"] for t in self._plan().tasks() if t.get("parent") == task["id"]]
        if children and self._find_task(task["id"]):
            with store.transaction(self.root, commit=False) as change:
                change.plan.delete(task["id"])
        if not children:
            self.journal.event("decompose_failed", item=task["id"], log=str(result.log_path))
            self.console.event(f"DECOMPOSE of {task['id']} added no subtasks")
        self._commit_stage(f"ralph(decompose): {task['id']} -> {', '.join(children) or 'nothing'}")

    # --- VERIFY -------------------------------------------------------------------------------
    def _verify_stage(self, iteration: int) -> None:
        plan = self._plan()
        done = [t for t in self._tasks(plan) if t.get("s") == "d"]
        if not done:
            return
        span = self.journal.span("stage", stage="VERIFY", iteration=iteration, items=len(done))
        names = {t["id"]: t["name"] for t in plan.tasks()}
        self._set_state(stage="VERIFY")
        try:
            with ThreadPoolExecutor(max_workers=self.settings.parallel) as pool:
                results = list(pool.map(lambda t: self._verify_one(t, iteration, names), done))
        except KeyboardInterrupt:
            process.stop_all(self.settings.grace_s)
            raise
        for result in results:
            self._check_plan(result)
        verdicts = self._verdicts(done)
        summary = "; ".join(f"{kind} {', '.join(ids)}" for kind, ids in verdicts.items() if ids)
        self._commit_stage(f"ralph(verify): {summary}")
        self._prioritize()
        span.end(**{kind.replace(" ", "_"): ids for kind, ids in verdicts.items() if ids})

    def _verify_one(self, task: dict, iteration: int, names: dict[str, str]) -> AgentResult:
        values = {
            "task_id": task["id"],
            "task_name": task["name"],
            "task_details": task_details(task, names),
            "task_commit": task.get("commit") or "HEAD",
        }
        return self._agent("VERIFY", iteration, task["id"], values)

    def _verdicts(self, done: list[dict]) -> dict[str, list[str]]:
        plan = self._plan()
        accepted, current = plan.accepted(), {t["id"]: t for t in plan.tasks()}
        verdicts: dict[str, list[str]] = {"accepted": [], "rejected": [], "no verdict": []}
        for task in done:
            if task["id"] in accepted:
                verdicts["accepted"].append(task["id"])
                self.accepted.append(f"{task['id']} {task['name']}")
            elif task["id"] in current and current[task["id"]].get("s") == "d":
                verdicts["no verdict"].append(task["id"])
                self.journal.event("no_verdict", item=task["id"])
            else:
                verdicts["rejected"].append(task["id"])
        return verdicts

    # --- ending -------------------------------------------------------------------------------
    def _on_interrupt(self) -> None:
        """Stop the agents, set the interrupted unit's partial work aside, and leave the plan as
        last committed, so the next run redoes that unit."""
        process.stop_all(self.settings.grace_s)
        if self.worktree is None:
            return
        log = self.runner.new_log("interrupted")
        self._set_aside(log.relative_to(self.root))
        head_plan = self.worktree.head_plan()
        if head_plan is not None and (self.root / PLAN_FILE).read_bytes() != head_plan:
            (self.root / log.with_suffix(".plan.jsonl")).write_bytes((self.root / PLAN_FILE).read_bytes())
            store.restore_plan(self.root, head_plan)
        self.journal.event("interrupted", log=str(log.relative_to(self.root)))

    def _report(self, outcome: Outcome, message: str) -> Report:
        remaining = []
        try:
            plan = self._plan()
            for task in self._tasks(plan):
                why = task.get("kill_reason") or task.get("reject_reason") or task.get("gate_failure") or ""
                state = {"p": "pending", "d": "done"}[task.get("s", "p")]
                remaining.append(
                    f"{task['id']} {state}: {task['name']}"
                    + (f" ({why.splitlines()[0][:100]})" if why else "")
                )
            remaining += [f"{issue['id']} issue: {issue['text'][:100]}" for issue in self._issues(plan)]
        except PlanInvalid as exc:
            remaining.append(f"plan.jsonl does not load: {exc}")
        return Report(
            outcome, message, self.iterations_run, self.accepted, remaining, str(LOG_DIR), self.tokens
        )


_KILL_TEXT = {
    "timeout": "the agent run hit its time limit",
    "context_limit": "the agent's context window filled up",
    "doom_loop": "the build kept failing; split it into smaller tasks",
}


def _log_sample(path: Path, head_lines: int = 50, tail_lines: int = 100, width: int = 400) -> tuple[str, str]:
    """The first and last lines of a log, each cut to `width`: never the whole log."""
    if not path.is_file():
        return "(no log)", "(no log)"
    with open(path, "rb") as handle:
        head = [handle.readline() for _ in range(head_lines)]
        size = handle.seek(0, 2)
        handle.seek(max(0, size - 64 * 1024))
        tail = handle.read().splitlines()[-tail_lines:]

    def clean(lines: list[bytes]) -> str:
        return "\n".join(line.decode("utf-8", "replace").rstrip()[:width] for line in lines if line)

    return clean(head), clean(tail)
