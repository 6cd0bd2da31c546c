"""What one review round came to, decided once: `decide` turns what its aspects' runs did
(`ReviewFacts`) into a `ReviewOutcome`, which the REVIEW stage applies (ralph.loop.stages.review)
and the loop reads to end the run COMPLETE or go on building the findings. Pure: no plan, no git,
no process (tests/loop/stages/test_review_outcome.py)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class ReviewOutcome(Enum):
    NOT_DUE = "not_due"  # no round to run: review off, no change since the base, or the rounds are done
    CLEAN = "clean"  # the aspects ran and found nothing worth a task: the run may end COMPLETE
    ADDED = "added"  # findings became tasks or issues: the loop builds them, then reviews once more
    FAILED = "failed"  # no aspect's run finished keeping the rules: the round does not count


class AspectEnd(Enum):
    """How one aspect's run ended."""

    FINISHED = "finished"  # its findings (none or some) are taken
    STOPPED = "stopped"  # ralph stopped it (time, context): nothing of it kept
    FAILED = "failed"  # its agent failed, or it broke the stage's rules: nothing of it kept


@dataclass(frozen=True)
class ReviewFacts:
    """What the round did: the aspects it ran, how many finished, what the plan took of them."""

    due: bool = True  # a round was due at all
    finished: int = 0  # aspect runs that finished keeping the rules
    added: int = 0  # the tasks and issues the plan took of them, bounded


def decide(facts: ReviewFacts) -> ReviewOutcome:
    if not facts.due:
        return ReviewOutcome.NOT_DUE
    if not facts.finished:
        return ReviewOutcome.FAILED
    return ReviewOutcome.ADDED if facts.added else ReviewOutcome.CLEAN


def aspect_end(stopped: bool, failed: bool) -> AspectEnd:
    """One aspect's run: a stop first (a stopped run's exit is ralph's doing), then a failure."""
    if stopped:
        return AspectEnd.STOPPED
    return AspectEnd.FAILED if failed else AspectEnd.FINISHED
