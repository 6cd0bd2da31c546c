"""What one spec check came to, decided once: `decide` turns what its run did (`CheckFacts`) into
a `CheckOutcome`, which the CHECK stage applies in one place (ralph.loop.stages.check_apply, `apply`)
and the loop reads to end the run or go on. Pure: no plan, no git, no process; each outcome is
tested alone (tests/loop/stages/test_check_outcome.py)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ralph.plan.records import KillReason


class CheckOutcome(Enum):
    MET = "met"  # the check ran and added nothing
    ALREADY_MET = "already_met"  # a check found nothing with this code and spec: not run again
    ADDED = "added"  # it added tasks or issues: the loop goes on
    STOPPED = "stopped"  # its run was stopped (time, context): nothing of it kept
    FAILED = "failed"  # its agent failed (an error, a broken plan, a permission violation): nothing kept


@dataclass(frozen=True)
class CheckFacts:
    """What the check did, asked in this order: a fact is asked only when none before it decided,
    the others left at their defaults. What it added is known only as the plan takes it, bounded
    (ralph.plan.new_work): asked last, inside that write."""

    already_met: bool = False  # a check found this spec and code met: no run
    stopped: KillReason | None = None  # ralph stopped its run
    failed: bool = False  # its agent failed: an error, a broken plan, a violation
    added: int = 0  # the tasks and issues the plan took of it, bounded


def decide(facts: CheckFacts) -> CheckOutcome:
    """The check's outcome from what its run did."""
    if facts.already_met:
        return CheckOutcome.ALREADY_MET
    if facts.stopped is not None:
        return CheckOutcome.STOPPED
    if facts.failed:  # not a check that found nothing
        return CheckOutcome.FAILED
    return CheckOutcome.ADDED if facts.added else CheckOutcome.MET
