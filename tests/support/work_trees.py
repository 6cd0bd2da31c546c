"""The loop's own work tree (ralph.loop.tree.work_tree) over a real repository, as a run builds it,
for tests of what it does with git without a construct run around it."""

from __future__ import annotations

import io
from pathlib import Path

from ralph.loop.observe.console import Console
from ralph.loop.observe.journal import Journal
from ralph.loop.runs.cost import Spending
from ralph.loop.share.coordinator import Coordinator
from ralph.loop.tree.plan_access import PlanAccess
from ralph.loop.tree.work_tree import WorkTree


def loop_work_tree(root: Path, events: Path, coordinator: Coordinator | None = None) -> WorkTree:
    """The work tree of a run of specs/app.md in `root`, journalling to `events`, its console
    writing nowhere a test reads; `coordinator`: the runners' (None: a run alone)."""
    journal = Journal(events)
    plan = PlanAccess(root, "specs/app.md", journal, Spending(None))
    return WorkTree(plan, journal, Console(io.StringIO(), live=False), coordinator=coordinator)
