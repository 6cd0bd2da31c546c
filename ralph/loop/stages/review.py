"""The review by aspect: once the spec check finds nothing missing, and before the run ends
COMPLETE, one fresh agent per aspect (ralph.loop.runs.aspects: bugs and security, the goal, tests,
simplicity, docs, or the repository's own) reads the whole change since the run's base
(`git diff BASE...HEAD`), in parallel, each in a checkout of its own as verifiers do
(ralph.loop.tree.checkouts), read-only but for its copy of plan.jsonl. What each adds there is
taken as a verifier's additions are: tasks and issues only, at most max_new_items per aspect,
duplicates of open tasks refused (ralph.plan.new_work), each marked with the aspect that found it
(`aspect`). The loop builds and verifies them, then reviews once more for critical findings only;
never a third time (aspects.MAX_ROUNDS).

The base is the commit the construct run of the spec started from, and the rounds run since it,
both in the plan's state record (`base`, `review_rounds`): a resumed run goes on from them, and
does not review twice."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ralph.errors import GitError, InvalidInput, PlanInvalid
from ralph.loop.observe.report_data import AspectReview
from ralph.loop.process.signals import deferred_signals
from ralph.loop.runs import aspects as review_aspects
from ralph.loop.runs.agent_process import AgentResult
from ralph.loop.runs.aspects import MAX_ROUNDS, REVIEW_DIR, Aspect
from ralph.loop.runs.permissions import violations
from ralph.loop.stages.agent_errors import state_of
from ralph.loop.stages.check import open_work
from ralph.loop.stages.job import Job
from ralph.loop.stages.review_outcome import AspectEnd, ReviewFacts, ReviewOutcome, aspect_end, decide
from ralph.loop.stages.workspace import StageReport, Workspace
from ralph.loop.tree.checkouts import Checkouts, replaced_or_removed, snapshot
from ralph.loop.tree.plan_access import PLAN_FILE
from ralph.plan import new_work
from ralph.plan.document import Record
from ralph.plan.plan import Plan
from ralph.plan.reading import PlanReader
from ralph.plan.records import Stage, kill_reason_of
from ralph.store import reader
from ralph.store.git import Repo
from ralph.usecases.settings import Settings

CRITICAL_ONLY = (
    "This is the review's last round: the findings of the first were built since. Report only"
    " critical findings of the whole change (a bug that loses data or breaks what the spec asks, a"
    " security hole); add nothing for anything less.\n"
)


@dataclass(frozen=True)
class Due:
    """A review round the plan calls for: the change since `base`, the round's number (from 0)."""

    base: str
    round: int

    @property
    def critical_only(self) -> bool:
        return self.round > 0


def due(plan: PlanReader, settings: Settings) -> Due | None:
    """The review round the plan as it is calls for, if any: review on, every task of the spec
    accepted, a base recorded for this spec and rounds left. (Whether the change since the base is
    empty is git's to say: `changed_since`.)"""
    if settings.review is False or open_work(plan, settings.spec):
        return None
    state = plan.state()
    base, rounds = state.get("base"), int(state.get("review_rounds") or 0)
    if not base or state.get("spec") != settings.spec or rounds >= MAX_ROUNDS:
        return None
    return Due(str(base), rounds)


def start_fields(plan: PlanReader, spec: str, head: str | None) -> dict[str, object]:
    """What a construct run starting at `head` records of its base: nothing while the spec's run
    goes on (an unfinished run of the same spec is resumed), else `head` and no round yet."""
    state = plan.state()
    if state.get("base") and state.get("spec") == spec and state.get("stage") != "COMPLETE":
        return {}
    return {"base": head, "review_rounds": 0}


