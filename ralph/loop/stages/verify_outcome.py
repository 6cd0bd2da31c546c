"""What one verifier's run came to, decided once: `decide` turns what the run did (`RunFacts`)
into a `VerifyOutcome`: its exit, and whether its copy of the plan is taken (its verdict, what it
added). The VERIFY stage applies that value in one place (ralph.loop.stages.verify, `_apply`).
Pure: no plan, no git, no process; each exit is tested alone
(tests/loop/stages/test_verify_outcome.py)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ralph.plan.records import KillReason


class Exit(StrEnum):
    """How the verifier's run ended."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"  # with its reason: the task is built again
    NO_VERDICT = "no_verdict"  # it gave none (or its copy of the plan was gone or broken): verified again
    OVERTAKEN = "overtaken"  # a person judged or removed the task meanwhile: theirs stands
    VIOLATION = "violation"  # it did what VERIFY may not (here or in its checkout): nothing of it taken
    STOPPED = "stopped"  # ralph stopped it (its time limit, a full context): no verdict, the stop counted
    SET_ASIDE = "set_aside"  # stopped max_attempts times: set aside for DECOMPOSE, the build's changes kept


@dataclass(frozen=True)
class RunFacts:
    """What the run did, asked in this order: a fact is asked only when none before it decided,
    the others left at their defaults."""

    killed: KillReason | None = None  # ralph stopped the run
    stops: int = 0  # the task's VERIFY runs stopped, this one included (killed only)
    max_stops: int = 0  # max_attempts: at that many stops the task is split instead
    violation: bool = False  # it did what VERIFY may not, in its checkout or in the work tree
    plan_read: bool = True  # its copy of plan.jsonl was there and valid
    verdict: str | None = None  # what its copy says of its task: "accepted", "rejected" or none
    overtaken: bool = False  # the task is no longer done in the plan (a person's doing)


@dataclass(frozen=True)
class VerifyOutcome:
    """What the run came to, for the stage to apply in one place."""

    exit: Exit
    take: bool = False  # its copy of the plan is taken: its verdict (unless overtaken), what it added
    kill: KillReason | None = None  # why it was stopped (STOPPED, SET_ASIDE)
    stops: int = 0  # the task's VERIFY runs stopped so far (STOPPED, SET_ASIDE)


def decide(facts: RunFacts) -> VerifyOutcome:
    """The run's outcome from what it did."""
    if facts.killed is not None:  # a run stopped half way gives no verdict, whatever else it did
        exit_ = Exit.SET_ASIDE if facts.stops >= facts.max_stops else Exit.STOPPED
        return VerifyOutcome(exit_, kill=facts.killed, stops=facts.stops)
    if facts.violation:
        return VerifyOutcome(Exit.VIOLATION)
    if not facts.plan_read:
        return VerifyOutcome(Exit.NO_VERDICT)
    if facts.verdict is None:  # what it added is taken all the same
        return VerifyOutcome(Exit.NO_VERDICT, take=True)
    if facts.overtaken:
        return VerifyOutcome(Exit.OVERTAKEN, take=True)
    if facts.verdict == "accepted":
        return VerifyOutcome(Exit.ACCEPTED, take=True)
    if facts.verdict == "rejected":
        return VerifyOutcome(Exit.REJECTED, take=True)
    raise ValueError(f"a verdict VERIFY does not know: {facts.verdict}")
