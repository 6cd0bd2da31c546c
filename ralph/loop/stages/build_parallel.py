"""BUILD with --parallel: up to that many ready tasks built at once, each in a worktree of its own,
and merged into the loop's branch one at a time as each is built."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, Protocol

from ralph.errors import BranchSwitched
from ralph.loop.process.signals import deferred_signals
from ralph.loop.process.supervisor import BudgetSpent
from ralph.loop.runs.agent_process import AgentResult
from ralph.loop.stages.build_outcome import Failure, StaleBase
from ralph.loop.stages.retries import TreeRemoved
from ralph.loop.stages.workspace import StageReport, Workspace
from ralph.loop.tree.plan_access import PLAN_FILE
from ralph.loop.tree.work_tree import BuildCheckout, CheckoutBehind
from ralph.plan.document import Record
from ralph.plan.records import Stage
from ralph.plan.scope import overlaps

if TYPE_CHECKING:
    import queue
    from concurrent.futures import Future, ThreadPoolExecutor

    # What a build tells the stage: ("built" | "ended", its task id, its future once ended).
    _News = tuple[str, str, Future[StageReport] | None]

CHECKOUT_RENEWALS = 3  # worktrees made again because a neighbour merged while one was made


class Builder(Protocol):
    """What the builds need of the BUILD stage (ralph.loop.stages.build.BuildStage, which starts
    them): the tasks ready next, and one task built in a given workspace."""

    ws: Workspace

    def ready(self, running: set[str], report: StageReport) -> list[Record]: ...

    def in_worktree(self, ws: Workspace) -> Builder: ...

    def build_task(self, task_id: str, iteration: int, report: StageReport) -> None: ...

    def count_held_back(
        self, task_id: str, failure: Failure, result: AgentResult, report: StageReport
    ) -> bool: ...

    def tree_removed(self, task_id: str, result: AgentResult, report: StageReport) -> None: ...


class Unjudged(NamedTuple):
    """A failure StaleBase held back beside running neighbours: the code it failed on, and what
    to count if their builds leave that code as it was."""

    base: str
    failure: Failure
    result: AgentResult


class ParallelBuilds:
    """Up to --parallel builds at once, each in a worktree of its own on branch ralph/<task id>,
    merged into the loop's branch as each finishes. Tasks whose scopes overlap wait for each other.
    A build that failed on a stale base (StaleBase) waits for the builds that ran beside it and the
    tasks ahead of it in the plan's order to merge or fail (what it lacked is most likely theirs),
    then starts again from the new HEAD."""

    def __init__(self, lead: Builder, iteration: int, report: StageReport):
        self.lead, self.iteration, self.report = lead, iteration, report
        self.ws = lead.ws
        self._workers = iter(range(1, 1_000_000))
        self.building: dict[str, Record] = {}  # task id -> record
        self.merging: dict[str, Record] = {}
        self._stale: set[str] = set()  # builds that ended in StaleBase (written by their threads)
        self.held: dict[str, set[str]] = {}  # task id -> the neighbours it waits for
        self._rank: dict[str, int] = {}  # each task's place in the order ready() first gave it
        self._unjudged: dict[str, Unjudged] = {}  # written by the builds' threads, each its own task
        # A budget refused a run: no build starts, those going end (read by the builds' threads).
        self.winding_down = False

    def run(self) -> None:
        """A build's slot frees once its agent and gate are done, before its merge: merges wait
        for each other (one work tree), and the next agent need not wait for them. A built task
        keeps its scope until merged, and tasks that depend on it wait for its merge. A budget
        that refuses a run winds the builds down (`_absorb`); a stop signal, a budget a running
        agent passed or an error stops them all."""
        import queue
        from concurrent.futures import ThreadPoolExecutor

        slots = self.ws.settings.parallel
        pool = ThreadPoolExecutor(max_workers=2 * slots)  # the builds, and the built waiting to merge
        building, merging = self.building, self.merging
        news: queue.SimpleQueue[_News] = queue.SimpleQueue()
        refused: list[BudgetSpent] = []
        # Until the stage ends by itself, no agent works in the loop's own work tree: what a stop
        # finds changed there is a person's (ralph.loop.construct leaves it as it is).
        self.ws.tree.agents_elsewhere = True
        try:
            while True:
                free = 0 if refused else slots - len(building)
                for task in self._startable([*building.values(), *merging.values()], free):
                    building[task["id"]] = task
                    self._start(pool, task["id"], news)
                if not building and not merging:
                    break
                try:
                    what, task_id, future = news.get(timeout=1.0)
                except queue.Empty:
                    continue
                if what == "built":
                    merging[task_id] = building.pop(task_id)
                    continue
                building.pop(task_id, None)
                merging.pop(task_id, None)
                assert future is not None  # an "ended" news carries its build's future
                if self._absorb(future, refused):
                    continue
                if task_id in self._stale:  # built again once the builds beside it are done
                    self._stale.discard(task_id)
                    self.held[task_id] = {*building, *merging, *self._ahead_of(task_id)}
        except BaseException:  # Ctrl-C, a stop signal, a budget: stop every build, not only one
            with deferred_signals():
                pool.shutdown(wait=False, cancel_futures=True)
                self.ws.agents.stop_all()
                pool.shutdown(wait=True)  # each build sets its changes aside and removes its worktree
            raise
        pool.shutdown(wait=True)
        if refused:
            raise refused[0]
        self.ws.tree.agents_elsewhere = False

    def _absorb(self, future: Future[StageReport], refused: list[BudgetSpent]) -> bool:
        """Add what an ended build reported, or raise what it raised; but a budget's refusal to
        start a run (the money, token or time budget would be passed) winds the builds down
        instead (True): none starts, and those going end as they would have, their gates and
        merges included. They were admitted within the budget, and what passes its gate costs no
        more to merge; stopping them would throw that away."""
        try:
            self.report.absorb(future.result())
        except BudgetSpent as exc:
            if exc.stopped_run:  # a running agent or gate passed it: every build stops
                raise
            refused.append(exc)
            self.winding_down = True
            return True
        return False

    def _ahead_of(self, task_id: str) -> set[str]:
        """The tasks ready() gave before this one (the plan's order: priority, then position)."""
        rank = self._rank.get(task_id)
        return set() if rank is None else {other for other, place in self._rank.items() if place < rank}

    def _start(self, pool: ThreadPoolExecutor, task_id: str, news: queue.SimpleQueue[_News]) -> None:
        def built() -> None:
            news.put(("built", task_id, None))

        future = pool.submit(self._build_one, task_id, next(self._workers), built)
        future.add_done_callback(lambda done: news.put(("ended", task_id, done)))

    def _startable(self, running: list[Record], free: int) -> list[Record]:
        chosen: list[Record] = []
        if free <= 0:
            return chosen
        busy = [task.get("scope") for task in running]
        active = {t["id"] for t in running}
        ready = self.lead.ready(active, self.report)
        for task in ready:
            self._rank.setdefault(task["id"], len(self._rank))
        # A held task waits while what it waits for runs or is still to build; of the other held
        # tasks, only for those ahead of it, so two held tasks never wait for each other.
        unfinished = active | {t["id"] for t in ready if t["id"] not in self.held}
        for task_id, waits_for in sorted(self.held.items(), key=lambda item: self._rank.get(item[0], 0)):
            ahead_held = {other for other in self.held if other in self._ahead_of(task_id)}
            if not waits_for & (unfinished | ahead_held):
                del self.held[task_id]
        for task in ready:
            if task["id"] in self.held:
                continue  # its last build failed on a stale base: after its neighbours
            if any(overlaps(task.get("scope"), scope) for scope in busy):
                continue  # it may change the same files: after the one building them
            chosen.append(task)
            busy.append(task.get("scope"))
            if len(chosen) == free:
                break
        return chosen

    def _build_one(self, task_id: str, worker: int, built: Callable[[], None] = lambda: None) -> StageReport:
        """Build the task in its worktree; `built` is called once its agent and gate are done,
        before the merge. A worktree the branch moved past while it was made (a neighbour
        merged) is made again from the new HEAD before any agent runs in it, a few times at most:
        a build starts from the branch as it is."""
        if not self._judge_held_back(task_id):
            return StageReport(Stage.BUILD)
        for _ in range(CHECKOUT_RENEWALS):
            try:
                return self._build_in_checkout(task_id, worker, built, renew_if_behind=True)
            except CheckoutBehind:
                self.ws.journal.event("build_checkout_renewed", item=task_id)
        return self._build_in_checkout(task_id, worker, built, renew_if_behind=False)  # whatever the base

    def _judge_held_back(self, task_id: str) -> bool:
        """A failure held back while neighbours ran counts once they are done if none of them
        changed the code it failed on: a rebuild then would run on the same code, uncounted
        forever. True when the task is to be built again (now, from the branch as it is)."""
        held = self._unjudged.pop(task_id, None)
        head = self.ws.tree.repo.head()
        if held is None or head is None or self.ws.tree.home_repo.objects.code_differs(held.base, head):
            return True
        report = StageReport(Stage.BUILD)
        again = self.lead.count_held_back(task_id, held.failure, held.result, report)
        self.report.absorb(report)
        return again

    def _build_in_checkout(
        self, task_id: str, worker: int, built: Callable[[], None], renew_if_behind: bool
    ) -> StageReport:
        report = StageReport(Stage.BUILD)  # build_task counts the build
        with self.ws.tree.build_checkout(task_id) as checkout:
            ws = self.ws.for_worktree(checkout, worker)
            ws.tree.base = checkout.start
            ws.tree.neighbours_running = lambda: bool({*self.building, *self.merging} - {task_id})
            ws.tree.renew_if_behind = renew_if_behind
            span = self.ws.journal.span("build", item=task_id, iteration=self.iteration, worker=worker)
            try:
                self.lead.in_worktree(ws).build_task(task_id, self.iteration, report)
                if self.ws.agents.stopping and not report.builds:
                    raise KeyboardInterrupt  # the loop is stopping: what did not pass is set aside
                self._commit_leftovers(ws, task_id)
            except StaleBase as stale:
                self._wait_for_neighbours(ws, task_id, stale)
                span.end(merged=False, stale_base=True)
                return StageReport(Stage.BUILD)
            except TreeRemoved as removed:  # the agent's move: this build's outcome, not the run's
                self.lead.tree_removed(task_id, removed.result, report)
                span.end(merged=False)
                return report
            except CheckoutBehind:  # before any agent ran in it: the checkout goes, a fresh one is made
                span.end(merged=False, renewed=True)
                raise
            except BaseException:
                self._set_aside(ws, task_id, checkout.start)
                span.end(merged=False)
                raise
            # Passed its gate: merged even when the loop is stopping (a spent budget, a signal). A
            # merge costs no agent run, and work that passed is never thrown away.
            built()
            if self._removed_meanwhile(ws, checkout, task_id):
                span.end(merged=False, removed=True)
                return report
            # The copy of the build's commit is recorded on the task by the merge itself (only a
            # build's: a question's commit is merged too, but it built nothing).
            try:
                merged = self.ws.tree.merge_build(checkout, task_id, report.builds)
            except BranchSwitched:  # a person switched branches under the run: nothing merged
                ws.tree.keep_draft(task_id, since=checkout.start)  # the build's work, on its draft
                span.end(merged=False)
                raise
            self.ws.plan.save_spending()
            copies = [merged.commits[commit] for commit in report.builds if commit in merged.commits]
            report.commits, report.builds = list(merged.commits.values()), copies
            if merged.conflicts and (self.ws.agents.stopping or self.winding_down):
                self._keep_unmerged(ws, task_id, checkout, merged.conflicts)
            elif merged.conflicts:
                self._conflict(ws, task_id, checkout, merged.conflicts, report)
            elif copies:
                self._merged(task_id, copies[-1])
        span.end(merged=bool(merged.commit), conflicts=merged.conflicts or None)
        return report

    def _commit_leftovers(self, ws: Workspace, task_id: str) -> None:
        """What the build left uncommitted: its plan changes go on its branch, code is set aside."""
        changed = ws.tree.changed_paths()
        if changed - {PLAN_FILE}:  # a failed attempt's code: its next build starts from the new HEAD
            ws.tree.set_aside_as_draft(task_id, ws.agents.rel(ws.agents.new_log("leftover", task_id)))
            changed = ws.tree.changed_paths()
        if PLAN_FILE in changed:
            ws.tree.commit(f"ralph(build): {task_id} plan changes", {PLAN_FILE})

    def _set_aside(self, ws: Workspace, task_id: str, start: str) -> None:
        """A build stopped half way: its changes (those its branch committed since `start` too)
        are kept as a patch beside a log and on the task's draft branch (recorded on the task in a
        commit of the loop's: the stopping loop puts its plan back as last committed), not merged."""
        with deferred_signals():
            log = ws.agents.rel(ws.agents.new_log("unmerged", task_id))
            draft = ws.tree.keep_draft(task_id, since=start)
            ws.tree.set_aside(log)
            if draft:
                self.ws.plan.record_draft(task_id, draft, commit=True)
            self.ws.journal.event("build_not_merged", item=task_id, log=str(log), draft=draft)

    def _keep_unmerged(self, ws: Workspace, task_id: str, checkout: BuildCheckout, files: list[str]) -> None:
        """The loop is stopping (or winding down: no build starts again) and a build that passed
        its gate does not merge (merged work changed the same files): kept on the task's draft
        branch, recorded on the task (the report names it) and as a patch beside a log; no attempt
        is counted, the next run builds it again, told of its draft."""
        if self._removed_meanwhile(ws, checkout, task_id):  # during the merge: kept already
            return
        with deferred_signals():
            log = self.ws.agents.rel(self.ws.agents.new_log("unmerged", task_id))
            (self.ws.tree.home / log).write_bytes(checkout.tree.repo.changes.patch(checkout.start))
            draft = ws.tree.keep_draft(task_id, since=checkout.start)
            if draft:
                self.ws.plan.record_draft(task_id, draft, commit=True)
            self.ws.journal.event(
                "build_not_merged", item=task_id, log=str(log), draft=draft, conflicts=files
            )
        kept = f"on branch {draft} and in {log}" if draft else f"in {log}"
        self.ws.console.event(
            f"{task_id}: its build passed its gate but conflicts with merged work ({', '.join(files[:5])});"
            f" kept {kept}, built again by the next run"
        )

    def _wait_for_neighbours(self, ws: Workspace, task_id: str, stale: StaleBase) -> None:
        """The attempt failed on a stale base: not counted now; its changes are kept as a patch
        beside a log, and the task is built again from the new HEAD once its neighbours are done.
        When the code had not moved yet, the failure counts then if it still has not."""
        log = ws.agents.rel(ws.agents.new_log("stale", task_id))
        ws.tree.set_aside(log)
        self._stale.add(task_id)
        moved = ws.tree.behind()
        base, failure, result = ws.tree.base, stale.failure, stale.result
        if not moved and base is not None and failure is not None and result is not None:
            self._unjudged[task_id] = Unjudged(base, failure, result)
        neighbours = sorted({*self.building, *self.merging} - {task_id})
        self.ws.journal.event(
            "build_stale_base",
            item=task_id,
            base=ws.tree.base,
            moved=moved,
            waits_for=neighbours,
            log=str(log),
        )
        head = (self.ws.tree.repo.head() or "")[:12]
        why = (
            f"the code moved since its base (merged up to {head})"
            if moved
            else f"it may need the change of {', '.join(neighbours)}, still building"
        )
        self.ws.console.event(
            f"{task_id}: its build failed; {why}: built again from the new HEAD once"
            f" {'they are' if len(neighbours) != 1 else 'it is'} done (not counted as an attempt"
            f"{'' if moved else ' unless the code stays as it was'})"
        )

    def _merged(self, task_id: str, commit: str) -> None:
        self.ws.journal.event("build_merged", item=task_id, commit=commit)

    def _removed_meanwhile(self, ws: Workspace, checkout: BuildCheckout, task_id: str) -> bool:
        """Whether a person removed the task (deleted it, or accepted it by hand) while it was
        built: its work is then not merged into a plan that no longer wants it, but kept on its
        draft branch and as a patch beside a log, and the run goes on."""
        if self.ws.plan.read().find_task(task_id) is not None:
            return False
        log = self.ws.agents.rel(self.ws.agents.new_log("removed", task_id))
        (self.ws.tree.home / log).write_bytes(checkout.tree.repo.changes.patch(checkout.start))
        draft = ws.tree.keep_draft(task_id, since=checkout.start)
        self.ws.journal.event("build_of_removed_task", item=task_id, log=str(log), draft=draft)
        kept = f"on branch {draft} and in {log}" if draft else f"in {log}"
        self.ws.console.event(
            f"{task_id} left the plan while it was built: its work is kept {kept}, not merged"
        )
        return True

    def _conflict(
        self, ws: Workspace, task_id: str, checkout: BuildCheckout, files: list[str], report: StageReport
    ) -> None:
        """A code conflict is a verdict: the task is built again, from the new HEAD."""
        if self._removed_meanwhile(ws, checkout, task_id):  # during the merge: nothing to record
            return
        log = self.ws.agents.rel(self.ws.agents.new_log("conflict", task_id))
        (self.ws.tree.home / log).write_bytes(checkout.tree.repo.changes.patch(checkout.start))
        built = checkout.tree.plan.read().find_task(task_id) or {}
        with self.ws.plan.change(commit=True) as change:
            limit = self.ws.settings.max_attempts
            attempts = change.plan.record_unmerged_build(task_id, files, built, limit, kill_log=str(log))
            change.message = f"ralph(build): {task_id} merge conflict in {', '.join(files[:5])}"
        self.ws.journal.event(
            "build_failed",
            item=task_id,
            attempts=attempts,
            verdict="merge_conflict",
            files=files,
            log=str(log),
        )
        self.ws.console.event(
            f"{task_id}: its build conflicts with merged work ({', '.join(files[:5])}); built again"
        )
