"""What one BUILD attempt came to, decided once: `decide` turns what the run did (`AttemptFacts`)
into a `BuildOutcome`: its exit, whether it counts, what the work tree keeps (`Keep`, done by
ralph.loop.tree.work_tree.settle_attempt), what the plan records and what happens next. What the
run did is gathered by ralph.loop.stages.build_facts; the value is applied in one place,
ralph.loop.stages.build_apply. Pure: no plan, no git, no process; each exit is tested alone
(tests/loop/stages/test_build_outcome.py)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, NamedTuple

from ralph.loop.tree.work_tree import Keep
from ralph.plan.records import KillReason, Verdict

if TYPE_CHECKING:
    from ralph.loop.runs.agent_process import AgentResult


class Failure(NamedTuple):
    """Why a build attempt does not count as built: its verdict, and the words recorded with it."""

    verdict: Verdict
    text: str


class StaleBase(Exception):  # noqa: N818 (a signal to the parallel builds, not an error)
    """A build attempt in a worktree failed on a base its neighbours' builds have moved past, or
    may yet (they still run): it may have failed only for want of their changes
    (Next.AFTER_NEIGHBOURS). It is not counted now; the task is built again from the new HEAD
    once those neighbours have merged or failed, and the failure counted then if none of them
    changed the code (ralph.loop.stages.build_parallel). `failure`, `result`: the attempt's
    verdict and words, and its agent run."""

    def __init__(self, task_id: str, failure: Failure | None = None, result: AgentResult | None = None):
        super().__init__(task_id)
        self.failure, self.result = failure, result


class Exit(StrEnum):
    """How the attempt ended."""

    BUILT = "built"  # passed its gate (and hook, and scope): committed
    RESUBMITTED = "resubmitted"  # a rejected task resubmitted unchanged, with its argument
    ASKED = "asked"  # the agent asked a person (`ralph ask`), which blocked the task
    LEFT_THE_PLAN = "left_the_plan"  # the task is gone from the plan after its run
    KILLED = "killed"  # the run was stopped (its time limit, a full context)
    STALE_BASE = "stale_base"  # failed on a base others' work has moved past: given back
    DEFERRED = "deferred"  # the agent could not do it on this code while other tasks are ready
    FAILED = "failed"  # a failure that counts as an attempt


class Write(StrEnum):
    """What the plan records of the attempt, after its failure is counted (BuildOutcome.counted)."""

    NOTHING = "nothing"
    BUILD = "build"  # the build, committed with its files (Keep.COMMIT)
    RESUBMISSION = "resubmission"
    QUESTION = "question"  # the agent's question, committed as its run left the plan
    SET_ASIDE = "set_aside"  # set aside for DECOMPOSE (BuildOutcome.kill says why)
    ASK = "ask"  # a question for a person about the same failure twice
    RESET = "reset"  # the plan back as committed, the run's copy kept beside a log


class Next(StrEnum):
    """What happens to the task next."""

    VERIFY = "verify"  # built: a verifier judges it
    RETRY = "retry"  # built again at once, from its changes
    FROM_HEAD = "from_head"  # built again from the branch as it is now (a build's worktree)
    WAIT_FOR_CODE = "wait_for_code"  # built again once other tasks have moved the code
    AFTER_OTHERS = "after_others"  # given back: built again once others' work is in (a runner)
    AFTER_NEIGHBOURS = "after_neighbours"  # StaleBase: after the builds beside it (ParallelBuilds)
    DECOMPOSE = "decompose"  # set aside: DECOMPOSE splits it
    PERSON = "person"  # a question for a person, which it waits for
    FAMILY = "family"  # its family's question, asked before any other build starts
    NOTHING = "nothing"  # not in the plan any more


class Counted(NamedTuple):
    """The task as its failure, once recorded, leaves it: what says whether it is built again."""

    ancestor: str | None  # the failure is an ancestor's: it survived a split
    family: str  # the family its question is about, then
    out_of_builds: bool  # max_attempts used up (max_rebuilds once VERIFY rejected it)
    same_twice: bool  # its last two builds failed the same way
    splittable: bool  # decomposed less deep than max_decompose_depth
    depth: int = 0  # how often its family was decomposed down to it
    repeated: tuple[str, ...] = ()  # the two failures' words, when the same twice (a question quotes them)


@dataclass(frozen=True)
class AttemptFacts:
    """What the run did, asked in this order: a fact is asked only when none before it decided
    (the tree's waivers are spent by asking), the others left at their defaults."""

    killed: KillReason | None = None  # ralph stopped the run
    in_plan: bool = True  # the task is still in the plan after it
    asked: bool = False  # its agent asked a person, which blocked the task
    resubmitted: bool = False  # a rejected task marked done `--unchanged`, no file changed
    failure: Failure | None = None  # why it is not built (None: it passed)
    stale: bool = False  # the failure is waived: others' work may settle it
    in_worktree: bool = False  # a build's own worktree, beside others (ParallelBuilds)
    deferred: bool = False  # the failure is waived: other tasks may move the code first
    counted: Counted | None = None  # the failure counts: the task as it leaves it
    from_head: bool = False  # a retry starts from the branch as it is (its worktree is behind)
    kept: bool = False  # a failure StaleBase held back, judged now: its changes were set aside


@dataclass(frozen=True)
class BuildOutcome:
    """What the attempt came to, for the stage to apply in one place."""

    exit: Exit
    keep: Keep
    write: Write
    next: Next
    failure: Failure | None = None
    counted: bool = False  # its failure is recorded as an attempt (before `write`)
    kill: KillReason | None = None  # why it is set aside (Write.SET_ASIDE)

    @property
    def again(self) -> bool:
        """Whether the same build goes on with another attempt at once."""
        return self.next is Next.RETRY


def decide(facts: AttemptFacts) -> BuildOutcome:
    """The attempt's outcome from what its run did."""
    if facts.killed is not None:
        keep = Keep.IN_PLACE if facts.kept else Keep.DRAFT
        return BuildOutcome(Exit.KILLED, keep, Write.SET_ASIDE, Next.DECOMPOSE, kill=facts.killed)
    if not facts.in_plan:
        return BuildOutcome(Exit.LEFT_THE_PLAN, Keep.DRAFT_IF_CHANGED, Write.NOTHING, Next.NOTHING)
    if facts.asked:
        return BuildOutcome(Exit.ASKED, Keep.DRAFT, Write.QUESTION, Next.PERSON)
    if facts.resubmitted:
        return BuildOutcome(Exit.RESUBMITTED, Keep.IN_PLACE, Write.RESUBMISSION, Next.VERIFY)
    failure = facts.failure
    if failure is None:
        return BuildOutcome(Exit.BUILT, Keep.COMMIT, Write.BUILD, Next.VERIFY)
    if facts.stale:
        if facts.in_worktree:  # its worktree's builder keeps the changes (ParallelBuilds)
            return BuildOutcome(Exit.STALE_BASE, Keep.IN_PLACE, Write.NOTHING, Next.AFTER_NEIGHBOURS, failure)
        return BuildOutcome(Exit.STALE_BASE, Keep.DRAFT_UNRECORDED, Write.RESET, Next.AFTER_OTHERS, failure)
    if facts.deferred:
        if facts.in_worktree or facts.kept:  # what is left there is the parallel builds' to set aside
            return BuildOutcome(Exit.DEFERRED, Keep.IN_PLACE, Write.NOTHING, Next.WAIT_FOR_CODE, failure)
        return BuildOutcome(Exit.DEFERRED, Keep.DRAFT_IF_CHANGED, Write.RESET, Next.WAIT_FOR_CODE, failure)
    if facts.counted is None:
        raise ValueError(f"a build failure neither waived nor counted: {failure.verdict}")
    return _counted(failure, facts.counted, facts)


def _counted(failure: Failure, counted: Counted, facts: AttemptFacts) -> BuildOutcome:
    """A failure that counts: recorded, then built again, set aside or asked about."""

    def outcome(keep: Keep, write: Write, next_: Next, kill: KillReason | None = None) -> BuildOutcome:
        keep = Keep.IN_PLACE if facts.kept else keep
        return BuildOutcome(Exit.FAILED, keep, write, next_, failure, counted=True, kill=kill)

    if counted.ancestor:  # neither another build nor another split would cure it
        return outcome(Keep.PATCH, Write.NOTHING, Next.FAMILY)
    if counted.out_of_builds:
        return outcome(Keep.DRAFT, Write.SET_ASIDE, Next.DECOMPOSE, KillReason.DOOM_LOOP)
    if counted.same_twice:  # a third identical run would teach nothing
        if counted.splittable:
            return outcome(Keep.DRAFT, Write.SET_ASIDE, Next.DECOMPOSE, KillReason.REPEATED_FAILURE)
        return outcome(Keep.PATCH, Write.ASK, Next.PERSON)
    if failure.verdict is Verdict.AGENT_ERROR and not facts.kept:  # asked again, it would say the same
        return outcome(Keep.IN_PLACE, Write.NOTHING, Next.WAIT_FOR_CODE)
    if facts.from_head:
        return outcome(Keep.IN_PLACE, Write.NOTHING, Next.FROM_HEAD)
    return outcome(Keep.IN_PLACE, Write.NOTHING, Next.RETRY)
