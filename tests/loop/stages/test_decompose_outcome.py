"""What a DECOMPOSE comes to (ralph/loop/stages/decompose_outcome.py), decided from what its run
did: one test per exit, in process, no plan, no git, no agent."""

from __future__ import annotations

import pytest

from ralph.loop.stages.decompose_outcome import DecomposeFacts, DecomposeOutcome, Exit, Then, decide
from ralph.plan.records import KillReason

THREE = ("t-1", "t-2", "t-3")


def test_two_to_five_subtasks_are_recorded_and_committed():
    for children in (THREE[:2], (*THREE, "t-4", "t-5")):
        outcome = decide(DecomposeFacts(max_depth=2, children=children))
        assert outcome == DecomposeOutcome(Exit.DECOMPOSED, Then.COMMIT)


def test_a_task_decomposed_max_depth_times_is_blocked_without_a_run():
    outcome = decide(DecomposeFacts(depth=2, max_depth=2, kill_reason=KillReason.TIMEOUT, children=THREE))
    why = "decomposed 2 times and still failing (timeout)"
    assert outcome == DecomposeOutcome(Exit.TOO_DEEP, Then.BLOCK, why, block=why)
    assert not outcome.counted
    # what the stage asks before it starts a run (a task one level less deep is run)
    assert DecomposeFacts(depth=2, max_depth=2).too_deep and not DecomposeFacts(depth=1, max_depth=2).too_deep


def test_a_stopped_run_is_undone_whole_and_counts_as_a_failed_decomposition():
    outcome = decide(DecomposeFacts(max_depth=2, stopped=KillReason.CONTEXT_LIMIT, children=THREE))
    why = "was stopped (context_limit) before it finished"
    assert outcome == DecomposeOutcome(Exit.STOPPED, Then.AGAIN, why, undo=True, counted=True)
    assert outcome.drop == ()  # its subtasks go with the rest of the run


@pytest.mark.parametrize("children", [(), THREE[:1], (*THREE, "t-4", "t-5", "t-6")])
def test_too_few_or_too_many_subtasks_are_undone_and_counted(children):
    outcome = decide(DecomposeFacts(max_depth=2, children=children))
    assert (outcome.exit, outcome.then, outcome.drop, outcome.counted) == (
        Exit.WRONG_COUNT, Then.AGAIN, children, True
    )  # fmt: skip
    assert outcome.why.endswith("a decomposition needs 2 to 5")


def test_subtasks_closing_a_dependency_cycle_are_undone_and_counted():
    outcome = decide(DecomposeFacts(max_depth=2, children=THREE, cycle="t-1 -> t-2 -> t-1"))
    why = "made subtasks that close a dependency cycle (t-1 -> t-2 -> t-1)"
    assert outcome == DecomposeOutcome(Exit.CYCLE, Then.AGAIN, why, drop=THREE, counted=True)


def test_a_second_failed_decomposition_blocks_the_task():
    outcome = decide(DecomposeFacts(max_depth=2, children=THREE[:1], failures=2))
    assert outcome.then is Then.BLOCK and outcome.counted
    assert outcome.block == f"DECOMPOSE failed 2 times: {outcome.why}"
