"""What a stage works with, and what it gives back.

A stage gets a `Workspace`: the work tree it acts in, the agent runner, the journal and console,
the settings, and a way to commit. It returns a `StageReport`. It never sees the loop, and no
stage reads another stage's state: anything one stage leaves for the next is in plan.jsonl.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Protocol

from ralph.errors import GitError, PlanInvalid, WorkTreeGone
from ralph.loop.agent_failures import AgentFailures, did_nothing_and_failed, work_marks
from ralph.loop.agentrun import AgentResult, AgentRunner, PlanProblem
from ralph.loop.compaction import MAX_COMPACTIONS, Compacted, Stopped, compacted
from ralph.loop.console import Console
from ralph.loop.coordinator import Coordinator, Solo
from ralph.loop.cost import run_cost
from ralph.loop.journal import Journal
from ralph.loop.limits import LimitWaits
from ralph.loop.permissions import CODE_STAGES, Snapshot, violations
from ralph.loop.signals import deferred_signals
from ralph.loop.supervisor import BudgetSpent
from ralph.ops.settings import Settings
from ralph.plan.document import Record
from ralph.plan.plan import Plan
from ralph.plan.records import Stage, StopReason, TaskView, Verdict
from ralph.secrets import redact
from ralph.store import intent, owned, reader, settle, transaction
from ralph.store.git import Repo
from ralph.store.integrate import Integration, integrate
from ralph.store.intent import IntentKind
from ralph.store.lock import LOCK_NAME
from ralph.store.owned import Owned, OwnedKind
from ralph.text import shown_path

PLAN_FILE = reader.PLAN_NAME
# ralph's own files beside plan.jsonl (its lock, its temporary files): never an agent's change.
RALPH_FILES = re.compile(re.escape(LOCK_NAME) + "|" + re.escape(f".{PLAN_FILE}.") + r"\d+\.tmp")
# How an agent run that ralph stopped ends its item: the run's stop reason, as a kill reason.
BUILD_BRANCH_PREFIX = "ralph/"  # a build in a worktree of its own works on ralph/<task id>


class TreeRemoved(WorkTreeGone):
    """An agent run removed the work tree it ran in (a build's worktree), or unlinked it from the
    repository: that build's attempt failed, with nothing left to check. `result`: the run."""

    def __init__(self, result: AgentResult):
        super().__init__(f"the agent removed the work tree it ran in (log {result.log_path})")
        self.result = result


class StaleBase(Exception):  # noqa: N818 (a signal to the parallel builds, not an error)
    """A build attempt in a worktree failed on a base its neighbours' builds have moved past, or
    may yet (they still run): it may have failed only for want of their changes. It is not counted;
    the task is built again from the new HEAD once those neighbours have merged or failed."""


# Verdicts a missing neighbour's change can cause (its code not there to apply onto, import or pass
# tests with); a violation or a broken plan is the attempt's own doing.
STALE_VERDICTS = frozenset({Verdict.GATE_FAILED, Verdict.NOT_DONE, Verdict.NO_CHANGES, Verdict.HOOK_REFUSED})


@dataclass
class StageReport:
    stage: Stage
    items: int = 0  # issues, tasks or specs the stage ran an agent for
    accepted: list[str] = field(default_factory=list)  # "id name" of tasks VERIFY accepted
    accepted_tasks: list[dict] = field(default_factory=list)  # {"id", "name"}, "parent" and "draft"
    stopped: list[str] = field(default_factory=list)  # runs stopped (time, context) and what came of it
    failed: list[str] = field(default_factory=list)  # failed build attempts and rejections, and why
    commits: list[str] = field(default_factory=list)

    def absorb(self, part: StageReport) -> None:
        """Add what one part of the stage (a build, a VERIFY batch) reported."""
        self.items += part.items
        self.accepted += part.accepted
        self.accepted_tasks += part.accepted_tasks
        self.stopped += part.stopped
        self.failed += part.failed
        self.commits += part.commits


@dataclass
class BuildCheckout:
    """A build's own worktree: its workspace, its branch, the commit it started from and the
    plan.jsonl it started with (the base its plan changes are merged from)."""

    ws: Workspace
    branch: str
    start: str
    plan_base: bytes


class StageRun(Protocol):
    """The shape every stage has: made with a workspace, run for one iteration, reporting back."""

    def __init__(self, ws: Workspace) -> None: ...

    def run(self, iteration: int) -> StageReport: ...


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


class Workspace:
    def __init__(
        self,
        root: Path,
        settings: Settings,
        runner: AgentRunner,
        journal: Journal,
        console: Console,
        deadline: Deadline,
        user_dirty: frozenset[str] = frozenset(),
    ):
        self.root, self.settings, self.runner = root, settings, runner
        # The repository the loop runs in: its logs and its state record live there. A build in a
        # worktree of its own has `root` there and `home` here.
        self.home = root
        self.worker: int | None = None  # which of the parallel builds, in the journal
        self.journal, self.console, self.deadline = journal, console, deadline
        self.repo = Repo(root)
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
        # Paths no agent run is known to have changed: dirty before the loop started, or changed
        # meanwhile by someone else (a person, a hook). Never committed, set aside or reverted.
        self.user_dirty = user_dirty
        self.building: set[str] = set()  # what the current build's earlier attempts left changed
        self.current_build: str | None = None  # the task of the last agent run, when it was a BUILD
        # A build in a worktree: the commit it started from, and whether other builds run beside it.
        self.base: str | None = None
        self.neighbours_running: Callable[[], bool] = lambda: False
        self._stale_waived: set[tuple[str, str]] = set()  # (task, base): each waived once, shared
        # Who takes which item: this run alone, or runners sharing a git remote (construct sets it).
        self.coordinator: Coordinator = Solo()
        self._tokens = [0]  # shared with the workspaces of builds in worktrees
        self.spending = runner.spending
        # git adds and removes worktrees one at a time: one being added while another is read
        # half-made fails ("failed to read .git/worktrees/<name>/commondir").
        self._worktrees = threading.Lock()
        self._count = threading.Lock()
        self._clean_lines: set[bytes] = set()  # plan lines already redacted (transaction.redact_plan)

    @property
    def tokens(self) -> int:
        return self._tokens[0]

    def add_tokens(self, tokens: int) -> None:
        with self._count:  # builds in worktrees count at once
            self._tokens[0] += tokens

    @property
    def in_worktree(self) -> bool:
        return self.root != self.home

    def behind(self) -> bool:
        """A build in a worktree whose base the loop's branch has moved past (a neighbour merged)."""
        return self.in_worktree and self.base is not None and Repo(self.home).head() != self.base

    def retry_from_head(self, verdict: Verdict) -> bool:
        """Whether a counted failure's retry starts afresh from HEAD (its code kept as a draft)
        rather than in place: a build in a worktree that is behind, failed in a way a neighbour's
        change can settle. Other failures (a nested repository, a violation) are fixed in place."""
        return verdict in STALE_VERDICTS and self.behind()

    def _may_be_stale(self, task_id: str) -> bool:
        """A build in a worktree behind HEAD or beside running builds, or in a runner's work tree
        that lacks what other runners published, not yet waived on its base."""
        if not self.in_worktree:
            return self._lacks_published(task_id)
        if self.base is None or (task_id, self.base) in self._stale_waived:
            return False
        return self.behind() or self.neighbours_running()

    def _lacks_published(self, task_id: str, waive: bool = False) -> bool:
        """A build in this work tree while other runners published work it lacks (checked on the
        remote: a fetch), the first time for the task on this HEAD (HEAD moves when this runner
        catches up, so the waits end). `waive`: count this as that first time."""
        head = self.repo.head()
        if head is None or (task_id, head) in self._stale_waived:
            return False
        if not self.coordinator.others_published():
            return False
        if waive:
            with self._count:
                self._stale_waived.add((task_id, head))
        return True

    def stale_base(self, task_id: str, verdict: Verdict) -> bool:
        """Whether this failed attempt is waived as StaleBase: a verdict a neighbour's missing
        change can cause, on a base that is behind or beside running neighbours, and the first such
        failure of the task on this base (each base once: HEAD only moves by merges, so a task is
        waived at most once per merge and the waits end)."""
        if verdict not in STALE_VERDICTS:
            return False
        if not self.in_worktree:  # a runner sharing a remote: what others published may settle it
            return self._lacks_published(task_id, waive=True)
        if self.base is None:
            return False
        if not (self.behind() or self.neighbours_running()):
            return False
        with self._count:
            if (task_id, self.base) in self._stale_waived:
                return False
            self._stale_waived.add((task_id, self.base))
        return True

    def rel(self, log: Path) -> Path:
        """A log's path relative to the repository the loop runs in."""
        return log.relative_to(self.home) if log.is_absolute() else log

    def for_worktree(self, path: Path, worker: int | None = None) -> Workspace:
        """A workspace for a build in the worktree at `path`: its agent, gate, plan changes and
        commits act there; its logs, the loop's state record, budgets and totals stay shared."""
        import copy

        child = copy.copy(self)
        child.root, child.repo, child.user_dirty = path, Repo(path), frozenset()
        child.building = set()
        child.current_build = None
        child.worker = worker
        return child

    # --- the plan -----------------------------------------------------------------------------
    def read_plan(self) -> Plan:
        return reader.read_plan(self.root)

    def plan_after(self, result: AgentResult) -> Plan:
        """The plan as `result`'s run left it: read once after the run, then passed on."""
        if result.plan is None:
            result.plan = self.read_plan()
        return result.plan

    def tasks(self, plan: Plan | None = None) -> list[TaskView]:
        """This spec's tasks (and those of no spec)."""
        return (plan or self.read_plan()).task_views(self.settings.spec)

    def issues(self, plan: Plan | None = None) -> list[dict]:
        return (plan or self.read_plan()).issues(self.settings.spec)

    @contextmanager
    def change_plan(self, commit: bool = False) -> Iterator[transaction.Change]:
        """Change the plan under the lock. With `commit` the change is committed (together with
        anything the loop wrote before it) with the message set on the change; without, it is only
        written, for the loop's next commit to carry."""
        if commit:
            transaction.redact_plan(self.root, self._clean_lines)  # what the agents wrote goes in too
        with transaction.transaction(
            self.root, commit=None if commit else False, fold_earlier=True, repo=self.repo
        ) as change:
            yield change

    def set_state(self, plan: Plan | None = None, **fields: object) -> None:
        """Set the loop state's fields; `plan`: the plan as just read, when it is the home's."""
        state = (plan or reader.read_plan(self.home)).state()  # no lock to wait for when nothing changes
        if state and all(state.get(key) == value for key, value in fields.items()):
            return
        with transaction.transaction(self.home, commit=False, fold_earlier=True) as change:
            change.plan.update_state(**fields)

    def prioritize(self, commit: bool | None = None) -> dict:
        """Priorities for the spec's tasks that have none; False: for the loop's next commit to carry."""
        from ralph.ops import tasks

        return tasks.prioritize(self.root, self.settings.spec, commit, fold_earlier=True)

    # --- agents -------------------------------------------------------------------------------
    def run_agent(
        self,
        stage: Stage,
        iteration: int,
        item: str | None,
        values: dict,
        cwd: Path | None = None,
        plan: Plan | None = None,
    ) -> AgentResult:
        """One agent run of `stage` on `item`, and its continuations: a run stopped at the
        context's compact tier goes on in a fresh run that opens with a compacted context, up to
        MAX_COMPACTIONS times (then it counts as stopped at the context limit). `plan`: the plan
        the caller read for this step (read here when not given), passed on rather than read
        again; the result carries the plan as the run left it (`result.plan`)."""
        carried: Compacted | None = None
        for compactions in range(MAX_COMPACTIONS + 1):
            result = self._run_once(stage, iteration, item, values, carried, cwd, plan)
            if result.run.stop_reason is not StopReason.CONTEXT_COMPACT:
                return result
            if compactions == MAX_COMPACTIONS:  # compacting again and again is no progress
                result.run.stop_reason = StopReason.CONTEXT_LIMIT
                return result
            carried = self._compact(stage, item, values, result, cwd)
            plan = self.plan_after(result)
        raise AssertionError("unreachable: the last compaction returns")

    def _compact(
        self, stage: Stage, item: str | None, values: dict, result: AgentResult, cwd: Path | None
    ) -> Compacted:
        fill = result.pressure.fill if result.pressure else 0.0
        self.journal.event(
            "context_compact",
            stage=str(stage),
            item=item,
            fill_before=round(fill, 4),
            log=str(result.log_path),
        )
        repo = Repo(cwd) if cwd else self.repo
        changed = sorted(
            path for path in repo.changed_paths() - self.user_dirty if not RALPH_FILES.fullmatch(path)
        )
        code = {path for path in changed if path != PLAN_FILE}
        details = values.get("task_details") or values.get("issue_text") or ""
        name = _name_of(self.plan_after(result), item)
        stopped = Stopped(
            stage, item, name, details, fill, changed, repo.diff_stat(code) if code else "", result.run.tail
        )
        return compacted(stopped)

    def _run_once(
        self,
        stage: Stage,
        iteration: int,
        item: str | None,
        values: dict,
        compacted: Compacted | None,
        cwd: Path | None,
        plan: Plan | None,
    ) -> AgentResult:
        self.deadline.check()
        over = self.spending.admit()  # counts the run as started when it may start
        if over:
            raise over
        try:
            old_plan = plan or self.read_plan()
            self.set_state(None if self.in_worktree else old_plan, stage=str(stage))
            self.current_build = item if stage is Stage.BUILD else None
            self.console.status(iteration, stage, item or "")
            before = self._snapshot_before(stage)
            cwd = cwd or (self.root if self.in_worktree else None)
            name = _name_of(old_plan, item)
            result = self._run_waiting_out_limits(stage, iteration, item, values, compacted, cwd, name)
            if result.run.stop_reason is StopReason.INTERRUPTED:
                # The loop is stopping (a signal, a spent budget, in another thread): the run was
                # cut short, which is no verdict on its work. It is set aside like the rest; taken
                # as a failure, the next attempts (never started) killed the task as a doom loop.
                raise KeyboardInterrupt
        except BaseException:
            self.add_tokens(self.spending.stopped(str(stage), item, self.settings.model_for(stage)))
            raise
        if self._keep_lost_tree(result):  # the run removed its own work tree: nothing to check
            self.spending.stopped(str(stage), item, self.settings.model_for(stage))  # what it streamed counts
            self.add_tokens(result.tracker.usage.total)
            raise TreeRemoved(result)
        result.plan_problem = self.check_plan(result)
        if before is not None:
            self.enforce(stage, {item} if item else set(), before, old_plan, [result], result.plan)
        self.add_tokens(result.tracker.usage.total)
        usage = result.tracker.usage
        model = self.settings.model_for(stage) or result.tracker.model
        cost = run_cost(usage, model, self.settings.prices)
        self.spending.add(str(stage), item, usage.total, cost, model)
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
        return result

    def _run_waiting_out_limits(self, stage, iteration, item, values, compacted, cwd, name) -> AgentResult:
        while True:  # an agent that failed without doing anything is run again: not an attempt
            before = work_marks(cwd or self.root, RALPH_FILES)
            result = self._run_limited(stage, iteration, item, values, compacted, cwd, name)
            if not did_nothing_and_failed(result, before, work_marks(cwd or self.root, RALPH_FILES)):
                self.agent_failures.good()
                return result
            if stage is Stage.BUILD and item and self._may_be_stale(item):
                return result  # it may lack a neighbour's change: BUILD waits for them (StaleBase)
            self.add_tokens(result.tracker.usage.total)
            if not self.agent_failures.failed(result, str(stage), item):
                raise KeyboardInterrupt  # ralph is stopping meanwhile: as for a run it interrupted

    def _run_limited(self, stage, iteration, item, values, compacted, cwd, name) -> AgentResult:
        result = self.runner.run(
            stage, iteration, item, values, compacted, cwd, worker=self.worker, name=name
        )
        waits = 0  # a rate or usage limit is waited out, then the same run again: not an attempt
        while not result.ok and not result.run.stop_reason:
            if not self.limits.should_retry(result.tracker.failure, waits, str(stage), item):
                break
            waits += 1
            self.add_tokens(result.tracker.usage.total)
            result = self.runner.run(
                stage, iteration, item, values, compacted, cwd, worker=self.worker, name=name
            )
        return result

    def _snapshot_before(self, stage: Stage) -> Snapshot | None:
        """The work tree before a run, once what changed since the loop's last step that is not
        the current build's is left alone. A verifier works in a checkout of its own, which VERIFY
        inspects: nothing to compare here (None)."""
        before = self.snapshot()
        building = self.building if stage is Stage.BUILD else set()
        if self.leave_foreign_changes(f"before the {stage} run", among=before.dirty - building):
            before = Snapshot(before.head, before.branch, before.dirty - self.user_dirty)
        return before if stage is not Stage.VERIFY else None

    def snapshot(self) -> Snapshot:
        head, branch, changed = self.repo.work_state()
        return Snapshot(head, branch, frozenset(changed - self.user_dirty))

    def enforce(
        self,
        stage: Stage,
        own: set[str],
        before: Snapshot,
        old: Plan,
        results: list[AgentResult],
        now: Plan | None = None,
    ) -> list[str]:
        """Undo runs that broke their stage's rules: HEAD and branch put back, their changes saved
        as a patch beside the (first) log and reverted, plan.jsonl as before. Returns what they did.
        Runs that kept the rules learn the paths they left changed (`changed`)."""
        after = self.snapshot()
        if stage not in CODE_STAGES:
            # Its agent changes only the plan: a file that changed meanwhile is someone else's (a
            # person's edit during PLAN), left as it is, unstaged, not this run's violation.
            strays = frozenset((after.dirty ^ before.dirty) - {PLAN_FILE})
            if strays:
                self.leave_foreign_changes(f"during the {stage} run", among=strays)
                after = Snapshot(after.head, after.branch, after.dirty - strays)
        found = violations(stage, own, before, after, old, now or self.read_plan())
        if not found:
            changed = frozenset(path for path in after.dirty if not RALPH_FILES.fullmatch(path))
            for result in results:
                result.changed = changed
            if stage in CODE_STAGES:
                self.building |= changed - {PLAN_FILE}
            return found
        if self.repo.branch() != before.branch and before.branch:
            self.repo.git("symbolic-ref", "HEAD", f"refs/heads/{before.branch}")
        if self.repo.head() != before.head and before.head:
            self.repo.git("reset", "-q", "--soft", before.head)  # its commits become changes to undo
        log = results[0].log_path
        self.set_aside(log)
        transaction.restore_plan(self.root, old.doc.to_bytes())
        for result in results:
            result.violation = "; ".join(found)
            result.plan = old  # as it was put back
        items = sorted(own)
        self.journal.event("permission_violation", stage=str(stage), items=items, did=found, log=str(log))
        self.console.event(f"{stage} {' '.join(items)}: permission violation, undone: {'; '.join(found)}")
        return found

    def _keep_lost_tree(self, result: AgentResult) -> bool:
        """Whether the run lost its work tree: removed it, or (a build's worktree) removed or
        replaced its .git link (`rm -rf .git && git init`), after which git would act on another
        repository or none. Such a worktree's folder, the agent's files in it, moves beside the
        log as <log>.worktree."""
        if not self.root.is_dir():
            return True
        if not self.in_worktree or self.repo.links_here():
            return False
        import shutil

        kept = self.home / result.log_path.with_suffix(".worktree")
        shutil.move(self.root, kept)
        self.journal.event("worktree_kept", folder=str(self.rel(kept)))
        return True

    def check_plan(self, result: AgentResult) -> PlanProblem | None:
        """After an agent run: if plan.jsonl no longer loads, keep the broken copy in the logs and
        put back the last committed state. Returns the problem, or None; the plan that loaded is
        the result's `plan`."""
        path = self.root / PLAN_FILE
        if path.is_symlink() or (path.exists() and not path.is_file()):
            return self._plan_replaced(result)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            transaction.restore_plan(self.root, self.repo.file_at_head(PLAN_FILE) or b"")
            self.journal.event("plan_restored", problem="the agent deleted plan.jsonl")
            self.console.event("the agent deleted plan.jsonl; restored it from HEAD")
            return PlanProblem(Verdict.PLAN_MISSING, "the agent deleted plan.jsonl")
        try:
            result.plan = Plan(reader.load_checked(self.root, data))  # unchanged bytes: not validated again
            return None
        except PlanInvalid as exc:
            broken = self.home / result.log_path.with_suffix(".plan.jsonl.broken")
            broken.write_bytes(data)
            transaction.restore_plan(self.root, self.repo.file_at_head(PLAN_FILE) or b"")
            self.journal.event("plan_restored", problem=str(exc), broken_copy=str(self.rel(broken)))
            self.console.event(f"the agent left plan.jsonl invalid ({exc}); restored it from HEAD")
            return PlanProblem(Verdict.PLAN_INVALID, f"the agent left plan.jsonl invalid: {exc}")

    def _plan_replaced(self, result: AgentResult) -> PlanProblem:
        """plan.jsonl is a symlink or a folder now: moved beside the log as it is (a link still
        points where it did), and the committed plan put back in its place."""
        import shutil

        path = self.root / PLAN_FILE
        kept = self.home / result.log_path.with_suffix(".plan.jsonl.replaced")
        what = f"a symlink to {os.readlink(path)}" if path.is_symlink() else "a folder"
        shutil.move(path, kept)
        transaction.restore_plan(self.root, self.repo.file_at_head(PLAN_FILE) or b"")
        problem = f"the agent replaced plan.jsonl with {what}; kept as {self.rel(kept)}"
        self.journal.event("plan_restored", problem=problem, replaced=str(self.rel(kept)))
        self.console.event(f"{problem}; restored it from HEAD")
        return PlanProblem(Verdict.PLAN_REPLACED, problem)

    # --- the work tree ------------------------------------------------------------------------
    def changed_paths(self) -> set[str]:
        """What the loop's agents changed since the last commit (never the user's dirty paths)."""
        return {
            path for path in self.repo.changed_paths() - self.user_dirty if not RALPH_FILES.fullmatch(path)
        }

    def save_spending(self) -> None:
        """Add what the runs since the last commit spent to the state record's per-stage totals,
        so `ralph status` and `ralph report` show it from the plan that git keeps."""
        unsaved = self.spending.take_unsaved()
        if unsaved:  # the loop's state record: in the repository, never a build's worktree copy
            with transaction.transaction(self.home, commit=False, fold_earlier=True) as change:
                change.plan.add_spending(unsaved)

    def commit(self, message: str, paths: set[str] | None = None, task: str | None = None) -> str | None:
        """Commit what the loop's agents are known to have changed: `paths` (a build's files, as
        measured around its runs), else plan.jsonl alone, which is all the other stages change;
        any other change is left unstaged with a warning. The spending goes into the loop's own
        plan first; a build in a worktree leaves that to its merge, instead of waiting here for
        the plan lock that other builds' merges hold. `task`: the commit is that task's build,
        recorded on it here (in the loop's own work tree; a worktree's is recorded by its merge).

        Recorded first (ralph.store.intent, COMMIT): a kill between staging and committing is
        committed by the next start, never left staged with the plan saying the task is built."""
        if not self.in_worktree:
            self.save_spending()
        if paths is None:
            self.leave_foreign_changes("beside the loop's commit")
        paths = {PLAN_FILE} if paths is None else paths
        if PLAN_FILE in paths:  # the agents may have written it by hand: nothing secret is committed
            transaction.redact_plan(self.root, self._clean_lines)
        message = redact(message)  # it can quote a name or an issue
        # A worktree's commit is not recorded: the worktree and its branch are (ralph.store.owned),
        # and clean-up keeps what an interrupted commit there left as a patch.
        pending = None
        if not self.in_worktree:
            head, paths_listed = self.repo.head(), sorted(paths)
            pending = intent.begin(
                self.repo,
                IntentKind.COMMIT,
                self.root,
                head=head,
                paths=paths_listed,
                message=message,
                task=task,
            )
        commit, files = self.repo.commit_paths(paths, message)
        if pending is not None:
            if commit and task:
                settle.record_build_commit(self.root, task, commit)
            intent.finish(self.repo, pending)
        self.building = set()
        if commit:
            shown = [shown_path(path) for path in files]
            self.journal.event("commit", commit=commit, message=message.splitlines()[0], files=shown)
        return commit

    def leave_foreign_changes(self, when: str, among: Iterable[str] | None = None) -> bool:
        """Changes no agent run is known to have made (`among` them, else every one in the work
        tree): left as they are, unstaged, with a warning, and never touched by the loop again.
        Returns whether there were any."""
        found = (self.changed_paths() if among is None else set(among)) - {PLAN_FILE}
        found = {path for path in found if not RALPH_FILES.fullmatch(path)} - self.user_dirty
        if not found:
            return False
        self.user_dirty = frozenset(self.user_dirty | found)
        shown = ", ".join(sorted(found)[:5]) + (f" (+{len(found) - 5} more)" if len(found) > 5 else "")
        self.journal.event("left_unstaged", files=sorted(found), when=when)
        self.console.event(f"warning: {shown} changed {when}, not by an agent ralph ran: left unstaged")
        return True

    def set_aside(self, log_path: Path) -> None:
        """Save the agents' uncommitted changes to code as a patch beside the log, then undo them.
        A git repository an agent made inside the work tree goes in as plain files (unnest)."""
        self.building = set()
        paths = self.changed_paths() - {PLAN_FILE}
        if self.unnest(paths, log_path):
            paths = self.changed_paths() - {PLAN_FILE}
        if paths:
            patch = self.home / log_path.with_suffix(".patch")
            self.repo.save_patch(paths, patch)
            self.repo.revert(paths)
            self.journal.event("changes_set_aside", patch=str(self.rel(patch)), files=sorted(paths))

    def keep_draft(self, task_id: str) -> str | None:
        """The agents' uncommitted changes to code, committed onto HEAD on the task's draft branch
        (ralph.store.drafts) without touching the work tree or the index, for a person or the
        task's next build; pushed too when runners share a remote. The branch, or None."""
        from ralph.store import drafts

        paths = self.changed_paths() - {PLAN_FILE}
        base = self.repo.head()
        if not paths or base is None:
            return None
        try:
            branch = drafts.keep(self.repo, task_id, base, paths, f"ralph: draft of {task_id}")
        except GitError as exc:  # the patch beside the log still keeps the work
            self.journal.event("draft_failed", item=task_id, error=str(exc))
            return None
        if branch is None:
            return None
        self.journal.event("draft_kept", item=task_id, branch=branch, files=sorted(paths))
        self.console.event(f"{task_id}: its unfinished work is kept on branch {branch}")
        self.coordinator.draft_kept(branch)
        return branch

    def set_aside_as_draft(self, task_id: str, log_path: Path, record: bool = True) -> str | None:
        """set_aside, the work kept on the task's draft branch first; with `record`, the branch is
        written on the task (for the loop's next commit to carry). The branch, or None."""
        branch = self.keep_draft(task_id)
        self.set_aside(log_path)
        if branch and record:
            self.record_draft(task_id, branch)
        return branch

    def record_draft(self, task_id: str, branch: str, commit: bool = False) -> None:
        """Write the draft's branch on the task (gone from the plan: nothing to write)."""
        with self.change_plan(commit=commit) as change:
            if change.plan.find_task(task_id) is not None:
                change.plan.record_draft(task_id, branch)
            change.message = f"ralph: {task_id} draft kept on {branch}"

    def drop_drafts(self, accepted: Iterable[Record]) -> None:
        """The tasks are accepted: ralph's drafts of them go (by record, never a person's branch),
        and a parent's draft they were offered once no task is offered it any more."""
        from ralph.store import drafts

        for task in accepted:
            self._drop_draft(drafts.delete(self.repo, task["id"]), task["id"])
            parent, inherited = task.get("parent"), task.get("draft")
            if parent and inherited and inherited not in self._offered_drafts():
                record = drafts.draft_of(self.repo, parent)
                if record and record.name == inherited:
                    self._drop_draft(drafts.delete(self.repo, parent), parent)

    def _offered_drafts(self) -> set[str]:
        return {task["draft"] for task in self.read_plan().tasks() if task.get("draft")}

    def _drop_draft(self, deleted: Owned | None, task_id: str) -> None:
        if deleted:
            self.journal.event("draft_deleted", item=task_id, branch=deleted.name)
            self.coordinator.draft_dropped(deleted.name, deleted.start or "")

    def drop_accepted_drafts(self) -> None:
        """ralph's drafts of tasks accepted since they were made (by a person, another runner)."""
        from ralph.store import drafts

        kept = drafts.drafts(self.repo)
        if kept:  # the plan is read only when there is a draft (most runs have none)
            accepted = set(self.read_plan().accepted())
            self.drop_drafts({"id": draft.task} for draft in kept if draft.task in accepted)

    def nested_repositories(self, paths: Iterable[str]) -> list[str]:
        """The folders among `paths` (or holding one of them) that are git repositories of their
        own, as an agent's `git init` or `git clone` makes them. Never through a symlink (its
        .git is somewhere else), nor a folder HEAD has: a submodule is a person's, and git keeps
        tracking the files of a folder it tracks whatever is in it."""
        found: set[str] = set()
        for path in paths:
            parts = PurePosixPath(path.rstrip("/")).parts
            for depth in range(1, len(parts) + 1):
                folder = "/".join(parts[:depth])
                if (self.root / folder).is_symlink() or not (self.root / folder).is_dir():
                    break
                if os.path.lexists(self.root / folder / ".git"):
                    found.add(folder)
                    break
        return sorted(found - self.repo.at_head(found))

    def unnest(self, paths: Iterable[str], log_path: Path) -> list[str]:
        """Each nested repository among `paths` becomes plain files of this work tree: its .git
        (its history) moves beside the log, as <log>.nested/<folder>/.git, and a gitlink staged
        for it leaves the index; then those nested in them, in turn. Otherwise git would commit
        it as a bare gitlink (its files in no commit) or refuse to add it. Returns the folders."""
        import shutil

        unnested: list[str] = []
        nested = self.nested_repositories(paths)
        while nested:
            for folder in nested:
                kept = self.home / log_path.with_suffix(".nested") / folder / ".git"
                kept.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(self.root / folder / ".git", kept)
                # Its gitlink (or anything else) staged: unstaged, its files left (HEAD has no folder).
                self.repo.git("rm", "--cached", "-r", "-f", "-q", "--ignore-unmatch", "--", folder)
                self.journal.event("nested_repository_kept", folder=folder, git_dir=str(self.rel(kept)))
            unnested += nested
            inside = self.repo.changed_paths(among=nested)
            self.building |= inside  # the build's files now, not someone else's left unstaged
            nested = self.nested_repositories(inside)
        return unnested

    @contextmanager
    def checkout(self, label: str) -> Iterator[Repo]:
        """A detached worktree of HEAD, in a temporary folder of its own, holding a copy of
        plan.jsonl as it is now: a run that must not share this work tree (a verifier running the
        tests) works there. It is removed afterwards, whatever happened, changes and all."""
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix=f"ralph-{label}-"))
        path = folder / f"ralph-{label}"  # its name in .git/worktrees
        tree = Owned(OwnedKind.WORKTREE, str(path), folder=str(folder))
        owned.record(self.repo, tree)  # before git makes it: a kill in between is cleaned up later
        try:
            with self._worktrees:
                repo = self.repo.add_worktree(path, "HEAD")
            (path / PLAN_FILE).write_bytes((self.root / PLAN_FILE).read_bytes())
            yield repo
        finally:
            with deferred_signals(), self._worktrees:  # a stop signal must not leave a worktree behind
                self._remove_recorded(path, folder, tree)

    @contextmanager
    def build_checkout(self, task_id: str, worker: int | None = None) -> Iterator[BuildCheckout]:
        """A worktree on branch `ralph/<task id>` from HEAD (plan.jsonl as HEAD has it), for one
        build at a time with others; removed with its branch afterwards, whatever
        happened (what the caller did not merge is lost, as a run set aside is)."""
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix=f"ralph-build-{task_id}-"))
        path = folder / f"ralph-build-{task_id}"
        tree = Owned(OwnedKind.WORKTREE, str(path), folder=str(folder))
        with self._worktrees:
            head = self.repo.head() or "HEAD"
            branch = self._free_branch(task_id)
            built = Owned(OwnedKind.BRANCH, branch, start=head)
            owned.record(self.repo, tree)  # before git makes them: a kill in between is cleaned up later
            owned.record(self.repo, built)
        created = False
        try:
            with self._worktrees:
                self.repo.add_branch_worktree(path, branch, head)
            created = True
            # The plan as HEAD has it: the loop's own uncommitted changes (a merged build's commit
            # id, its state) are no business of a builder's, and the merge keeps them. Read from
            # the work tree, it could be a later merge's plan over this HEAD.
            if not (path / PLAN_FILE).exists():  # never committed: the loop's copy, then
                (path / PLAN_FILE).write_bytes(self.plan_bytes())
            plan = (path / PLAN_FILE).read_bytes()
            yield BuildCheckout(self.for_worktree(path, worker), branch, head, plan)
        finally:
            with deferred_signals(), self._worktrees:  # a stop signal must not leave a worktree behind
                self._remove_recorded(path, folder, tree)
                if created and not self._registered(path):  # ralph's own, recorded above
                    self._delete_recorded(built)
                elif not created:
                    owned.forget(self.repo, built)

    def _remove_recorded(self, path: Path, folder: Path, tree: Owned) -> None:
        """A worktree ralph made removed, and its record with it; a record stays while git still
        lists the worktree (its removal failed: a full disk), for clean-up to finish."""
        import shutil

        self.repo.remove_worktree(path)
        shutil.rmtree(folder, ignore_errors=True)
        if not self._registered(path):
            owned.forget(self.repo, tree)

    def _delete_recorded(self, built: Owned) -> None:
        """A build branch ralph made deleted, and its record with it, unless git failed to."""
        try:
            self.repo.git("update-ref", "-d", f"refs/heads/{built.name}")
        except GitError:
            return  # recorded still: clean-up judges it later
        owned.forget(self.repo, built)

    def _registered(self, path: Path) -> bool:
        """Whether git still lists the worktree at `path` (its folder under .git/worktrees/ names
        it), read from the files, without running git."""
        import os

        admin = self.repo.common_dir() / "worktrees"
        wanted = os.path.realpath(path / ".git")  # git may name it through a symlinked /tmp
        for gitdir in admin.glob("*/gitdir"):
            with contextlib.suppress(OSError):
                if os.path.realpath(gitdir.read_text(encoding="utf-8").strip()) == wanted:
                    return True
        return False

    def _free_branch(self, task_id: str) -> str:
        """ralph/<task id>, or with -2, -3... when a branch of that name exists already (a person's,
        or one of ralph's kept because it holds unmerged work): never reset, never reused."""
        name, number = f"{BUILD_BRANCH_PREFIX}{task_id}", 1
        while self.repo.branch_exists(name) or owned.owns_branch(self.repo, name):
            number += 1
            name = f"{BUILD_BRANCH_PREFIX}{task_id}-{number}"
        return name

    def merge_build(
        self, checkout: BuildCheckout, task_id: str | None = None, built: list[str] | None = None
    ) -> Integration:
        """The build branch's commits onto the loop's branch, a copy of each in order; the copy of
        the last of `built` (the build's own commits) recorded on the task, for the loop's next
        commit, and the branch marked merged. The merge's record (ralph.store.intent) is finished
        only then: a kill before is finished by the next start."""
        tip = checkout.ws.repo.head()
        if tip is None or tip == checkout.start:
            return Integration()
        with deferred_signals():  # the work tree moves in one step or not at all
            merged = integrate(
                self.repo, checkout.start, tip, checkout.plan_base, task_id, checkout.branch, built
            )
            if merged.intent is not None:
                settle.after_merge(self.repo, self.root, merged.intent.data)
                intent.finish(self.repo, merged.intent)
        return merged

    def plan_bytes(self) -> bytes:
        return (self.root / PLAN_FILE).read_bytes()

    def undo_plan_changes(self, before: bytes, log_path: Path, item: str) -> None:
        """A run stopped half way changes nothing: what it did to plan.jsonl since `before` is
        kept beside its log (as <log>.plan.jsonl) and undone."""
        current = self.plan_bytes()
        if current == before:
            return
        kept = self.home / log_path.with_suffix(".plan.jsonl")
        kept.write_bytes(current)
        transaction.restore_plan(self.root, before)
        self.journal.event("plan_changes_set_aside", item=item, plan=str(self.rel(kept)))

    def save_build_patch(self, task: TaskView, log_path: Path) -> Path | None:
        """The changes of the task's last build commit as a patch beside the log (relative to the
        root), for DECOMPOSE to see what was built of a task set aside after its build was
        committed (VERIFY rejected it, or could not finish checking it). They stay in the code."""
        if not task.commit:
            return None
        patch = self.home / log_path.with_suffix(".patch")
        try:
            text = self.repo.commit_patch(task.commit, exclude=frozenset({PLAN_FILE}))
        except GitError as exc:  # the commit is gone (history rewritten since)
            self.journal.event("build_patch_missing", item=task.id, commit=task.commit, error=str(exc))
            return None
        if not text:
            return None
        patch.write_bytes(text)
        saved = str(self.rel(patch))
        self.journal.event("build_patch_saved", item=task.id, commit=task.commit, patch=saved)
        return patch

    def restore_committed_plan(self, keep_as: Path) -> None:
        """Put plan.jsonl back as HEAD has it, keeping the uncommitted version at `keep_as`."""
        head_plan = self.repo.file_at_head(PLAN_FILE)
        current = (self.root / PLAN_FILE).read_bytes()
        if head_plan is not None and current != head_plan:
            keep_as.write_bytes(current)
            transaction.restore_plan(self.root, head_plan)


def _name_of(plan: Plan, item: str | None) -> str | None:
    """The task's name or the issue's text, for people watching the run."""
    if not item:
        return None
    task = plan.find_task(item)
    if task is not None:
        return task.get("name")
    issue = next((issue for issue in plan.issues() if issue.get("id") == item), None)
    return issue.get("text") if issue else None
