"""ralph/loop/stages/modules.py: each declared stage's module, its run and its jobs are found by
the names its declaration gives."""

from __future__ import annotations

import inspect
from pathlib import Path

from ralph.loop.stages import modules
from ralph.loop.stages.build import BuildStage
from ralph.loop.stages.job import Job
from ralph.plan.stage_declarations import BY_NAME, STAGES, Claim, Place, StageDeclaration
from ralph.usecases.settings import Settings


def test_each_declared_module_has_its_run_and_jobs_of_one_shape():
    for declared in STAGES:
        module = modules.module_of(declared)
        assert module.__name__ == f"ralph.loop.stages.{declared.module}"
        if declared.place is Place.APART:
            continue  # DRAFT runs through its own command
        assert list(inspect.signature(module.jobs).parameters) == ["plan", "settings", "root"], declared
        assert hasattr(modules.stage_run(declared), "run"), declared


def test_stage_run_is_the_declared_class():
    assert modules.stage_run(BY_NAME["BUILD"]) is BuildStage


def test_jobs_are_the_declared_module_s_jobs_for_the_plan():
    """PLAN's jobs for a repository with no plan yet: its one run, for the spec."""
    settings = Settings(spec="specs/x.md")
    found = modules.jobs(BY_NAME["PLAN"], None, settings, Path("."))
    assert found == [Job(BY_NAME["PLAN"].name, None, "specs/x.md")]  # type: ignore[arg-type]


def test_a_new_declaration_names_its_module_and_class():
    """A stage is found by its declaration alone: here one declared with VERIFY's module."""
    declared = StageDeclaration(
        name="REVIEW",
        module="verify",
        run="VerifyStage",
        template="verify.md",
        does="x",
        may=frozenset(),
        plan_only=False,
        model=False,
        place=Place.ITERATION,
        claims=BY_NAME["VERIFY"].claims,
        dry_run=False,
    )
    from ralph.loop.stages.verify import VerifyStage, jobs

    assert modules.stage_run(declared) is VerifyStage
    assert modules.module_of(declared).jobs is jobs


def test_the_stages_declared_to_claim_one_item_at_a_time_take_their_items_through_each():
    """Claim.EACH: the coordinator's one `each` serves them all, with no method of their own."""
    for declared in STAGES:
        source = inspect.getsource(modules.module_of(declared))
        assert ("coordinator.each(" in source) == (declared.claims is Claim.EACH), declared.name
