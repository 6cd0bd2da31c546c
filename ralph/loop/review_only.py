"""`ralph review [--base REF] [SPEC] [--fix]`: the review by aspect (ralph.loop.stages.review) on
the current branch's change however it was made, through the construct loop: its fence, logs,
budgets, journal and report. The base is HEAD's merge base with REF, by default with the default
branch (stages.review.review_base). Without --fix one round runs and its findings are recorded
(the run ends REVIEWED, exit 0); with --fix the loop then builds and verifies them (no PLAN: the
findings are the work) and reviews once more for critical findings only. A review of the same
base left unfinished goes on from its recorded rounds instead of reviewing again."""

from __future__ import annotations

from pathlib import Path

from ralph.loop.construct import Ending, Loop, Outcome
from ralph.loop.observe.console import Console
from ralph.loop.stages.review import review_base
from ralph.loop.stages.review_outcome import ReviewOutcome
from ralph.loop.stages.workspace import Workspace
from ralph.plan.plan import Plan
from ralph.store.git import Repo
from ralph.usecases.settings import Settings


class ReviewLoop(Loop):
    def __init__(
        self, root: Path, settings: Settings, base: str | None, fix: bool, console: Console | None = None
    ):
        """`base`: the ref whose merge base with HEAD the change is read since (None: the
        default branch's); `fix`: build what the review finds."""
        super().__init__(root, settings, console)
        self.ref, self.fix = base, fix
        self.base = ""  # resolved as the run starts, before anything changes

    def _builds(self, plan_only: bool) -> bool:
        return self.fix

    def _prepare(self, needs_gate: bool) -> Workspace:
        self.base = review_base(Repo(self.root), self.ref)  # a bad --base: one line, nothing changed
        return super()._prepare(needs_gate)

    def _based(self, plan: Plan, head: str | None) -> dict[str, object]:
        resumed = not super()._based(plan, head) and plan.state().get("base") == self.base
        return {} if resumed else {"base": self.base, "review_rounds": 0}

    def _stages(self, plan_only: bool) -> tuple[Outcome, str]:
        if self.read_plan().state().get("review_rounds"):  # this base's round ran already
            if self.fix:
                return self._iterate(plan_first=False)
            self.ending = Ending.REVIEWED
            return Outcome.COMPLETE, "the change was reviewed already: its findings are in the plan"
        outcome = self._review()
        if outcome is ReviewOutcome.FAILED:
            why = "no review aspect's run finished, nothing of them kept (see below): run again"
            return self._stuck(Ending.REVIEW_FAILED, why)
        added = outcome is ReviewOutcome.ADDED
        if added and self.fix:
            return self._iterate(plan_first=False)
        self.ending = Ending.REVIEWED
        if not added:
            return Outcome.COMPLETE, "the change was reviewed: nothing found"
        return (
            Outcome.COMPLETE,
            "the change was reviewed: its findings are in the plan (`ralph review --fix` builds them)",
        )
