"""What a BUILD attempt comes to (ralph/loop/stages/build_outcome.py), decided from what its run did:
one test per exit, in process, no plan, no git, no agent."""

from __future__ import annotations

from typing import Any

import pytest

from ralph.loop.stages.build_outcome import (
    AttemptFacts,
    BuildOutcome,
    Counted,
    Exit,
    Failure,
    Next,
    Write,
    decide,
)
from ralph.loop.tree.work_tree import Keep
from ralph.plan.records import KillReason, Verdict

GATE = Failure(Verdict.GATE_FAILED, "gate_failed: 2 tests failed")
SAID_NO = Failure(Verdict.AGENT_ERROR, "agent_error: the agent ended (exit 1) on this task")
FIRST = Counted(ancestor=None, family="t-1", out_of_builds=False, same_twice=False, splittable=True)


def counted(failure: Failure = GATE, **changes: Any) -> AttemptFacts:
    return AttemptFacts(failure=failure, counted=FIRST._replace(**changes))


def test_a_build_that_passed_is_committed_with_its_record_for_verify():
    assert decide(AttemptFacts()) == BuildOutcome(Exit.BUILT, Keep.COMMIT, Write.BUILD, Next.VERIFY)


@pytest.mark.parametrize("reason", [KillReason.TIMEOUT, KillReason.CONTEXT_LIMIT])
def test_a_killed_run_is_kept_on_its_draft_and_set_aside_for_decompose(reason):
    outcome = decide(AttemptFacts(killed=reason, failure=GATE))  # a kill decides before all else
    assert outcome == BuildOutcome(Exit.KILLED, Keep.DRAFT, Write.SET_ASIDE, Next.DECOMPOSE, kill=reason)
    assert not outcome.counted and not outcome.again


def test_a_task_that_left_the_plan_keeps_its_code_on_a_draft_and_records_nothing():
    outcome = decide(AttemptFacts(in_plan=False, asked=True))
    assert outcome == BuildOutcome(Exit.LEFT_THE_PLAN, Keep.DRAFT_IF_CHANGED, Write.NOTHING, Next.NOTHING)


def test_a_question_sets_the_changes_aside_and_commits_it_for_a_person():
    outcome = decide(AttemptFacts(asked=True, resubmitted=True))
    assert outcome == BuildOutcome(Exit.ASKED, Keep.DRAFT, Write.QUESTION, Next.PERSON)


def test_a_resubmission_records_no_build_and_goes_to_a_fresh_verifier():
    outcome = decide(AttemptFacts(resubmitted=True))
    assert outcome == BuildOutcome(Exit.RESUBMITTED, Keep.IN_PLACE, Write.RESUBMISSION, Next.VERIFY)


def test_a_runners_stale_base_is_given_back_uncounted_its_plan_reset():
    outcome = decide(AttemptFacts(failure=GATE, stale=True))
    assert outcome == BuildOutcome(
        Exit.STALE_BASE, Keep.DRAFT_UNRECORDED, Write.RESET, Next.AFTER_OTHERS, GATE
    )
    assert not outcome.counted


def test_a_worktrees_stale_base_waits_for_its_neighbours_its_changes_left_to_them():
    outcome = decide(AttemptFacts(failure=GATE, stale=True, in_worktree=True))
    assert outcome == BuildOutcome(Exit.STALE_BASE, Keep.IN_PLACE, Write.NOTHING, Next.AFTER_NEIGHBOURS, GATE)


def test_a_deferral_waits_for_the_code_uncounted():
    serial = decide(AttemptFacts(failure=SAID_NO, deferred=True))
    assert serial == BuildOutcome(
        Exit.DEFERRED, Keep.DRAFT_IF_CHANGED, Write.RESET, Next.WAIT_FOR_CODE, SAID_NO
    )
    for facts in (
        AttemptFacts(failure=SAID_NO, deferred=True, in_worktree=True),
        AttemptFacts(failure=SAID_NO, deferred=True, kept=True),
    ):
        outcome = decide(facts)
        assert (outcome.exit, outcome.keep, outcome.write, outcome.next) == (
            Exit.DEFERRED,
            Keep.IN_PLACE,
            Write.NOTHING,
            Next.WAIT_FOR_CODE,
        )
        assert not outcome.counted


def test_a_counted_failure_is_built_again_from_its_changes():
    outcome = decide(counted())
    assert outcome == BuildOutcome(Exit.FAILED, Keep.IN_PLACE, Write.NOTHING, Next.RETRY, GATE, counted=True)
    assert outcome.again


def test_a_counted_failure_in_a_worktree_behind_starts_again_from_head():
    outcome = decide(AttemptFacts(failure=GATE, counted=FIRST, from_head=True))
    assert (outcome.next, outcome.counted, outcome.again) == (Next.FROM_HEAD, True, False)


def test_an_agent_that_said_it_cannot_waits_for_the_code_counted_unless_held_back():
    assert decide(counted(SAID_NO)).next is Next.WAIT_FOR_CODE
    held_back = decide(AttemptFacts(failure=SAID_NO, counted=FIRST, kept=True))
    assert (held_back.next, held_back.again) == (Next.RETRY, True)


def test_a_failure_out_of_builds_is_set_aside_for_decompose():
    outcome = decide(counted(out_of_builds=True, same_twice=True))
    assert outcome == BuildOutcome(
        Exit.FAILED,
        Keep.DRAFT,
        Write.SET_ASIDE,
        Next.DECOMPOSE,
        GATE,
        counted=True,
        kill=KillReason.DOOM_LOOP,
    )


def test_the_same_failure_twice_is_split_or_asked_about_when_it_cannot_be():
    split = decide(counted(same_twice=True))
    assert (split.keep, split.write, split.next, split.kill) == (
        Keep.DRAFT,
        Write.SET_ASIDE,
        Next.DECOMPOSE,
        KillReason.REPEATED_FAILURE,
    )
    asked = decide(counted(same_twice=True, splittable=False))
    assert (asked.keep, asked.write, asked.next, asked.kill) == (Keep.PATCH, Write.ASK, Next.PERSON, None)


def test_a_failure_that_survived_a_split_goes_to_its_familys_question():
    outcome = decide(counted(ancestor="t-0", out_of_builds=True, same_twice=True))
    assert outcome == BuildOutcome(Exit.FAILED, Keep.PATCH, Write.NOTHING, Next.FAMILY, GATE, counted=True)


@pytest.mark.parametrize(
    "changes",
    [
        {"ancestor": "t-0"},
        {"out_of_builds": True},
        {"same_twice": True},
        {"same_twice": True, "splittable": False},
    ],
)
def test_a_failure_held_back_moves_no_changes_they_were_set_aside_already(changes):
    outcome = decide(AttemptFacts(failure=GATE, counted=FIRST._replace(**changes), kept=True))
    assert outcome.keep is Keep.IN_PLACE and outcome.counted
    assert outcome.next is decide(counted(**changes)).next


def test_a_failure_neither_waived_nor_counted_is_refused():
    with pytest.raises(ValueError, match="neither waived nor counted"):
        decide(AttemptFacts(failure=GATE))
