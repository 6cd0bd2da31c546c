"""DECOMPOSE: an agent replaces a killed task with 2-5 smaller ones that name it as parent,
reading only the head and tail of the killed run's log. Subtasks are one level deeper than their
parent; at max_decompose_depth, or after two decompositions that made too few or too many
subtasks, the task is blocked for a person instead. A run stopped by its time limit or a full
context is a failed decomposition: what it did to the plan is kept beside its log and undone."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from ralph.errors import PlanInvalid
from ralph.loop.runs.agent_process import LOG_DIR, AgentResult
from ralph.loop.runs.prompts import data_block, one_line, task_details
from ralph.loop.stages.decompose_outcome import DecomposeFacts, DecomposeOutcome, Exit, Then, decide
from ralph.loop.stages.job import Job
from ralph.loop.stages.workspace import StageReport, Workspace
from ralph.plan.attempts import verify_reasons
from ralph.plan.document import Record
from ralph.plan.plan import Plan
from ralph.plan.records import KillReason, Stage, TaskView, kill_reason_of
from ralph.plan.run_records import DecomposeRecord
from ralph.secrets import OutputLines
from ralph.text import plural
from ralph.usecases.settings import Settings


class _Run(NamedTuple):
    """The agent's run on the task, and plan.jsonl as it was before it (what a stopped run's
    changes go back to)."""

    result: AgentResult
    before: bytes


class DecomposeStage:
    def __init__(self, ws: Workspace):
        self.ws = ws
        self.plan, self.agents, self.tree = ws.plan, ws.agents, ws.tree  # the parts it acts through

    def run(self, iteration: int) -> StageReport:
        found = jobs(self.plan.read(), self.ws.settings, self.tree.root)
        report = StageReport(Stage.DECOMPOSE, items=len(found))
        if not found:
            return report
        span = self.ws.journal.span("stage", stage="DECOMPOSE", iteration=iteration, items=len(found))
        report.items = 0
        for job in self.ws.coordinator.each(Stage.DECOMPOSE, found, self._fresh, self._items):
            commit = self._decompose(TaskView(job.record), job.values, iteration, report)
            report.commits += [commit] if commit else []
            report.items += 1
        span.end()
        return report

    def _items(self, plan: Plan) -> list[Record]:
        return [task.record for task in killed(plan, self.ws.settings.spec)]

    def _fresh(self, task_id: str) -> Job | None:
        found = jobs(self.plan.read(), self.ws.settings, self.tree.root)
        return next((job for job in found if job.item == task_id), None)

    def _decompose(
        self, task: TaskView, values: dict[str, object], iteration: int, report: StageReport
    ) -> str | None:
        """Decomposes the task (one that is too deep is blocked without a run): what the run did,
        decided, then applied."""
        facts = DecomposeFacts(task.depth, self.ws.settings.max_decompose_depth, task.kill_reason)
        run = None if facts.too_deep else self._run(task, values, iteration)
        if run is not None:
            facts = self._run_facts(task, facts, run.result)
        return self._apply(task, facts, run, report)

    def _run(self, task: TaskView, values: dict[str, object], iteration: int) -> _Run:
        """The agent's run on the task, and the plan as it was before it."""
        if task.kill_log and kill_log_of(task, self.tree.root) is None:
            self.ws.journal.event("kill_log_refused", item=task.id, kill_log=task.kill_log)
        self.plan.set_state(stage=str(Stage.DECOMPOSE))
        before = self.plan.raw()  # what a stopped run's changes go back to
        return _Run(self.agents.run_agent(Stage.DECOMPOSE, iteration, task.id, values), before)

    def _run_facts(self, task: TaskView, facts: DecomposeFacts, result: AgentResult) -> DecomposeFacts:
        """What the run did, asked in decide's order; `failures`: the task's failed
        decompositions as recording this one, were it one, would leave them."""
        stop = kill_reason_of(result.run.stop_reason)
        if stop:  # the plan goes back to `before`, where the task is as the job found it
            return replace(facts, stopped=stop, failures=_failures(task.record))
        plan = self.plan.read()
        children = tuple(child.id for child in plan.task_views() if child.parent == task.id and child.pending)
        return replace(facts, children=children, failures=_failures(plan.find_task(task.id) or task.record))

    def _apply(
        self, task: TaskView, facts: DecomposeFacts, run: _Run | None, report: StageReport
    ) -> str | None:
        """What the decomposition came to, decided and done, in this order: the plan written (the
        subtasks recorded; or the run undone, its failure counted), the person told, the commit
        made. Whether the subtasks close a dependency cycle the plan finds on writing them: that
        refusal is decided in turn, and applied as the other failures are."""
        outcome = decide(facts)
        if outcome.exit is Exit.DECOMPOSED:
            try:
                with self.plan.change() as change:
                    change.plan.record_decompose(task.id, DecomposeRecord(task.record, facts.children))
            except PlanInvalid as exc:  # its dependents would need its parts, which need them
                facts = replace(facts, cycle=str(exc))
                outcome = decide(facts)
            else:
                return self.tree.commit(f"ralph(decompose): {task.id} -> {', '.join(facts.children)}")
        if run is not None and outcome.undo:  # half a decomposition is none: undone, and counted
            self.plan.undo_since(run.before, run.result, task.id)
            log = run.result.log_path
            report.stopped.append(f"{task.id} DECOMPOSE stopped ({facts.stopped}), undone; log {log}")
        return self._refuse(task, outcome, run.result.log_path if run else None)

    def _refuse(self, task: TaskView, outcome: DecomposeOutcome, log: Path | None) -> str | None:
        """Not decomposed (too deep to run, or 2 to 5 subtasks not made by a run that finished),
        in one write: the subtasks it made undone, the task as it was, the failure counted; a
        second failure, or one too deep, blocks the task for a person."""
        why, block = outcome.why, outcome.block if outcome.then is Then.BLOCK else None
        run = DecomposeRecord(task.record, drop=outcome.drop, counted=outcome.counted, block=block)
        with self.plan.change() as change:
            change.plan.record_decompose(task.id, run)
        if outcome.counted:
            self.ws.journal.event("decompose_failed", item=task.id, why=why, log=str(log))
            self.ws.console.event(f"DECOMPOSE of {task.id} {why}")
        if block is None:
            return self.tree.commit(f"ralph(decompose): {task.id} not decomposed ({why})")
        self.ws.journal.event("task_blocked", item=task.id, reason=block)
        self.ws.console.event(f"{task.id} blocked: {block}; a person must split or rethink it")
        return self.tree.commit(f"ralph(decompose): {task.id} blocked\n\n{block}")


