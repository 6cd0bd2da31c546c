"""What a review round comes to (ralph/loop/stages/review_outcome.py), each outcome alone."""

from __future__ import annotations

from ralph.loop.stages.review_outcome import AspectEnd, ReviewFacts, ReviewOutcome, aspect_end, decide


def test_no_round_due_is_not_due_whatever_else():
    assert decide(ReviewFacts(due=False, finished=3, added=2)) is ReviewOutcome.NOT_DUE


def test_a_round_where_no_aspect_finished_failed_even_if_something_was_added():
    assert decide(ReviewFacts(finished=0, added=1)) is ReviewOutcome.FAILED


def test_a_finished_round_added_work_or_found_nothing():
    assert decide(ReviewFacts(finished=1, added=2)) is ReviewOutcome.ADDED
    assert decide(ReviewFacts(finished=5)) is ReviewOutcome.CLEAN


def test_an_aspect_stopped_by_ralph_is_stopped_before_it_is_failed():
    assert aspect_end(stopped=True, failed=True) is AspectEnd.STOPPED
    assert aspect_end(stopped=False, failed=True) is AspectEnd.FAILED
    assert aspect_end(stopped=False, failed=False) is AspectEnd.FINISHED
