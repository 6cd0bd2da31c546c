"""What one DECOMPOSE of a killed task came to, decided once: `decide` turns what its run did
(`DecomposeFacts`) into a `DecomposeOutcome`: its exit, what is undone, whether it counts as a
failed decomposition and what happens next. The DECOMPOSE stage applies that value in one place
(ralph.loop.stages.decompose, `_apply`). Pure: no plan, no git, no process; each exit is tested
alone (tests/loop/stages/test_decompose_outcome.py)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ralph.plan.records import KillReason
from ralph.text import plural

MIN_SUBTASKS, MAX_SUBTASKS = 2, 5
MAX_DECOMPOSE_FAILURES = 2


class Exit(StrEnum):
    """How the decomposition ended."""

    DECOMPOSED = "decomposed"  # 2 to 5 subtasks the plan takes: they replace the task
    TOO_DEEP = "too_deep"  # decomposed max_decompose_depth times already: no run
    STOPPED = "stopped"  # its run was stopped (time, context) before it finished
    WRONG_COUNT = "wrong_count"  # too few or too many subtasks
    CYCLE = "cycle"  # subtasks that close a dependency cycle, which the plan refuses


class Then(StrEnum):
    """What happens to the task next."""

    COMMIT = "commit"  # its subtasks recorded and committed
    AGAIN = "again"  # the failure recorded: decomposed again next time
    BLOCK = "block"  # blocked for a person to split or rethink


@dataclass(frozen=True)
class DecomposeFacts:
    """What the run did, asked in this order: a fact is asked only when none before it decided,
    the others left at their defaults."""

    depth: int = 0  # how often the task was decomposed already
    max_depth: int = 1  # max_decompose_depth
    kill_reason: KillReason | None = None  # why the task was set aside (the words of a block)
    stopped: KillReason | None = None  # ralph stopped the run
    children: tuple[str, ...] = ()  # the pending subtasks naming it as parent after the run
    cycle: str | None = None  # the plan refused them: why (found on writing them)
    failures: int = 1  # its failed decompositions, this one included, were it one

    @property
    def too_deep(self) -> bool:
        """Decomposed max_decompose_depth times already: blocked without a run (Exit.TOO_DEEP)."""
        return self.depth >= self.max_depth


@dataclass(frozen=True)
class DecomposeOutcome:
    """What the decomposition came to, for the stage to apply in one place."""

    exit: Exit
    then: Then
    why: str = ""  # what went wrong, for the journal, the console and the commit
    block: str = ""  # the reason the task is blocked with (Then.BLOCK)
    undo: bool = False  # the run's changes to the plan undone (kept beside its log)
    drop: tuple[str, ...] = ()  # subtasks undone
    counted: bool = False  # recorded as a failed decomposition


def decide(facts: DecomposeFacts) -> DecomposeOutcome:
    """The decomposition's outcome from what its run did."""
    if facts.too_deep:
        why = f"decomposed {facts.depth} times and still failing ({facts.kill_reason})"
        return DecomposeOutcome(Exit.TOO_DEEP, Then.BLOCK, why, block=why)
    if facts.stopped is not None:  # half a decomposition is none
        return _failed(Exit.STOPPED, f"was stopped ({facts.stopped}) before it finished", facts, undo=True)
    count = len(facts.children)
    if not MIN_SUBTASKS <= count <= MAX_SUBTASKS:
        why = f"made {plural(count, 'subtask')}; a decomposition needs {MIN_SUBTASKS} to {MAX_SUBTASKS}"
        return _failed(Exit.WRONG_COUNT, why, facts)
    if facts.cycle is not None:  # its dependents would need its parts, which need them
        return _failed(Exit.CYCLE, f"made subtasks that close a dependency cycle ({facts.cycle})", facts)
    return DecomposeOutcome(Exit.DECOMPOSED, Then.COMMIT)


def _failed(exit_: Exit, why: str, facts: DecomposeFacts, undo: bool = False) -> DecomposeOutcome:
    """A failed decomposition: undone and counted; the second one blocks the task."""
    drop = () if undo else facts.children  # a stopped run's are undone with the rest of it
    if facts.failures >= MAX_DECOMPOSE_FAILURES:
        block = f"DECOMPOSE failed {facts.failures} times: {why}"
        return DecomposeOutcome(exit_, Then.BLOCK, why, block, undo, drop, counted=True)
    return DecomposeOutcome(exit_, Then.AGAIN, why, undo=undo, drop=drop, counted=True)