def _failures(task: Record) -> int:
    """The task's failed decompositions once one more is recorded (attempts.record_decompose_failure)."""
    return int(task.get("decompose_failures", 0)) + 1


def jobs(plan: Plan, settings: Settings, root: Path) -> list[Job]:
    """The DECOMPOSE runs a plan calls for: one per killed task of the spec (those decomposed too
    deep are blocked instead, without a run)."""
    return [
        Job(Stage.DECOMPOSE, task.id, task.name, _values(task, plan, root), record=task.record)
        for task in killed(plan, settings.spec)
    ]


def killed(plan: Plan, spec: str) -> list[TaskView]:
    """The tasks DECOMPOSE runs on: the spec's killed ones."""
    return [task for task in plan.task_views(spec) if task.killed]


def _values(task: TaskView, plan: Plan, root: Path) -> dict[str, object]:
    """What DECOMPOSE is told: the task, why it was killed, the head and tail of the killed
    run's log, what the verifiers said, and where its set-aside changes are."""
    log = kill_log_of(task, root)
    head, tail = log_sample(log) if log else ("(no log)", "(no log)")
    patch = log.with_suffix(".patch") if log else None
    rejections = verify_reasons(plan, task.id)  # not the loop's kills, recorded alike
    return {
        "task_id": task.id,
        "task_name": one_line(task.name),
        "task_details": task_details(task.record, {}, plan.answers_for(task.id)),
        "kill_reason": task.kill_reason,
        "what_happened": what_happened(task, len(rejections)),
        "kill_log": one_line(task.kill_log) if log and task.kill_log else "(none)",
        "log_head": data_block("first lines of the log", head),
        "log_tail": data_block("last lines of the log", tail),
        "rejections": data_block("what VERIFY said each time", "\n".join(f"- {r}" for r in rejections))
        if rejections
        else "(VERIFY never rejected it)",
        "patch": str(patch.relative_to(root.resolve()))
        if patch and patch.is_file()
        else "(no changes were set aside)",
    }


def kill_log_of(task: TaskView, root: Path) -> Path | None:
    """The killed run's log, only if it is one of ralph's logs: kill_log comes from the plan, and
    an absolute or ../ path there would put any readable file into a prompt a model reads."""
    if not task.kill_log:
        return None
    path = (root / task.kill_log).resolve()
    return path if _inside(path, (root / LOG_DIR).resolve()) else None


_HAPPENED = {
    KillReason.TIMEOUT: "ralph killed its build: the agent run hit its time limit.",
    KillReason.CONTEXT_LIMIT: "ralph killed its build: the agent's context window filled up.",
    KillReason.REPEATED_FAILURE: "its last two builds failed the same way (the same verdict and the same"
    " output but for numbers, ids, paths and times), so ralph stopped building it as it is.",
}


def what_happened(task: TaskView, rejections: int) -> str:
    """Why the task is being split, as it happened: ralph killed a run (time, context), its builds
    failed the same way twice, or the loop set it aside in its own words (builds that kept failing,
    VERIFY's rejections, VERIFY runs that never finished); never the loop's words as VERIFY's."""
    reason = task.kill_reason
    said = _HAPPENED.get(reason) if reason else None
    if said is None:
        said = f"ralph set it aside: {task.reject_reason or reason or 'it kept failing'}."
    facts = [f"built {plural(task.attempts, 'time')}"] if task.attempts else []
    facts += [f"rejected by VERIFY {plural(rejections, 'time')}"] if rejections else []
    said += f" It was {' and '.join(facts)}." if facts else ""
    evidence = task.record.get("repeated_failure") if reason is KillReason.REPEATED_FAILURE else None
    if evidence:
        first, second = evidence
        said += "\n\n" + data_block("the first failure", first) + "\n\n" + data_block("the second", second)
    return said


def _inside(path: Path, folder: Path) -> bool:
    return path != folder and path.is_relative_to(folder)


def log_sample(path: Path, head_lines: int = 50, tail_lines: int = 100, width: int = 400) -> tuple[str, str]:
    """The first and last lines of a log, each redacted, then cut to `width`: never the whole log
    (the raw log is the agent's own output, secrets and all)."""
    if not path.is_file():
        return "(no log)", "(no log)"
    with open(path, "rb") as handle:
        head = [handle.readline() for _ in range(head_lines)]
        size = handle.seek(0, 2)
        handle.seek(max(0, size - 64 * 1024))
        tail = handle.read().splitlines()[-tail_lines:]

    def clean(lines: list[bytes]) -> str:
        redact = OutputLines()  # a private key block spanning lines is hidden whole
        texts = (line.decode("utf-8", "replace").rstrip() for line in lines if line)
        return "\n".join(redact.head(text, width) for text in texts)

    return clean(head), clean(tail)
