"""What a BUILD attempt's run did, gathered as one value (`AttemptFacts`, with what applying it needs
besides: build_apply.Attempt), asked in the order ralph.loop.stages.build_outcome.decide reads it:
a kill, the task gone from the plan, a question, a resubmission, then ralph's own judgement of the
build (a violation, a broken plan, a nested repository, an agent error, not done, no changes, the
gate, the pre-commit hook, the task's scope and type), then what the tree waives and what a
counted failure leaves."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ralph.loop.observe.journal import Span
from ralph.loop.process.gate import GateResult
from ralph.loop.process.supervisor import BudgetSpent
from ralph.loop.runs.agent_process import AgentResult, PlanProblem
from ralph.loop.runs.prompts import excerpt
from ralph.loop.stages.agent_errors import error_lines
from ralph.loop.stages.build_apply import Attempt, failed
from ralph.loop.stages.build_outcome import AttemptFacts, Counted, Failure
from ralph.loop.stages.workspace import Workspace
from ralph.loop.tree.plan_access import PLAN_FILE
from ralph.loop.tree.work_tree import judge_failure
from ralph.plan.attempts import BuildHistory, failed_the_same_twice
from ralph.plan.document import Record
from ralph.plan.families import family_of
from ralph.plan.plan import Plan
from ralph.plan.records import KILLING_STOPS, Verdict, is_blocked, is_done
from ralph.plan.run_records import AttemptRecord
from ralph.plan.schedule import buildable
from ralph.plan.scope import outside
from ralph.plan.type_rules import breach
from ralph.secrets import redact
from ralph.usecases.settings import Settings

HISTORY_EXCERPT_CHARS = 1500


class BuildFacts:
    """What a BUILD attempt's run did, in the workspace it ran in."""

    def __init__(self, ws: Workspace):
        self.ws = ws
        self.plan, self.agents, self.tree = ws.plan, ws.agents, ws.tree

    def gather(
        self, task_id: str, result: AgentResult, iteration: int, past: BuildHistory
    ) -> tuple[AttemptFacts, Attempt]:
        """What the attempt's run did, asked in decide's order: the gate runs only on a build that
        is to be judged, and the tree's waivers (stale base, deferral) are spent only on a failure
        that reaches them. `past`: the task's history as the attempt began (its run changes none of
        what counts a failure)."""
        stop = result.run.stop_reason
        if stop in KILLING_STOPS:
            return AttemptFacts(killed=KILLING_STOPS[stop]), Attempt(result)
        plan = self.plan.after(result)
        after = plan.find_task(task_id)  # the task as the agent left it
        if after is None:  # its agent removed it (found it done), or a person deleted it meanwhile
            return AttemptFacts(in_plan=False), Attempt(result)
        asked = [] if result.violation else _questions(plan, after)
        if asked:
            return AttemptFacts(asked=True), Attempt(result, questions=tuple(asked))
        problem = result.plan_problem
        if not (result.violation or problem) and _resubmitted_unchanged(after, result):
            return AttemptFacts(resubmitted=True), Attempt(result)
        failure, changed = self._build_failure(after, result, problem, iteration)
        if failure is None:
            return AttemptFacts(), Attempt(result, frozenset(changed), name=str(after["name"]))
        others = self.others_ready(task_id) if failure.verdict is Verdict.AGENT_ERROR else []
        tree = judge_failure(self.tree, task_id, failure.verdict, bool(others))
        in_worktree = self.tree.in_worktree
        if tree.stale:  # built again on the new HEAD, uncounted
            return AttemptFacts(failure=failure, stale=True, in_worktree=in_worktree), Attempt(result)
        if tree.deferred:  # built again once other tasks move the code, uncounted
            facts = AttemptFacts(failure=failure, in_worktree=in_worktree, deferred=True)
            return facts, Attempt(result, others=tuple(others))
        counted = self.counted(failed(failure, result), past)
        facts = AttemptFacts(failure=failure, counted=counted, from_head=tree.from_head)
        return facts, Attempt(result, counted=counted)

    def counted(self, failed: AttemptRecord, past: BuildHistory) -> Counted:
        """The task as this failure, recorded, would leave it (worked out on a copy of its record,
        `past`: its history before; build_apply records it)."""
        settings = self.ws.settings
        after = past.after(failed)
        task = after.task
        return Counted(
            ancestor=task.get("repeated_from"),
            family=family_of(task),
            out_of_builds=after.out_of_builds(settings.max_attempts, settings.max_rebuilds),
            same_twice=failed_the_same_twice(task),
            splittable=task.get("depth", 0) < settings.max_decompose_depth,
            depth=task.get("depth", 0),
            repeated=tuple(task.get("repeated_failure") or ()),
        )

    def others_ready(self, task_id: str) -> list[str]:
        """The other tasks ready to build that do not wait for the code to move: their builds may
        bring what this one lacks."""
        waiting = self.tree.waiting_for_code()
        return [
            task["id"]
            for task in buildable_now(self.plan.read(), self.ws.settings)
            if task["id"] != task_id and task["id"] not in waiting
        ]

    def _build_failure(
        self, task: Record, result: AgentResult, problem: PlanProblem | None, iteration: int
    ) -> tuple[Failure | None, set[str]]:
        """Why this attempt does not count as built (None when it passed the gate), and the files
        it changed as the gate and hook left them."""
        if result.violation:
            return Failure(
                Verdict.PERMISSION_VIOLATION, f"{Verdict.PERMISSION_VIOLATION}: {result.violation}"
            ), set()
        if problem:
            return Failure(problem.verdict, problem.text), set()
        nested = self._nested_failure(result)
        if nested:
            return nested, set()
        if _errored_doing_nothing(task, result):
            said = "\n".join(error_lines(result))
            text = f"{Verdict.AGENT_ERROR}: the agent ended ({result.describe()}) on this task:\n{said}"
            return Failure(Verdict.AGENT_ERROR, _for_history(text, result.log_path)), set()
        if not is_done(task):
            tail = "\n".join(result.run.tail[-15:])
            ended = f"the agent ended ({result.describe()}) without running `ralph task done`."
            return Failure(Verdict.NOT_DONE, _for_history(f"{ended}\n{tail}", result.log_path)), set()
        if not task.get("no_code") and not result.changed - {PLAN_FILE}:
            return Failure(
                Verdict.NO_CHANGES,
                f"{Verdict.NO_CHANGES}: the agent marked the task done but changed no file. Build it; if"
                ' it truly needs no change, the task must say so ("no_code": true).',
            ), set()
        log = self.agents.new_log("gate", task["id"])
        span = self.ws.journal.span(
            "gate",
            item=task["id"],
            iteration=iteration,
            log=str(self.agents.rel(log)),
            worker=self.agents.worker,
        )
        settings = self.ws.settings
        gate = self._run_check(settings.gate, log, task["id"], span, "gate")
        changed = self._the_builds(result.changed, "by the gate")
        self.tree.building |= changed - {PLAN_FILE}
        span.end(ok=gate.ok, summary=None if gate.ok else redact(gate.summary).strip()[:600])
        self.ws.console.gate(
            task["id"], gate.ok, gate.summary, str(self.agents.rel(log)), tagged=self.tree.in_worktree
        )
        if not gate.ok:
            return Failure(Verdict.GATE_FAILED, _for_history(gate.summary, self.agents.rel(log))), set()
        refused = None
        if settings.run_hooks:
            refused = self._hook_failure(task["id"], iteration)
            changed = self._the_builds(frozenset(changed), "by the pre-commit hook")
            self.tree.building |= changed - {PLAN_FILE}
        own = changed - {PLAN_FILE}
        return refused or self._scope_failure(task, own) or self._type_failure(task, own), changed

    def _run_check(self, argv: Sequence[str], log: Path, task_id: str, span: Span, what: str) -> GateResult:
        """The gate (or pre-commit hook) run on the build. One the loop's stop cut short (a signal,
        a spent budget) is no verdict on the build: it is journalled as cut short (never as the
        build's failure, never as an attempt) and the stop goes on, the build set aside with the
        rest of the loop's unfinished work."""
        try:
            result = self.agents.gate(argv, log)
        except (KeyboardInterrupt, BudgetSpent):  # the stop reached this thread in the gate
            self._cut_short(task_id, log, span, what)
            raise
        if result.cut_short:  # the stop came from another thread (a neighbour's budget, a signal)
            self._cut_short(task_id, log, span, what)
            raise KeyboardInterrupt
        return result

    def _cut_short(self, task_id: str, log: Path, span: Span, what: str) -> None:
        shown = str(self.agents.rel(log))
        span.end(ok=None, cut_short=True)
        self.ws.journal.event("gate_cut_short", item=task_id, what=what, log=shown)
        self.ws.console.event(f"{what} for {task_id}: cut short, ralph is stopping (no verdict), log {shown}")

    def _the_builds(self, before: frozenset[str], when: str) -> set[str]:
        """The build's paths after its gate (or hook) ran: those it had changed `before`, as the
        gate left them (a formatter in it writes for the build). What the gate made or touched
        besides (a coverage file, a build artifact) is not the build's: left unstaged, with a
        warning, never committed, never counted against its scope."""
        changed = self.tree.changed_paths()
        self.tree.leave_foreign_changes(when, among=changed - before)
        return changed & (before | {PLAN_FILE})

    def _nested_failure(self, result: AgentResult) -> Failure | None:
        """A git repository the agent made inside the work tree (`git init`, `git clone`) would be
        committed as a bare gitlink, its files in no commit, or refused by `git add`: its files
        stay as plain files for the next attempt, its .git is kept beside the log."""
        nested = self.tree.unnest(result.changed - {PLAN_FILE}, result.log_path)
        if not nested:
            return None
        kept = self.agents.rel(result.log_path).with_suffix(".nested")
        return Failure(
            Verdict.NESTED_REPOSITORY,
            f"{Verdict.NESTED_REPOSITORY}: the build made git repositories inside the work tree"
            f" ({', '.join(nested)}). Their files stay, as plain files of this repository; their"
            f" .git folders are kept in {kept}. Never run `git init` or `git clone` in the work tree.",
        )

    def _scope_failure(self, task: Record, changed: set[str]) -> Failure | None:
        """A task that declares its scope may change only the files it names."""
        strays = outside(task.get("scope"), changed)
        if not strays:
            return None
        allowed = ", ".join(task["scope"])
        return Failure(
            Verdict.SCOPE_VIOLATION,
            f"{Verdict.SCOPE_VIOLATION}: the build changed files outside the task's scope ({allowed}): "
            + ", ".join(strays[:50]),
        )

    def _type_failure(self, task: Record, changed: set[str]) -> Failure | None:
        """A docs, test or refactor task may change only what its type allows
        (ralph.plan.type_rules); the files its scope names are always allowed."""
        found = breach(
            task.get("type"),
            task.get("scope"),
            changed,
            self.tree.repo.changes.at_head,
            self.ws.settings.docs_paths,
        )
        if found is None:
            return None
        return Failure(
            Verdict.TYPE_VIOLATION,
            f"{Verdict.TYPE_VIOLATION}: {found.rule}; undo the changes to these files, or leave them to"
            " another task: " + ", ".join(found.files[:50]),
        )

    def _hook_failure(self, task_id: str, iteration: int) -> Failure | None:
        """With run_hooks: the repository's pre-commit hook (a secret scanner, a linter) sees the
        build staged, as it would a person's commit; ralph's own commit then skips it. A hook in the
        work tree runs as the commit the run started on has it (ralph.loop.process.commit_hook)."""
        import tempfile

        from ralph.loop.process.commit_hook import hook_argv

        with tempfile.TemporaryDirectory(prefix="ralph-hook-") as own:
            argv = hook_argv(self.tree.repo, self.agents.runner.started, Path(own))
            if argv is None:
                return None
            return self._run_hook(argv, task_id, iteration)

    def _run_hook(self, argv: list[str], task_id: str, iteration: int) -> Failure | None:
        self.tree.repo.index.stage_paths(self.tree.changed_paths() - {PLAN_FILE})
        log = self.agents.new_log("hook", task_id)
        span = self.ws.journal.span("hook", item=task_id, iteration=iteration, log=str(self.agents.rel(log)))
        result = self._run_check(argv, log, task_id, span, "pre-commit hook")
        span.end(ok=result.ok, summary=None if result.ok else redact(result.summary).strip()[:600])
        relative = str(self.agents.rel(log))
        self.ws.console.gate(
            task_id, result.ok, result.summary, relative, what="pre-commit hook", tagged=self.tree.in_worktree
        )
        if result.ok:
            return None
        refusal = f"the pre-commit hook refused the build:\n{result.summary}"
        return Failure(Verdict.HOOK_REFUSED, _for_history(refusal, self.agents.rel(log)))


