"""BUILD: one fresh agent run per buildable task, then ralph's own gate. A task stays done only
when the agent marked it done and the gate passed; a failed attempt is retried at once with the
failure in its prompt, up to max_attempts; a timeout, a context kill or too many failures set it
aside for DECOMPOSE. Context compaction continues the task in a fresh run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ralph import store
from ralph.agentrun import AgentResult
from ralph.gate import run_gate
from ralph.prompts import excerpt, task_details
from ralph.schedule import buildable

if TYPE_CHECKING:
    from ralph.construct import Loop

PLAN_FILE = store.PLAN_NAME
KILL_REASONS = ("timeout", "context_limit")
MAX_COMPACTIONS = 3  # per build attempt; after that the task is killed for its context


class BuildStage:
    def __init__(self, loop: Loop):
        self.loop = loop

    def run(self, iteration: int) -> None:
        span = self.loop.journal.span("stage", stage="BUILD", iteration=iteration)
        built = 0
        while True:
            plan = self.loop.read_plan()
            ready = buildable(self.loop.tasks(plan), plan.accepted())
            if not ready:
                break
            task_id = ready[0]["id"]
            if self._rejections(plan, task_id) >= self.loop.settings.max_attempts:
                self._set_aside_rejected(task_id)  # VERIFY keeps rejecting it: split it instead
                continue
            self._build_task(task_id, iteration)
            built += 1
        span.end(tasks=built)

    @staticmethod
    def _rejections(plan, task_id: str) -> int:
        return sum(
            1 for line in plan.doc.records() if line.record["t"] == "reject" and line.record["id"] == task_id
        )

    def _set_aside_rejected(self, task_id: str) -> None:
        with store.transaction(self.loop.root, fold_earlier=True) as change:
            reason = (
                f"VERIFY rejected it {self.loop.settings.max_attempts} times; split it into smaller tasks"
            )
            change.plan.reject(task_id, reason, kill_reason="doom_loop")
            change.message = f"ralph(build): {task_id} set aside (rejected too often)"
        self.loop.journal.event("task_killed", item=task_id, kill_reason="doom_loop", rejected=True)
        self.loop.console.event(f"{task_id} was rejected too often; it will be decomposed")

    def _build_task(self, task_id: str, iteration: int) -> None:
        compacted, compactions = None, 0
        while True:
            plan = self.loop.read_plan()
            task = plan.task_line(task_id).record
            values = {
                "task_id": task_id,
                "task_name": task["name"],
                "task_details": task_details(task, {t["id"]: t["name"] for t in plan.tasks()}),
                "gate": " ".join(self.loop.settings.gate) or "(none)",
            }
            result = self.loop.agent("BUILD", iteration, task_id, values, compacted)
            problem = self.loop.check_plan(result)
            if result.run.stop_reason == "context_compact" and compactions < MAX_COMPACTIONS:
                compacted, compactions = self._compact(task, result), compactions + 1
                continue
            if result.run.stop_reason == "context_compact":
                result.run.stop_reason = "context_limit"  # compacting again and again is no progress
            compacted = None
            if result.run.stop_reason in KILL_REASONS:
                return self._kill(task_id, result.run.stop_reason, result)
            task = self.loop.find_task(task_id)
            if task is None:
                return  # the agent removed it (e.g. found it already done); its change is recorded
            failure = self._build_failure(task, result, problem, iteration)
            if failure is None:
                return self._record_build(task_id, result)
            attempts = self._record_failure(task_id, failure, result)
            if attempts >= self.loop.settings.max_attempts:
                return self._kill(task_id, "doom_loop", result)

    def _compact(self, task: dict, result: AgentResult) -> str:
        """The compacted context a continuation run opens with: the task, what is done so far,
        the files being changed, the recent output, the next step."""
        fill = result.pressure.fill if result.pressure else 0.0
        self.loop.journal.event(
            "context_compact", item=task["id"], fill_before=round(fill, 4), log=str(result.log_path)
        )
        paths = self.loop.worktree.changed_paths() - self.loop.user_dirty - {PLAN_FILE}
        stat = self.loop.worktree.diff_stat(paths).strip() if paths else ""
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

    def _build_failure(
        self, task: dict, result: AgentResult, problem: str | None, iteration: int
    ) -> str | None:
        """Why this attempt does not count as built, or None when it passed the gate."""
        if problem:
            return f"the agent left plan.jsonl invalid: {problem}"
        if task.get("s") != "d":
            tail = "\n".join(result.run.tail[-15:])
            return f"the agent ended ({result.describe()}) without running `ralph task done`.\n{tail}"
        log = self.loop.runner.new_log("gate", task["id"])
        span = self.loop.journal.span(
            "gate", item=task["id"], iteration=iteration, log=str(log.relative_to(self.loop.root))
        )
        gate = run_gate(
            self.loop.settings.gate,
            self.loop.root,
            log,
            self.loop.settings.gate_timeout_s,
            self.loop.settings.grace_s,
        )
        span.end(ok=gate.ok)
        self.loop.console.event(f"gate for {task['id']}: {'passed' if gate.ok else 'FAILED'}")
        return None if gate.ok else excerpt(gate.summary)

    def _record_build(self, task_id: str, result: AgentResult) -> None:
        changed = self.loop.worktree.changed_paths() - self.loop.user_dirty
        with store.transaction(self.loop.root, commit=False) as change:
            line = change.plan.task_line(task_id)
            task = line.record
            task["attempts"] = task.get("attempts", 0) + 1
            task["files"] = sorted(changed - {PLAN_FILE})
            self._add_tokens(task, result)
            for stale in ("gate_failure", "kill_reason", "kill_log"):
                task.pop(stale, None)
            change.plan.doc.rewrite(line)
        commit = self.loop.commit_stage(f"ralph(build): {task_id} {task['name']}")
        if commit:
            # A commit cannot name itself: its id is written now and goes in with the loop's
            # next commit (the next build, the verify commit, or the loop's ending).
            with store.transaction(self.loop.root, commit=False) as change:
                line = change.plan.task_line(task_id)
                line.record["commit"] = commit
                change.plan.doc.rewrite(line)

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
        with store.transaction(self.loop.root, fold_earlier=True) as change:
            line = change.plan.task_line(task_id)
            task = line.record
            task["s"] = "p"
            task["attempts"] = task.get("attempts", 0) + 1
            task["gate_failure"] = failure
            self._add_tokens(task, result)
            change.plan.doc.rewrite(line)
            change.message = f"ralph(build): {task_id} attempt {task['attempts']} failed"
        self.loop.journal.event(
            "build_failed", item=task_id, attempts=task["attempts"], log=str(result.log_path)
        )
        return task["attempts"]

    def _kill(self, task_id: str, reason: str, result: AgentResult) -> None:
        """Set the task aside for DECOMPOSE; its partial changes are saved as a patch, then undone."""
        self.loop.set_aside(result.log_path)
        with store.transaction(self.loop.root, fold_earlier=True) as change:
            change.plan.reject(task_id, _KILL_TEXT[reason], kill_reason=reason, kill_log=str(result.log_path))
            change.message = f"ralph(build): {task_id} killed ({reason})"
        self.loop.journal.event("task_killed", item=task_id, kill_reason=reason, log=str(result.log_path))
        self.loop.console.event(f"{task_id} killed ({reason}); it will be decomposed")


_KILL_TEXT = {
    "timeout": "the agent run hit its time limit",
    "context_limit": "the agent's context window filled up",
    "doom_loop": "the build kept failing; split it into smaller tasks",
}
