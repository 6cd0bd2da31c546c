"""What the live view shows, as data: the console keeps one `View` and updates it as the run goes,
`ralph watch` rebuilds it from the journal, and ralph.loop.observe.live draws it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunUsage:
    """A running agent's usage so far; `cost_usd` None: not known (no reported cost, no price)."""

    tokens: int = 0
    cost_usd: float | None = None


@dataclass
class Progress:
    """How far the run is and what it may still spend; None: not known (yet)."""

    accepted: int | None = None
    total: int | None = None
    max_iterations: int | None = None
    max_minutes: float | None = None
    max_cost_usd: float | None = None
    known_runs: int = 0  # ended runs whose cost is known
    unknown_runs: int = 0  # ended runs whose cost nobody reported or priced
    accepted_at: float | None = None  # when the latest acceptance was seen (for the ETA's basis)
    accepted_before: int | None = None  # accepted when this run began: earlier runs' are no basis
    running: dict[str, RunUsage] = field(default_factory=dict)  # run id -> usage so far

    def update(self, at: float, **fields: Any) -> None:
        """A `progress` report (the console's, or a journal event's fields) seen at `at`."""
        accepted = fields.get("accepted")
        if accepted is not None:
            if self.accepted_before is None:
                self.accepted_before = accepted
            elif accepted != self.accepted:
                self.accepted_at = at
        for key in ("accepted", "total", "max_iterations", "max_minutes", "max_cost_usd"):
            if key in fields:
                setattr(self, key, fields[key])


@dataclass
class RunView:
    """One running agent."""

    stage: str
    item: str
    name: str
    log: str
    started: float  # epoch seconds


@dataclass
class GateView:
    """The last gate (or pre-commit hook) result."""

    item: str
    ok: bool
    lines: list[str]
    log: str
    what: str = "gate"


@dataclass
class View:
    """What the live region shows; the console keeps one, `ralph watch` rebuilds it."""

    started: float = field(default_factory=time.time)
    iteration: int = 0
    stage: str = ""
    runs: dict[str, RunView] = field(default_factory=dict)
    gate: GateView | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    waiting: str = ""  # a rate or usage limit being waited out
    actions: list[str] = field(default_factory=list)  # the agent's last actions (ralph watch)
    progress: Progress = field(default_factory=Progress)
