"""Each declared stage's code (ralph.plan.stage_declarations): its module in this package, the class
that runs it, and the jobs it would run for a plan. Found by the names its declaration gives, so a
new stage needs no list here or in the loop extended."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, cast

from ralph.plan.stage_declarations import StageDeclaration

if TYPE_CHECKING:
    from ralph.loop.stages.job import Job
    from ralph.loop.stages.workspace import StageRun
    from ralph.plan.plan import Plan
    from ralph.usecases.settings import Settings


def module_of(declared: StageDeclaration) -> ModuleType:
    return importlib.import_module(f"{__package__}.{declared.module}")


def stage_run(declared: StageDeclaration) -> type[StageRun]:
    """The class that runs the stage for one iteration."""
    return cast("type[StageRun]", getattr(module_of(declared), declared.run))


def jobs(declared: StageDeclaration, plan: Plan | None, settings: Settings, root: Path) -> list[Job]:
    """The runs the stage would start for the plan as it is (`--dry-run` shows them); `plan` None:
    there is none yet (only PLAN's jobs take that)."""
    found: list[Job] = module_of(declared).jobs(plan, settings, root)
    return found
