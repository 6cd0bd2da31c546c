"""Who takes which item of a stage. A run alone (`Solo`) takes every item it finds; runners sharing
a git remote (ralph.loop.share.remote.RemoteCoordinator) each take the items they win a claim on, and
publish what they did before taking the next. Stages ask their workspace's coordinator and have
one code path for both kinds. How each stage's items are claimed is declared with the stage
(ralph.plan.stage_declarations.Claim), and the methods here are named for those ways, not for
stages: the whole spec (`claims_spec`, `spec_done`), one item at a time (`each`), batches
(`batches`), the next items (`next_items`, `finished`); a new stage that claims one of these
ways needs nothing new here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from ralph.plan.document import Record
    from ralph.plan.plan import Plan
    from ralph.plan.stage_declarations import StageDeclaration

T = TypeVar("T")


def never(plan: Plan) -> bool:
    """No run of a stage found the spec needing nothing more: the default `met`."""
    return False


class Coordinator(Protocol):
    def claims_spec(self, stage: StageDeclaration, met: Callable[[Plan], bool] = never) -> bool:
        """Whether this run runs `stage`, a stage that claims the whole spec (Claim.SPEC), now.
        Before the iterations (PLAN): while the spec is unplanned; False once another runner
        planned it meanwhile. After them (CHECK, REVIEW): once every task of the spec is accepted
        here; False when another runner holds it or work came in meanwhile, or `met` says a run of
        the stage found the plan's spec and code as they are needing nothing more."""
        ...

    def spec_done(self) -> None:
        """The stage that claimed the spec is committed: other runners may see what it did."""
        ...

    def each(
        self,
        stage: str,
        found: list[T],
        fresh: Callable[[str], T | None],
        items: Callable[[Plan], list[Record]],
    ) -> Iterator[T]:
        """Each item a stage that claims one at a time (Claim.EACH: INVESTIGATE's issues,
        DECOMPOSE's killed tasks) runs in this run, of those `found`; `fresh` reads one again by id
        after its claim brought in other runners' changes (None: it is gone); `items` are the
        stage's items in a plan, the ones a claim may take."""
        ...

    def batches(self, limit: int) -> Iterator[list[str] | None]:
        """The batches of done tasks this run judges (Claim.BATCH: VERIFY), each at most `limit`
        (None: all of them)."""
        ...

    def next_items(self, ready: Callable[[], list[str]]) -> list[str]:
        """The tasks to work on next (Claim.NEXT: BUILD; more than one: they may be worked on at
        once); `ready` lists the ready ones as this work tree's plan has them. Empty: nothing is
        left to do here."""
        ...

    def finished(self, task_ids: list[str], max_attempts: int) -> dict[str, list[str]]:
        """The work on the tasks `next_items` gave is committed: publish it. Returns each task
        whose work conflicts with work published meanwhile, with the files (it was undone, and
        the task goes back to be worked on)."""
        ...

    def draft_kept(self, branch: str) -> None:
        """A task's unfinished work is kept on the draft branch `branch`: shared where runners share."""
        ...

    def fetch_draft(self, branch: str) -> str | None:
        """The draft branch `branch`, which is not here (another runner kept it), fetched from
        where runners share; the ref to read it at, or None (nowhere to fetch it from, or not there)."""
        ...

    def draft_dropped(self, branch: str, commit: str) -> None:
        """ralph's draft branch `branch`, at `commit`, is deleted here (its task is accepted): gone
        where runners share too, unless someone moved it there."""
        ...

    def others_published(self) -> bool:
        """Whether others published work this work tree lacks (a build here may fail for want of
        it): then a failed build is given back, uncounted, and built again once caught up."""
        ...

    def others_building(self) -> bool:
        """Whether others are building tasks now (a build here may fail for want of their work,
        not yet published): then a failed build is given back, uncounted, and held (`hold`)."""
        ...

    def hold(self, task_id: str) -> None:
        """The task's build was given back while others' work was in flight: not claimed again
        by this run until what others publish has moved the shared branch."""
        ...

    def release(self, quietly: bool = False) -> None:
        """The run ends: whatever it holds goes back. Quietly: once, errors ignored."""
        ...

    def shared_head(self) -> str | None:
        """The head of the branch runners share, as last looked at (None: nothing is shared)."""
        ...


class Solo:
    """A run with nobody to share the work with: every item is its own, nothing to publish."""

    def claims_spec(self, stage: StageDeclaration, met: Callable[[Plan], bool] = never) -> bool:
        return True

    def spec_done(self) -> None:
        pass

    def each(
        self,
        stage: str,
        found: list[T],
        fresh: Callable[[str], T | None],
        items: Callable[[Plan], list[Record]],
    ) -> Iterator[T]:
        return iter(found)

    def batches(self, limit: int) -> Iterator[list[str] | None]:
        yield None

    def next_items(self, ready: Callable[[], list[str]]) -> list[str]:
        return ready()

    def finished(self, task_ids: list[str], max_attempts: int) -> dict[str, list[str]]:
        return {}

    def draft_kept(self, branch: str) -> None:
        pass

    def fetch_draft(self, branch: str) -> str | None:
        return None

    def draft_dropped(self, branch: str, commit: str) -> None:
        pass

    def others_published(self) -> bool:
        return False

    def others_building(self) -> bool:
        return False

    def hold(self, task_id: str) -> None:
        pass

    def release(self, quietly: bool = False) -> None:
        pass

    def shared_head(self) -> str | None:
        return None
