"""ralph/plan/stage_declarations.py: each stage is declared once, and what the loop, the checks,
the settings and dry run know of the stages is read from those declarations."""

from __future__ import annotations

from pathlib import Path

from ralph.loop import construct
from ralph.loop.runs import permissions, prompts
from ralph.loop.stages.modules import stage_run
from ralph.plan import stage_declarations
from ralph.plan.records import Stage
from ralph.plan.stage_declarations import BY_NAME, STAGES, Change, Place
from ralph.usecases.config_values import MODEL_STAGES

# The plan's stage names that are states the plan is in, not stages that run an agent.
STATES = {Stage.WAITING, Stage.BLOCKED, Stage.COMPLETE}


def test_every_stage_that_runs_an_agent_is_declared_once():
    names = [declared.name for declared in STAGES]
    assert len(names) == len(set(names))
    assert set(Stage) - STATES == {Stage(name) for name in names if name in Stage.__members__}
    assert set(names) - set(Stage.__members__) == {"DRAFT"}  # the one stage apart from the loop


def test_each_declared_template_is_shipped():
    for declared in STAGES:
        assert (prompts.PACKAGE_PROMPTS / declared.template).is_file(), declared
        assert prompts.package_template(declared.name) == (
            prompts.PACKAGE_PROMPTS / declared.template
        ).read_text(encoding="utf-8")


def test_a_repository_overrides_a_template_by_its_declared_file_name(tmp_path: Path):
    override = tmp_path / prompts.OVERRIDE_DIR / BY_NAME["BUILD"].template
    override.parent.mkdir(parents=True)
    override.write_text("my build prompt $spec\n", encoding="utf-8")
    assert prompts.template_for(tmp_path, "BUILD") == "my build prompt $spec\n"
    assert prompts.template_for(tmp_path, "VERIFY") == prompts.package_template("VERIFY")


def test_the_loop_iteration_is_the_declared_order():
    assert [declared.name for declared in stage_declarations.iteration()] == [
        "DECOMPOSE",
        "INVESTIGATE",
        "BUILD",
        "DECOMPOSE",
        "VERIFY",
    ]
    assert (
        tuple(
            stage_run(BY_NAME[name]) for name in ("DECOMPOSE", "INVESTIGATE", "BUILD", "DECOMPOSE", "VERIFY")
        )
        == construct.ITERATION
    )
    iterating = {declared.name for declared in STAGES if declared.place is Place.ITERATION}
    assert iterating == {declared.name for declared in stage_declarations.iteration()}


def test_the_permission_checks_read_what_each_stage_may_change():
    assert {Stage.BUILD} == permissions.CODE_STAGES
    only_plan = {Stage.PLAN, Stage.INVESTIGATE, Stage.DECOMPOSE, Stage.CHECK, Stage.REVIEW}
    assert only_plan == permissions.PLAN_ONLY_STAGES
    assert {Stage.VERIFY} == permissions.ACCEPT_STAGES
    assert {Stage.BUILD, Stage.VERIFY} == permissions.STATUS_STAGES
    assert {Stage.BUILD, Stage.DECOMPOSE} == permissions.REMOVE_OWN_STAGES
    assert {
        Stage.PLAN,
        Stage.INVESTIGATE,
        Stage.VERIFY,
        Stage.DECOMPOSE,
        Stage.CHECK,
        Stage.REVIEW,
    } == permissions.ADD_TASK_STAGES
    assert {Stage.BUILD} == permissions.ASK_STAGES
    for change in Change:
        assert stage_declarations.stages_that(change) == {
            Stage(declared.name)
            for declared in STAGES
            if change in declared.may and declared.place is not Place.APART
        }


def test_the_stages_with_a_model_are_the_declared_ones_in_declared_order():
    assert MODEL_STAGES == ("PLAN", "INVESTIGATE", "BUILD", "VERIFY", "DECOMPOSE", "CHECK", "REVIEW")
    assert tuple(declared.name for declared in STAGES if declared.model) == MODEL_STAGES


def test_the_config_takes_a_model_for_each_stage_with_one():
    from ralph.plan.models import StageModels

    assert tuple(StageModels.model_fields) == MODEL_STAGES


def test_the_agent_contract_names_every_stage_an_agent_may_see_in_ralph_stage():
    contract = Path(__file__).resolve().parents[2] / "docs" / "agent-contract.md"
    row = next(line for line in contract.read_text(encoding="utf-8").splitlines() if "`RALPH_STAGE`" in line)
    assert [declared.name for declared in STAGES if f"`{declared.name}`" not in row] == []