def buildable_now(plan: Plan, settings: Settings) -> list[Record]:
    """The spec's tasks BUILD may start now, in order: pending, not set aside, their dependencies
    accepted."""
    return buildable([task.record for task in plan.task_views(settings.spec)], plan.accepted())


def _errored_doing_nothing(task: Record, result: AgentResult) -> bool:
    """The agent ended in an error of its own (not stopped by ralph) without marking the task done
    or changing a file: what it says is why (Verdict.AGENT_ERROR)."""
    stopped = result.run.stop_reason is not None
    return not is_done(task) and not result.ok and not stopped and not result.changed - {PLAN_FILE}


def _resubmitted_unchanged(task: Record, result: AgentResult) -> bool:
    """The builder marked the rejected task done with `--unchanged` and changed no file."""
    return is_done(task) and bool(task.get("resubmitted")) and not result.changed - {PLAN_FILE}


def _questions(plan: Plan, task: Record) -> list[str]:
    """The questions the task's agent asked a person (`ralph ask`), which blocked it."""
    asked = plan.questions_of(task["id"])
    if not asked or not is_blocked(task):
        return []
    return [question["id"] for question in asked]


def _for_history(output: str, log: Path) -> str:
    """What of a failure goes into plan.jsonl, and so into git history for good: a short excerpt
    with secrets redacted, pointing to the full output in the (ignored) log."""
    return f"{excerpt(redact(output), HISTORY_EXCERPT_CHARS)}\n(full output: {log})"  # redacted, then cut
