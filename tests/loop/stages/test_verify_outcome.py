"""What a verifier's run comes to (ralph/loop/stages/verify_outcome.py), decided from what it did:
one test per exit, in process, no plan, no git, no agent."""

from __future__ import annotations

import pytest

from ralph.loop.stages.verify_outcome import Exit, RunFacts, VerifyOutcome, decide
from ralph.plan.records import KillReason


@pytest.mark.parametrize("reason", [KillReason.TIMEOUT, KillReason.CONTEXT_LIMIT])
def test_a_stopped_run_gives_no_verdict_and_its_stop_is_counted(reason):
    outcome = decide(RunFacts(killed=reason, stops=1, max_stops=3, violation=True, verdict="accepted"))
    assert outcome == VerifyOutcome(Exit.STOPPED, kill=reason, stops=1)  # a stop decides before all else
    assert not outcome.take


def test_a_task_stopped_max_attempts_times_is_set_aside_for_decompose():
    outcome = decide(RunFacts(killed=KillReason.TIMEOUT, stops=3, max_stops=3))
    assert outcome == VerifyOutcome(Exit.SET_ASIDE, kill=KillReason.TIMEOUT, stops=3)


def test_a_violation_takes_nothing_of_the_run():
    outcome = decide(RunFacts(violation=True, verdict="accepted"))
    assert outcome == VerifyOutcome(Exit.VIOLATION)
    assert not outcome.take


def test_a_run_whose_copy_of_the_plan_is_gone_or_broken_gives_no_verdict_and_takes_nothing():
    assert decide(RunFacts(plan_read=False)) == VerifyOutcome(Exit.NO_VERDICT)


def test_a_run_that_gave_no_verdict_still_has_what_it_added_taken():
    assert decide(RunFacts()) == VerifyOutcome(Exit.NO_VERDICT, take=True)


def test_a_verdict_on_a_task_a_person_judged_meanwhile_is_not_taken_as_one():
    outcome = decide(RunFacts(verdict="rejected", overtaken=True))
    assert outcome == VerifyOutcome(Exit.OVERTAKEN, take=True)


def test_an_acceptance_is_taken():
    assert decide(RunFacts(verdict="accepted")) == VerifyOutcome(Exit.ACCEPTED, take=True)


def test_a_rejection_is_taken():
    assert decide(RunFacts(verdict="rejected")) == VerifyOutcome(Exit.REJECTED, take=True)


def test_a_verdict_verify_does_not_know_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="maybe"):
        decide(RunFacts(verdict="maybe"))
