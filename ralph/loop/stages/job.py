"""One agent run a stage would start for a plan: the stage, the item, what a person reads of it,
and its prompt's values. Each stage module has a `jobs(plan, settings, root)` that lists them; the
run and `--dry-run` both read their runs from it, so the preview cannot drift from the run."""

from __future__ import annotations

from dataclasses import dataclass, field

from ralph.plan.document import Record
from ralph.plan.records import Stage


@dataclass(frozen=True)
class Job:
    stage: Stage
    item: str | None  # the task or issue id; None: the spec (PLAN)
    label: str  # the task's name, the text, the spec's path
    # the prompt's values (ralph/loop/runs/prompts.py)
    values: dict[str, object] = field(default_factory=dict)
    gate: list[str] | None = None  # the gate that runs after it (BUILD)
    record: Record = field(default_factory=dict, compare=False)  # the task's or issue's plan record
