"""What a spec check comes to (ralph/loop/stages/check_outcome.py), decided from what its run did:
one test per outcome, in process, no plan, no git, no agent."""

from __future__ import annotations

from ralph.loop.stages.check_outcome import CheckFacts, CheckOutcome, decide
from ralph.plan.records import KillReason


def test_a_check_that_found_this_spec_and_code_met_is_not_run_again():
    assert decide(CheckFacts(already_met=True, stopped=KillReason.TIMEOUT)) is CheckOutcome.ALREADY_MET


def test_a_stopped_check_keeps_nothing_whatever_else_it_did():
    assert decide(CheckFacts(stopped=KillReason.CONTEXT_LIMIT, failed=True, added=3)) is CheckOutcome.STOPPED


def test_a_failed_check_is_not_one_that_found_nothing():
    assert decide(CheckFacts(failed=True)) is CheckOutcome.FAILED
    assert decide(CheckFacts(failed=True, added=2)) is CheckOutcome.FAILED


def test_a_check_that_added_nothing_finds_the_spec_met():
    assert decide(CheckFacts()) is CheckOutcome.MET


def test_a_check_that_added_work_goes_on():
    assert decide(CheckFacts(added=1)) is CheckOutcome.ADDED
