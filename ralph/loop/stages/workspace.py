"""What a stage works with, and what it gives back.

A stage gets a `Workspace`: the composition of the narrow parts it acts through, each declared in
a module of its own: the plan (ralph.loop.tree.plan_access), agent runs (ralph.loop.stages.retries), the
work tree (ralph.loop.tree.work_tree) and a coordinator (ralph.loop.share.coordinator), beside the settings,
the journal and the console. It returns a `StageReport`. It never sees the loop, and no stage
reads another stage's state: anything one stage leaves for the next is in plan.jsonl. Tests give
a stage a Workspace of fakes of those parts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ralph.loop.observe.console import Console
from ralph.loop.observe.journal import Journal
from ralph.loop.runs.agent_process import AgentRunner
from ralph.loop.share.coordinator import Coordinator, Solo
from ralph.loop.stages.retries import AgentRuns, Deadline
from ralph.loop.tree.plan_access import PlanAccess
from ralph.loop.tree.work_tree import BuildCheckout, WorkTree
from ralph.plan.records import Stage
from ralph.usecases.settings import Settings


@dataclass
class StageReport:
    stage: Stage
    items: int = 0  # issues, tasks or specs the stage ran an agent for
    accepted: list[str] = field(default_factory=list)  # "id name" of tasks VERIFY accepted
    # {"id", "name"}, and "parent", "draft", "scope" and "files" where the task has them
    accepted_tasks: list[dict[str, Any]] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)  # runs stopped (time, context) and what came of it
    failed: list[str] = field(default_factory=list)  # failed build attempts and rejections, and why
    commits: list[str] = field(default_factory=list)
    # Of `commits`, the builds (BUILD's commit of a task that passed its gate): each is recorded on
    # its task; a question or a plan-only commit never is.
    builds: list[str] = field(default_factory=list)

    def absorb(self, part: StageReport) -> None:
        """Add what one part of the stage (a build, a VERIFY batch) reported."""
        self.items += part.items
        self.accepted += part.accepted
        self.accepted_tasks += part.accepted_tasks
        self.stopped += part.stopped
        self.failed += part.failed
        self.commits += part.commits
        self.builds += part.builds


class StageRun(Protocol):
    """The shape every stage has: made with a workspace, run for one iteration, reporting back."""

    def __init__(self, ws: Workspace) -> None: ...

    def run(self, iteration: int) -> StageReport: ...


class Workspace:
    """The parts a stage acts through. `coordinator` is the work tree's (its drafts are shared,
    and a build waits for what other runners published, through it)."""

    def __init__(
        self,
        settings: Settings,
        plan: PlanAccess,
        agents: AgentRuns,
        tree: WorkTree,
        journal: Journal,
        console: Console,
        coordinator: Coordinator | None = None,
    ):
        self.settings, self.plan, self.agents, self.tree = settings, plan, agents, tree
        self.journal, self.console = journal, console
        if coordinator is not None:
            self.coordinator = coordinator

    @classmethod
    def at(
        cls,
        root: Path,
        settings: Settings,
        runner: AgentRunner,
        journal: Journal,
        console: Console,
        deadline: Deadline,
        user_dirty: frozenset[str] = frozenset(),
    ) -> Workspace:
        """The loop's workspace in the repository at `root`: this run alone (Solo) until construct
        gives it a coordinator for runners sharing a remote."""
        plan = PlanAccess(root, settings.spec, journal, runner.spending)
        tree = WorkTree(plan, journal, console, user_dirty, Solo())
        agents = AgentRuns(runner, settings, plan, tree, journal, console, deadline)
        return cls(settings, plan, agents, tree, journal, console)

    @property
    def coordinator(self) -> Coordinator:
        """Who takes which item: this run alone, or runners sharing a git remote."""
        return self.tree.coordinator

    @coordinator.setter
    def coordinator(self, coordinator: Coordinator) -> None:
        self.tree.coordinator = coordinator

    def for_worktree(self, checkout: BuildCheckout, worker: int | None = None) -> Workspace:
        """A workspace for a build in its own worktree: its agent, gate, plan changes and commits
        act there; its logs, the loop's state record, budgets and totals stay shared."""
        tree = checkout.tree
        agents = self.agents.for_worktree(tree.plan, tree, worker)
        return Workspace(self.settings, tree.plan, agents, tree, self.journal, self.console)