def review_base(repo: Repo, ref: str | None) -> str:
    """The commit `ralph review` reads the change since: HEAD's merge base with `ref`, or without
    one with the default branch: the one origin's HEAD names, else a local main or master. Not
    the branch's upstream: a pushed branch's upstream is its own copy, whose merge base with it
    leaves out every pushed commit of the change."""
    if ref is not None and ref.startswith("-"):  # git would read it as an option
        raise InvalidInput(f"--base {ref}: not a commit")
    ref = ref or _default_branch(repo)
    if ref is None:
        raise InvalidInput("no default branch to review against (origin/HEAD, main, master): give --base REF")
    code, out, _ = repo.attempt("merge-base", "HEAD", ref)
    if code != 0:
        raise InvalidInput(f"--base {ref}: not a commit, or no history in common with HEAD")
    base = out.strip()
    if base == repo.head():
        raise InvalidInput(f"nothing to review: HEAD is where {ref} is (give --base REF, an earlier commit)")
    return base


def _default_branch(repo: Repo) -> str | None:
    code, out, _ = repo.attempt("symbolic-ref", "-q", "refs/remotes/origin/HEAD")
    if code == 0 and out.strip():
        return out.strip()
    for name in ("main", "master"):
        if repo.attempt("rev-parse", "--verify", "-q", f"refs/heads/{name}")[0] == 0:
            return name
    return None


def changed_since(repo: Repo, base: str, head: str = "HEAD") -> list[str]:
    """The files the change since `base` touched, plan.jsonl aside (empty: nothing to review)."""
    # The base comes from the plan, which a hand or a remote may have written: never an option.
    listed = repo.paths("diff", "--name-only", "-z", "--end-of-options", f"{base}...{head}", "--")
    return [path for path in listed if path != PLAN_FILE]


def nothing_to_review(plan: PlanReader, settings: Settings, repo: Repo, heads: tuple[str, ...]) -> bool:
    """No review round is due, or the change since its base is empty in each of `heads` (this
    work tree's, and the shared branch's as last fetched): a runner started after the spec ended
    COMPLETE then claims no review of nothing (a push, and another to give the claim back)."""
    found = due(plan, settings)
    if found is None:
        return True
    try:
        return not any(changed_since(repo, found.base, head) for head in heads)
    except GitError:  # a base git does not know here: the review stage says what is wrong
        return False


def aspects_at(repo: Repo, rev: str, settings: Settings) -> tuple[list[Aspect], list[str]]:
    """The aspects configured, their texts as commit `rev` has them (never a work tree's)."""
    return review_aspects.chosen(
        settings.review,
        lambda: repo.paths("ls-tree", "-r", "-z", "--name-only", rev, "--", REVIEW_DIR),
        lambda path: repo.objects.file_at(rev, path),
    )


def values(aspect: Aspect, round: Due, max_new_items: int) -> dict[str, object]:
    return {
        "aspect": aspect.name,
        "aspect_text": aspect.text.rstrip() + "\n",
        "base": round.base,
        "critical": CRITICAL_ONLY if round.critical_only else "",
        "max_new_items": max_new_items,
    }


def jobs(plan: PlanReader | None, settings: Settings, root: Path) -> list[Job]:
    """The aspects' runs the plan calls for (--dry-run shows them; their texts as HEAD has them)."""
    found = due(plan, settings) if plan is not None else None
    repo = Repo(root)
    if found is None or not changed_since(repo, found.base):
        return []
    chosen, _ = aspects_at(repo, "HEAD", settings)
    return [
        Job(Stage.REVIEW, aspect.name, aspect.name, values(aspect, found, settings.max_new_items))
        for aspect in chosen
    ]


@dataclass
class AspectRun:
    """One aspect's run in its own checkout, and what came of it."""

    aspect: str
    result: AgentResult
    base: Plan  # its copy of the plan as it started
    theirs: Plan | None = None  # its copy after the run; None: nothing of it is taken
    did: list[str] = field(default_factory=list)  # what it did that REVIEW may not

    @property
    def end(self) -> AspectEnd:
        stopped = kill_reason_of(self.result.run.stop_reason) is not None
        failed = not self.result.ok or bool(self.did) or self.theirs is None
        return aspect_end(stopped, failed)


