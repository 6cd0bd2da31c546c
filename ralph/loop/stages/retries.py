"""Agent runs for a stage: one run of a job, waited through rate limits and retried when the agent
failed without doing anything, continued in a fresh run when its context is compacted, then
checked: its plan (deleted, broken, replaced), its work tree (removed), its stage's permissions,
its spending. The journal and the console hear of each. Also the runs' logs, and the gates and
hooks that run under the same supervisor and sandbox as the agents."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from ralph.errors import PlanInvalid, WorkTreeGone
from ralph.loop.observe.console import Console
from ralph.loop.observe.journal import Journal
from ralph.loop.process import sandbox
from ralph.loop.process.gate import GateResult, run_gate
from ralph.loop.process.sandbox import Fence
from ralph.loop.process.supervisor import BudgetSpent
from ralph.loop.runs.agent_process import AgentResult, AgentRunner, PlanProblem, SandboxFailed
from ralph.loop.runs.compaction import MAX_COMPACTIONS, Compacted, Stopped, compacted
from ralph.loop.runs.cost import run_cost
from ralph.loop.runs.judged import JudgedInputs, guarded
from ralph.loop.runs.permissions import CODE_STAGES, PLAN_ONLY_STAGES, Snapshot, violations
from ralph.loop.runs.rate_limits import LimitWaits
from ralph.loop.stages.agent_errors import (
    AgentFailures,
    Judgement,
    WorkState,
    did_nothing_and_failed,
    work_marks,
)
from ralph.loop.tree import beside_changes
from ralph.loop.tree.plan_access import PLAN_FILE, PlanAccess
from ralph.loop.tree.work_tree import WorkTree
from ralph.plan.attempts import failed_builds
from ralph.plan.document import Record
from ralph.plan.plan import Plan
from ralph.plan.records import Stage, StopReason, Verdict
from ralph.store import lock, reader
from ralph.store.files import free_name
from ralph.store.git import Repo
from ralph.store.lock import RALPH_FILES
from ralph.usecases.settings import Settings


class TreeRemoved(WorkTreeGone):
    """An agent run removed the work tree it ran in (a build's worktree), or unlinked it from the
    repository: that build's attempt failed, with nothing left to check. `result`: the run."""

    def __init__(self, result: AgentResult):
        super().__init__(f"the agent removed the work tree it ran in (log {result.log_path})")
        self.result = result


class Deadline:
    """The run's wall-clock budget, checked before every agent run (and by the supervisor while
    one runs: `at`)."""

    def __init__(self, minutes: float | None):
        self.minutes = minutes
        self.started = time.monotonic()
        self.at = None if minutes is None else self.started + minutes * 60

    def check(self) -> None:
        if self.minutes is not None and time.monotonic() - self.started > self.minutes * 60:
            raise BudgetSpent(f"the time budget ({self.minutes:g} minutes) is spent")


class AgentRuns:
    def __init__(
        self,
        runner: AgentRunner,
        settings: Settings,
        plan: PlanAccess,
        tree: WorkTree,
        journal: Journal,
        console: Console,
        deadline: Deadline,
    ):
        self.runner, self.settings, self.plan, self.tree = runner, settings, plan, tree
        self.journal, self.console, self.deadline = journal, console, deadline
        self.worker: int | None = None  # which of the parallel builds, in the journal
        self.current_build: str | None = None  # the task of the last agent run, when it was a BUILD
        self.limits = LimitWaits(
            settings.max_wait_s,
            settings.limit_backoff_s,
            deadline.at,
            journal,
            console.limit_wait,
            runner.supervisor,
            runner.adapter.auth_hint,
        )
        self.agent_failures = AgentFailures(
            settings.max_agent_failures,
            settings.agent_retry_s,
            journal,
            console.event,
            runner.supervisor,
            deadline.check,
        )
        self._tokens = [0]  # shared with the runs of builds in worktrees
        self._count = threading.Lock()
        self.spending = runner.spending

    def for_worktree(self, plan: PlanAccess, tree: WorkTree, worker: int | None) -> AgentRuns:
        """The runs of a build in a worktree: its plan and work tree; the budgets, limits and
        totals shared."""
        import copy

        child = copy.copy(self)
        child.plan, child.tree, child.worker, child.current_build = plan, tree, worker, None
        return child

    @property
    def tokens(self) -> int:
        return self._tokens[0]

    def add_tokens(self, tokens: int) -> None:
        with self._count:  # builds in worktrees count at once
            self._tokens[0] += tokens

    # --- logs, and the other processes that run as the agents do --------------------------------
    @property
    def log_dir(self) -> Path:
        return self.runner.log_dir

    def new_log(self, kind: str, item: str | None = None) -> Path:
        """A fresh log's path (absolute), named for `kind` and the item."""
        return self.runner.new_log(kind, item)

    def rel(self, log: Path) -> Path:
        """A log's path relative to the repository the loop runs in."""
        return self.tree.rel(log)

    def judged(self) -> JudgedInputs | None:
        """What judges read, as the run's first commit has it (None: the run has no commit yet)."""
        return self.runner.judged

    def gate(self, argv: Sequence[str], log: Path) -> GateResult:
        """`argv` (a gate, a hook) run in the work tree under the agents' supervisor and sandbox,
        its output in `log`, within the gate's time limit."""
        runner, timeout = self.runner, self.settings.gate_timeout_s
        return run_gate(runner.supervisor, argv, self.tree.root, log, timeout, runner.sandbox)

    @property
    def stopping(self) -> bool:
        """Whether the loop is stopping (a signal, a spent budget): nothing more is started or kept."""
        return self.runner.supervisor.stopping

    def stop_all(self) -> None:
        """Stop every agent and gate running now (the loop is stopping, in another thread)."""
        self.runner.supervisor.stop_all()

    # --- runs ----------------------------------------------------------------------------------

    def run_agent(
        self,
        stage: Stage,
        iteration: int,
        item: str | None,
        values: dict[str, object],
        cwd: Path | None = None,
        plan: Plan | None = None,
        state: WorkState | None = None,
    ) -> AgentResult:
        """One agent run of `stage` on `item`, and its continuations: a run stopped at the
        context's compact tier goes on in a fresh run that opens with a compacted context, up to
        MAX_COMPACTIONS times (then it counts as stopped at the context limit). `plan`: the plan
        the caller read for this step (read here when not given), passed on rather than read
        again; the result carries the plan as the run left it (`result.plan`). `state`: HEAD and
        the changed paths of `cwd` as the caller just found them (VERIFY's checkout), so that
        git is not asked again before the run."""
        carried: Compacted | None = None
        for compactions in range(MAX_COMPACTIONS + 1):
            result = self._run_once(stage, iteration, item, values, carried, cwd, plan, state)
            state = None  # a continuation starts where the run before it left the tree
            if result.run.stop_reason is not StopReason.CONTEXT_COMPACT:
                return result
            if compactions == MAX_COMPACTIONS:  # compacting again and again is no progress
                result.run.stop_reason = StopReason.CONTEXT_LIMIT
                return result
            carried = self._compact(stage, item, values, result, cwd)
            plan = self.plan.after(result)
        raise AssertionError("unreachable: the last compaction returns")

    def _compact(
        self, stage: Stage, item: str | None, values: dict[str, object], result: AgentResult, cwd: Path | None
    ) -> Compacted:
        fill = result.pressure.fill if result.pressure else 0.0
        self.journal.event(
            "context_compact",
            stage=str(stage),
            item=item,
            fill_before=round(fill, 4),
            log=str(result.log_path),
        )
        repo = Repo(cwd) if cwd else self.tree.repo
        changed = sorted(
            path for path in repo.changes.paths() - self.tree.user_dirty if not RALPH_FILES.fullmatch(path)
        )
        code = {path for path in changed if path != PLAN_FILE}
        details = str(values.get("task_details") or values.get("issue_text") or "")  # str already
        name = _name_of(self.plan.after(result), item)
        stopped = Stopped(
            stage,
            item,
            name,
            details,
            fill,
            changed,
            repo.changes.diff_stat(code) if code else "",
            result.run.tail,
        )
        return compacted(stopped)

    def _run_once(
        self,
        stage: Stage,
        iteration: int,
        item: str | None,
        values: dict[str, object],
        compacted: Compacted | None,
        cwd: Path | None,
        plan: Plan | None,
        state: WorkState | None = None,
    ) -> AgentResult:
        self.deadline.check()
        over = self.spending.admit()  # counts the run as started when it may start
        if over:
            raise over
        model = self.settings.model_for(stage)
        try:
            old_plan = plan or self.plan.read()
            model = run_model(self.settings, stage, old_plan.find_task(item) if item else None)
            self.plan.set_state(None if self.tree.in_worktree else old_plan, stage=str(stage))
            self.current_build = item if stage is Stage.BUILD else None
            if not self.tree.in_worktree:  # an agent works in the loop's own tree again
                self.tree.agents_elsewhere = False
            self.console.status(iteration, stage, item or "")
            before = self._snapshot_before(stage)
            cwd = cwd or (self.tree.root if self.tree.in_worktree else None)
            if before is not None and (cwd or self.tree.root) == self.tree.root:  # the tree it runs in
                state = (before.head, before.listed)
            name = _name_of(old_plan, item)
            with self._fenced(stage) as fence:
                result = self._run_waiting_out_limits(
                    stage, iteration, item, values, compacted, cwd, name, model, state
                )
            if result.run.stop_reason is StopReason.INTERRUPTED:
                # The loop is stopping (a signal, a spent budget, in another thread): the run was
                # cut short, which is no verdict on its work. It is set aside like the rest; taken
                # as a failure, the next attempts (never started) killed the task as a doom loop.
                raise KeyboardInterrupt
        except BaseException:
            self.add_tokens(self.spending.stopped(str(stage), item, model))
            raise
        if self._keep_lost_tree(result):  # the run removed its own work tree: nothing to check
            self.spending.stopped(str(stage), item, model)  # what it streamed counts
            self.add_tokens(result.tracker.usage.total)
            raise TreeRemoved(result)
        result.plan_problem = self.check_plan(result, in_tree=before is not None)  # None: a verifier's
        if before is not None:
            self.enforce(stage, {item} if item else set(), before, old_plan, [result], result.plan, fence)
        self._count_spent(stage, iteration, item, result)
        return result

    def _count_spent(self, stage: Stage, iteration: int, item: str | None, result: AgentResult) -> None:
        """A finished run's tokens and cost added to the run's, shown and journalled."""
        self.add_tokens(result.tracker.usage.total)
        usage = result.tracker.usage
        model = result.model or result.tracker.model
        cost = run_cost(usage, model, self.settings.prices)
        unholdable = self.spending.add(str(stage), item, usage.total, cost, model)
        if unholdable is not None:  # said now: runs going finish, and the loop ends after them
            self.journal.event("cost_unknown", stage=str(stage), item=item, model=model)
            self.console.event(str(unholdable))
        self.console.status(iteration, stage, item or "", self.tokens)
        spending = self.spending
        self.console.spent(self.tokens, spending.cost_usd, spending.known_runs, spending.unknown_runs)
        self.journal.event(
            "spent",
            tokens=self.tokens,
            cost_usd=round(spending.cost_usd, 6),
            known_runs=spending.known_runs,
            unknown_runs=spending.unknown_runs,
        )

    def _run_waiting_out_limits(
        self,
        stage: Stage,
        iteration: int,
        item: str | None,
        values: dict[str, object],
        compacted: Compacted | None,
        cwd: Path | None,
        name: str | None,
        model: str | None,
        state: WorkState | None = None,
    ) -> AgentResult:
        root = cwd or self.tree.root
        marks = functools.partial(work_marks, root, RALPH_FILES)
        while True:  # an agent that failed without doing anything is judged by its reach
            before = marks(state=state)
            state = None  # a run again after a failure: its marks are taken anew
            result = self._run_limited(stage, iteration, item, values, compacted, cwd, name, model)
            if not did_nothing_and_failed(result, before, marks):
                self.agent_failures.good()
                return result
            self._raise_if_the_fence_failed(result)
            judgement = self.agent_failures.judge(result, str(stage), item, [name] if name else [])
            if judgement is Judgement.TASK_ERROR:
                return result  # the task's failed attempt: BUILD judges it
            if judgement is Judgement.AGAIN and stage is Stage.BUILD and self._others_may_help(item):
                # It may lack a neighbour's change, or another task's: BUILD gives it back or defers
                # it (uncounted, once per code). Were the error the agent's, the next task's run
                # says the same, which ends the run then.
                return result
            self._count_spent(stage, iteration, item, result)  # spent, if not an attempt
            if not self.agent_failures.wait(result, str(stage), item, judgement):
                raise KeyboardInterrupt  # ralph is stopping meanwhile: as for a run it interrupted
            self._admit_again()

    def _others_may_help(self, item: str | None) -> bool:
        """A build of `item` may fail for want of what other builds bring: it is behind or beside
        builds that may merge, or other tasks of the spec are ready to build."""
        if item is None:
            return False
        if self.tree.may_be_stale(item):
            return True
        from ralph.plan.schedule import buildable

        plan = self.plan.read()
        ready = buildable([task.record for task in plan.task_views(self.settings.spec)], plan.accepted())
        return any(task["id"] != item for task in ready)

    def _raise_if_the_fence_failed(self, result: AgentResult) -> None:
        """bwrap, not the agent, ended a run that did nothing (`bwrap: ...`, exit 1): every run
        would end the same way, so the loop ends now, the sandbox named with the fix, never an
        agent failure waited out and retried."""
        if self.runner.sandbox is None:
            return
        line = sandbox.setup_failure(result.run.exit_code, result.run.tail)
        if line is not None:
            raise SandboxFailed(sandbox.failed_setup(line))

    def _admit_again(self) -> None:
        """A run started again (after an agent failure, a limit waited out: neither an attempt)
        is admitted by the budgets as any run is: BudgetSpent when it may not start."""
        over = self.spending.admit()
        if over:
            raise over

    def _run_limited(
        self,
        stage: Stage,
        iteration: int,
        item: str | None,
        values: dict[str, object],
        compacted: Compacted | None,
        cwd: Path | None,
        name: str | None,
        model: str | None,
    ) -> AgentResult:
        run = functools.partial(
            self.runner.run,
            stage,
            iteration,
            item,
            values,
            compacted,
            cwd,
            worker=self.worker,
            name=name,
            model=model,
            starting=self.agent_failures.starting,  # no run begins once the agent's failures ended the loop
        )
        result = run()
        waits = 0  # a rate or usage limit is waited out, then the same run again: not an attempt
        while not result.ok and not result.run.stop_reason:
            if not self.limits.should_retry(result.tracker.failure, waits, str(stage), item):
                break
            waits += 1
            self._count_spent(stage, iteration, item, result)  # spent, if not an attempt
            self._admit_again()
            result = run()
        return result

    @contextlib.contextmanager
    def _fenced(self, stage: Stage) -> Iterator[Fence | None]:
        """What the runs of one step of a plan-only stage could write in the work tree, measured
        around them (ralph.loop.process.sandbox.Fence: with the sandbox, nothing but the plan and new
        top-level names; without, everything); None for the other stages."""
        if stage not in PLAN_ONLY_STAGES:
            yield None
        elif self.runner.sandbox is None:
            yield Fence.open(self.tree.root)
        else:
            with self.runner.sandbox.fencing(self.tree.root) as fence:
                yield fence

    def _snapshot_before(self, stage: Stage) -> Snapshot | None:
        """The work tree before a run, once what changed since the loop's last step that is not
        the current build's is left alone. A verifier works in a checkout of its own, which VERIFY
        inspects: nothing to compare here (None)."""
        before = self.tree.snapshot()
        building = self.tree.building if stage is Stage.BUILD else set()
        if self.tree.leave_foreign_changes(f"before the {stage} run", among=before.dirty - building):
            kept = before.dirty - self.tree.user_dirty
            before = replace(before, dirty=kept)
        return before if stage is not Stage.VERIFY else None

    def enforce(
        self,
        stage: Stage,
        own: set[str],
        before: Snapshot,
        old: Plan,
        results: list[AgentResult],
        now: Plan | None = None,
        fence: Fence | None = None,
    ) -> list[str]:
        """Undo runs that broke their stage's rules: HEAD and branch put back, their changes saved
        as a patch beside the (first) log and reverted, plan.jsonl as before. Returns what they did.
        Runs that kept the rules learn the paths they left changed (`changed`). `fence`: what a
        plan-only stage's runs could write (_fenced); a change to code it rules out is a person's
        (_leave_persons_code), any other is the runs' violation."""
        lock_replaced = self._restore_lock(results[0].log_path)
        hidden = self._hidden(fence)
        after = self.tree.snapshot()
        if hidden:  # under names the runs may have made: theirs, whoever's ignore rule hides them
            after = replace(after, dirty=after.dirty | hidden)
        if stage not in CODE_STAGES:
            after = self._leave_persons_code(stage, before, after, fence)
        if self.runner.sandbox is not None:  # its .git was read-only: HEAD moved by someone else
            after = replace(after, head=before.head, branch=before.branch, listed=frozenset())
        now = now or self.plan.read()
        persons = beside_changes.since(self.tree.repo, before.beside_at)
        if persons.keys:  # a person's changes meanwhile (ralph.store.beside): judged on top of them
            old = beside_changes.with_persons_changes(old, now, persons)
            for result in results:
                result.with_persons = old
        found = (
            self._log_folder_replaced()
            + violations(stage, own, before, after, old, now, guarded(self.settings.spec))
            + lock_replaced
        )
        if not found:
            self.tree.commit_persons_changes(persons, old)
            changed = frozenset(path for path in after.dirty if not RALPH_FILES.fullmatch(path))
            for result in results:
                result.changed = changed
            if stage in CODE_STAGES:
                self.tree.building |= changed - {PLAN_FILE}
            return found
        if self.tree.repo.branch() != before.branch and before.branch:
            self.tree.repo.git("symbolic-ref", "HEAD", f"refs/heads/{before.branch}")
        if self.tree.repo.head() != before.head and before.head:
            self.tree.repo.git("reset", "-q", "--soft", before.head)  # its commits become changes to undo
        log = results[0].log_path
        self.tree.restore_links(before.links, log)  # first: git then acts on the submodules' own
        patch = self.tree.set_aside(log, also=hidden)
        self.tree.keep_replaced_plan(log, old)
        self.plan.restore(old.doc.to_bytes())
        self.tree.commit_persons_changes(persons, old)
        for result in results:
            result.violation = "; ".join(found)
            result.plan = old  # as it was put back
        items = sorted(own)
        kept = str(self.rel(patch)) if patch else None
        self.journal.event(
            "permission_violation", stage=str(stage), items=items, did=found, log=str(log), patch=kept
        )
        who = " ".join([str(stage), *items])
        self.console.event(f"{who}: permission violation, undone: {'; '.join(found)}")
        if kept and fence is not None:  # a person's edit may be among them: where it is, how it comes back
            self.console.event(
                f"{who}: the changes it undid are kept in {kept}; one of yours among them comes back"
                f" with `git apply --include=<file> {kept}`"
            )
        return found

    def _restore_lock(self, log: Path) -> list[str]:
        """plan.jsonl's lock, which ralph alone makes (a regular file), put back if a run replaced
        it (a link, a folder: every later command would fail to take it): the run's violation, what
        it left there kept beside its log."""
        root = self.tree.root
        keep = free_name(self.tree.home / log.with_suffix(f".{lock.LOCK_NAME}"))
        found = lock.restore(root / lock.LOCK_NAME, keep)
        if found is None:
            return []
        return [f"replaced {lock.LOCK_NAME} with {found} (ralph's lock put back; kept as {self.rel(keep)})"]

    def _hidden(self, fence: Fence | None) -> frozenset[str]:
        """Files a plan-only step's runs may have written that an ignore rule written beside them
        hides from git (a new folder holding a `.gitignore` of `*`): how a run would keep its code
        out of every check. Looked for under the names the runs could write (Fence.searched); what
        the repository's own rules ignore is not counted (a dependency folder a person installs)."""
        if fence is None:
            return frozenset()
        searched = fence.searched(self.tree.root)
        return frozenset(self.tree.repo.changes.hidden_in(searched)) if searched else frozenset()

    def _leave_persons_code(
        self, stage: Stage, before: Snapshot, after: Snapshot, fence: Fence | None
    ) -> Snapshot:
        """`after`, without the changes to code (files but plan.jsonl) that no run of a stage that
        changes no code can have made, which are left as they are, unstaged, as a person's.

        VERIFY's agents run in checkouts of their own: fenced, this work tree is read-only to them
        and a change in it meanwhile is never theirs; unfenced, a verifier can reach it (its
        checkout names the repository) and a change is taken for theirs. A plan-only stage's agents
        run here, and a change meanwhile is theirs (their violation, set aside) unless their fence
        rules it out (ralph.loop.process.sandbox.Fence): with the sandbox, anything under a top-level entry
        they saw read-only. Nothing else tells a person's
        edit from the agent's: same user, same files, same minutes; the agent's own word is no
        evidence. Unfenced, then, a person's edit during such a run is taken for the agent's, and
        the patch beside the log keeps it (the console says how it comes back): an agent's code
        left in place, however unstaged, would run in every later gate and agent run."""
        strays = (after.dirty ^ before.dirty) - {PLAN_FILE}
        fenced_verifiers = stage is Stage.VERIFY and self.runner.sandbox is not None  # this tree read-only
        held = frozenset(
            path for path in strays if fenced_verifiers or (fence is not None and fence.holds(path))
        )
        if not held:
            return after
        self.tree.leave_foreign_changes(f"during the {stage} run", among=held)
        return replace(after, dirty=after.dirty - held, listed=frozenset())

    def _log_folder_replaced(self) -> list[str]:
        """The run replaced the log folder (or build/) with a link or a folder of its own: put
        back, what stood there kept in it; a violation (ralph.loop.observe.log_folder)."""
        logs = self.runner.logs
        if logs is None or self.tree.in_worktree:  # a build's worktree holds no log folder of ralph's
            return []
        replaced = logs.replaced()
        if not replaced:
            return []
        kept = logs.restore()
        return [
            f"replaced the log folder ({', '.join(replaced)})"
            + (f"; what stood there is {kept}" if kept else "")
        ]

    def _keep_lost_tree(self, result: AgentResult) -> bool:
        """Whether the run lost its work tree: removed it, or (a build's worktree) removed or
        replaced its .git link (`rm -rf .git && git init`), after which git would act on another
        repository or none. Such a worktree's folder, the agent's files in it, moves beside the
        log as <log>.worktree."""
        if not self.tree.root.is_dir():
            return True
        if not self.tree.in_worktree or self.tree.repo.worktrees.links_here():
            return False
        import shutil

        kept = self.tree.home / result.log_path.with_suffix(".worktree")
        shutil.move(self.tree.root, kept)
        self.journal.event("worktree_kept", folder=str(self.rel(kept)))
        return True

    def check_plan(self, result: AgentResult, in_tree: bool = True) -> PlanProblem | None:
        """After an agent run: if plan.jsonl no longer loads, keep the broken copy in the logs and
        put back the last committed state. Returns the problem, or None; the plan that loaded is
        the result's `plan`. `in_tree`: the run worked in this work tree; a verifier works in a
        checkout of its own, so what broke the plan here meanwhile was not its agent."""
        path = self.tree.root / PLAN_FILE
        if path.is_symlink() or (path.exists() and not path.is_file()):
            return self._plan_replaced(result)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            self.plan.restore_committed()
            self.journal.event("plan_restored", problem="the agent deleted plan.jsonl")
            self.console.event("the agent deleted plan.jsonl; restored it from HEAD")
            return PlanProblem(Verdict.PLAN_MISSING, "the agent deleted plan.jsonl")
        try:
            result.plan = reader.shared_plan(self.tree.root, data)  # unchanged bytes: not loaded again
            return None
        except PlanInvalid as exc:
            broken = self.tree.home / result.log_path.with_suffix(".plan.jsonl.broken")
            broken.write_bytes(data)
            self.plan.restore_committed()
            self.journal.event(
                "plan_restored", problem=str(exc), broken_copy=str(self.rel(broken)), by_agent=in_tree
            )
            said = "the agent left plan.jsonl invalid" if in_tree else "plan.jsonl was made invalid"
            where = (
                ""
                if in_tree
                else f" (not by a verifier: each works in a checkout; kept as {self.rel(broken)})"
            )
            self.console.event(f"{said} ({exc}); restored it from HEAD{where}")
            return PlanProblem(Verdict.PLAN_INVALID, f"{said}: {exc}")

    def _plan_replaced(self, result: AgentResult) -> PlanProblem:
        """plan.jsonl is a symlink or a folder now: moved beside the log as it is (a link still
        points where it did), and the committed plan put back in its place."""
        import shutil

        path = self.tree.root / PLAN_FILE
        kept = self.tree.home / result.log_path.with_suffix(".plan.jsonl.replaced")
        what = f"a symlink to {os.readlink(path)}" if path.is_symlink() else "a folder"
        shutil.move(path, kept)
        self.plan.restore_committed()
        problem = f"the agent replaced plan.jsonl with {what}; kept as {self.rel(kept)}"
        self.journal.event("plan_restored", problem=problem, replaced=str(self.rel(kept)))
        self.console.event(f"{problem}; restored it from HEAD")
        return PlanProblem(Verdict.PLAN_REPLACED, problem)


def run_model(settings: Settings, stage: Stage, task: Record | None) -> str | None:
    """The model a run of `stage` uses: the stage's (Settings.model_for); a task's BUILD goes one
    step along the stage's escalation per failed build of the task (attempts.failed_builds), so a
    cheap model builds first and a stronger one takes over when it is stuck."""
    failures = failed_builds(task) if stage is Stage.BUILD and task is not None else 0
    return settings.model_for(stage, failures)


def _name_of(plan: Plan, item: str | None) -> str | None:
    """The task's name or the issue's text, for people watching the run."""
    if not item:
        return None
    task = plan.find_task(item)
    if task is not None:
        return task.get("name")
    issue = next((issue for issue in plan.issues() if issue.get("id") == item), None)
    return issue.get("text") if issue else None