class ReviewStage:
    def __init__(self, ws: Workspace, plan: Plan | None = None):
        """`plan`: the plan as the caller just read it (read here when not given)."""
        self.ws, self.read_first = ws, plan
        self.plan, self.agents, self.tree = ws.plan, ws.agents, ws.tree  # the parts it acts through
        self.outcome: ReviewOutcome | None = None
        self.reviewed: list[AspectReview] = []  # each aspect's run, for the report

    def run(self, iteration: int) -> StageReport:
        report = StageReport(Stage.REVIEW)
        plan = self.read_first or self.plan.read()
        found = due(plan, self.ws.settings)
        if found is None or not changed_since(self.tree.repo, found.base):
            self.outcome = decide(ReviewFacts(due=False))
            return report
        chosen = self._aspects()
        if not chosen:
            self.outcome = decide(ReviewFacts(due=False))
            return report
        report.items = len(chosen)
        span = self.ws.journal.span("stage", stage=str(Stage.REVIEW), iteration=iteration, items=len(chosen))
        self.plan.set_state(plan, stage=str(Stage.REVIEW))
        before, old = self.tree.snapshot(), self.plan.read()
        runs = self._fork_join(chosen, found, iteration, old)
        # The reviewers had no business in this work tree: whatever changed here is undone, and
        # none of their findings is taken.
        if self.agents.enforce(Stage.REVIEW, set(), before, old, [run.result for run in runs]):
            for run in runs:
                run.theirs, run.did = None, run.did or ["changed the loop's work tree"]
        added = self._take(runs, found, report)
        self.outcome = decide(
            ReviewFacts(finished=sum(r.end is AspectEnd.FINISHED for r in runs), added=added)
        )
        span.end(outcome=self.outcome.value, round=found.round + 1)
        return report

    def _aspects(self) -> list[Aspect]:
        """The aspects as the run's first commit has them (HEAD when there is none)."""
        repo = self.tree.repo
        judged = self.agents.judged()
        rev = judged.rev if judged is not None else "HEAD"
        chosen, problems = aspects_at(repo, rev, self.ws.settings)
        for problem in problems:
            self.ws.console.event(f"REVIEW: {problem}; not run")
            self.ws.journal.event("review_aspect_unknown", problem=problem)
        return chosen

    def _fork_join(self, chosen: list[Aspect], found: Due, iteration: int, plan: Plan) -> list[AspectRun]:
        """Every aspect's run, up to --parallel at once, each in a checkout lent to it alone."""
        most = self.ws.settings.max_new_items
        with self.tree.verifier_checkouts() as checkouts:
            pool = ThreadPoolExecutor(max_workers=self.ws.settings.parallel)
            try:
                runs = list(
                    pool.map(
                        lambda aspect: self._review(
                            aspect, values(aspect, found, most), iteration, plan, checkouts
                        ),
                        chosen,
                    )
                )
            except BaseException:  # Ctrl-C or a stop signal: stop every reviewer, not only the waited one
                with deferred_signals():
                    pool.shutdown(wait=False, cancel_futures=True)
                    self.agents.stop_all()
                    pool.shutdown(wait=True)
                raise
            pool.shutdown(wait=True)
        return runs

    def _review(
        self, aspect: Aspect, given: dict[str, object], iteration: int, plan: Plan, checkouts: Checkouts
    ) -> AspectRun:
        with checkouts.lend() as loan:
            checkout = loan.repo
            base = reader.read_plan(checkout.root)
            start = loan.start or snapshot(checkout)
            marks = state_of(start)
            result = self.agents.run_agent(
                Stage.REVIEW, iteration, aspect.name, given, cwd=checkout.root, plan=plan, state=marks
            )
            run = AspectRun(aspect.name, result, base)
            gone = replaced_or_removed(checkout)
            if gone:
                run.did = [gone]
                return run
            try:
                run.theirs = Plan(
                    reader.load_checked(checkout.root, (checkout.root / PLAN_FILE).read_bytes())
                )
            except (FileNotFoundError, PlanInvalid):
                run.did = ["left a plan.jsonl that does not load"]
                return run
            run.did = violations(Stage.REVIEW, set(), start, snapshot(checkout), base, run.theirs)
            loan.unchanged = not run.did
            return run

    def _take(self, runs: list[AspectRun], found_round: Due, report: StageReport) -> int:
        """Into the plan: each finished aspect's findings, marked with it and bounded; the round
        counted once any aspect finished. Returns how many items the plan took."""
        taken = 0
        with self.plan.change() as change:  # goes in with this stage's commit
            for run in runs:
                kept, cut_issue = self._take_one(change.plan, run, report)
                found = (*kept, *([cut_issue] if cut_issue else []))
                taken += len(found)
                self.reviewed.append(AspectReview(run.aspect, found_round.round + 1, run.end.value, found))
            finished = any(run.end is AspectEnd.FINISHED for run in runs)
            if finished:  # a round that finds nothing ends the review: no round follows it
                change.plan.update_state(review_rounds=found_round.round + 1 if taken else MAX_ROUNDS)
        said = f"round {found_round.round + 1}: " + (f"{taken} found" if taken else "nothing found")
        if finished:
            if taken:
                self.plan.prioritize(commit=False)  # goes in with the commit below
            commit = self.tree.commit(f"ralph(review): {self.ws.settings.spec}: {said}")
            report.commits += [commit] if commit else []
        self.ws.console.event(f"REVIEW {self.ws.settings.spec}: {said}")
        return taken

    def _take_one(self, plan: Plan, run: AspectRun, report: StageReport) -> tuple[list[str], str | None]:
        end, log = run.end, str(run.result.log_path)
        if end is not AspectEnd.FINISHED or run.theirs is None:
            why = "; ".join(run.did) or run.result.describe()
            line = f"REVIEW {run.aspect} {end.value}: {why}; nothing of it kept; log {log}"
            (report.stopped if end is AspectEnd.STOPPED else report.failed).append(line)
            self.ws.journal.event("review_aspect", aspect=run.aspect, end=end.value, why=why, log=log)
            self.ws.console.event(line)
            return [], None
        found, alike = _not_found_before(plan, new_work.new_items(run.base, run.theirs))
        kept = _add_found(plan, run.aspect, found)
        bounded = new_work.bound(plan, kept, self.ws.settings.max_new_items, f"the {run.aspect} review")
        self.ws.journal.event(
            "review_aspect",
            aspect=run.aspect,
            end=end.value,
            added=bounded.kept or None,
            duplicates=alike or None,
            cut=[cut.record["id"] for cut in bounded.cut] or None,
            cut_issue=bounded.issue,
            log=log,
        )
        self.ws.console.event(f"REVIEW {run.aspect}: {bounded.summary() or 'nothing found'}")
        return bounded.kept, bounded.issue


def _not_found_before(plan: Plan, records: list[Record]) -> tuple[list[Record], list[str]]:
    """The aspect's findings but the tasks named like an open task (another aspect's finding, as
    often as not): those are refused here, quietly, rather than put to a person as a cut; their
    ids are returned beside the rest."""
    names = {new_work.normalized(task["name"]) for task in plan.tasks()}
    found, alike = [], []
    for record in records:
        if record["t"] == "task" and new_work.normalized(record.get("name")) in names:
            alike.append(record["id"])
        else:
            found.append(record)
    return found, alike


def _add_found(plan: Plan, aspect: str, records: list[Record]) -> list[str]:
    """The aspect's new tasks and issues appended, each marked with it; an id another aspect
    drew first is dropped. Returns their ids."""
    present, kept = plan.taken_ids(), []
    for record in records:
        if record["id"] in present:
            continue
        plan.doc.append({**record, "aspect": aspect})
        present.add(record["id"])
        kept.append(record["id"])
    return kept
