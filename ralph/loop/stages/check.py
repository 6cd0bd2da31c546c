"""The spec check: once every task of the spec is accepted, and before the run ends COMPLETE, one
agent run reads the spec and the code and adds a task (or an issue) for each requirement that is
not met. Nothing added: the spec is met, and the run ends COMPLETE. Work added: the loop goes on.

ralph bounds what the run added (ralph.plan.new_work: at most max_new_items, no duplicate of an
open task) and records on the spec's record what a check that found nothing read: HEAD and the
spec's SHA-256. A later run with the spec as it was and no file but plan.jsonl changed since ends
COMPLETE without another agent run. A check stopped by its time limit or a full context keeps
nothing of its run; the spec record counts it (check_kills) and the run ends STUCK for a person
(more --timeout, or a smaller spec), as a stopped PLAN does.

What a check added beyond max_new_items goes into an issue that awaits the next check
(records.awaits_recheck), not a person: once the rest is accepted the check runs again, is told
what was cut, adds what is still missing (bounded again), and resolves that issue."""

from __future__ import annotations

from pathlib import Path

from ralph.loop.runs.prompts import data_block
from ralph.loop.stages.check_apply import CheckRun, Read, apply
from ralph.loop.stages.check_outcome import CheckFacts, CheckOutcome, decide
from ralph.loop.stages.job import Job
from ralph.loop.stages.workspace import StageReport, Workspace
from ralph.plan.plan import Plan
from ralph.plan.reading import PlanReader, SpecView
from ralph.plan.records import CHECK_KILL_PREFIX, Stage, awaits_recheck
from ralph.store.git import Repo
from ralph.text import plural
from ralph.usecases.settings import Settings
from ralph.usecases.spec_checks import met_as_recorded, spec_digest

LISTED_ACCEPTED = 100  # accepted tasks named in the prompt; the agent reads the rest from the code


def prompt_values(plan: PlanReader, view: SpecView, max_new_items: int) -> dict[str, object]:
    """What the check's prompt says besides the spec's path: the accepted tasks, earlier stops."""
    served = zip(plan.doc.positions("accept"), plan.doc.values_of("accept", "spec"), strict=True)
    of_spec = [index for index, of in served if of in (None, view.spec)]  # read off the raw lines
    shown = [  # only these lines are made, not one per finished task of a long history
        f"- {line.record['id']} {line.record.get('name') or ''}".rstrip()
        for line in map(plan.doc.record_line, of_spec[-LISTED_ACCEPTED:])
    ]
    if len(of_spec) > len(shown):
        shown.insert(0, f"(the last {len(shown)} of {len(of_spec)})")
    accepted = data_block("the accepted tasks of the spec", "\n".join(shown)) + "\n" if shown else ""
    previous = ""
    reason, kills, log = (
        view.record.get(f"{CHECK_KILL_PREFIX}{key}") for key in ("kill_reason", "kills", "kill_log")
    )
    if reason:
        kills = int(kills or 1)
        were = "was" if kills == 1 else "were"
        said = f"{plural(kills, 'earlier spec check')} {were} stopped, the last one by {reason} (log: {log})."
        previous = f"{data_block('earlier spec checks', said)}\nKeep test runs short and focused.\n"
    if view.recheck:
        what = "what an earlier spec check found beyond what ralph takes from one run"
        previous += f"{data_block(what, chr(10).join(view.recheck))}\nAdd what of it is still missing.\n"
    return {"accepted": accepted, "previous": previous, "max_new_items": max_new_items}


def open_work(plan: PlanReader, spec: str) -> bool:
    """Whether the spec has work before its check: a task, or an issue that is not the cut of an
    earlier check awaiting this one (records.awaits_recheck)."""
    return bool(plan.task_views(spec)) or any(not awaits_recheck(issue) for issue in plan.issues(spec))


def jobs(plan: PlanReader, settings: Settings, root: Path) -> list[Job]:
    """The spec check a plan whose spec has every task accepted calls for: one, unless a check
    found this spec and code met already (the run and --dry-run both ask this)."""
    spec = settings.spec
    if open_work(plan, spec) or reviewed_after_check(plan, spec):
        return []
    view = plan.spec_view(spec)
    if met_as_recorded(Repo(root), view.record, spec_digest(root, spec)):
        return []
    return [Job(Stage.CHECK, None, spec, prompt_values(plan, view, settings.max_new_items))]


def reviewed_after_check(plan: PlanReader, spec: str) -> bool:
    """Whether a review round ran after a spec check that found nothing missing: what the round
    found, once built, is reviewed again (ralph.loop.stages.review), not checked again. Not after
    `ralph review` alone: that spec was never checked."""
    line = plan.spec_line(spec)
    return bool(plan.state().get("review_rounds")) and bool(line and line.record.get("checked_commit"))


class CheckStage:
    def __init__(self, ws: Workspace, plan: Plan | None = None):
        """`plan`: the plan as the caller just read it (read here when not given)."""
        self.ws, self.read_first = ws, plan
        self.plan, self.agents, self.tree = ws.plan, ws.agents, ws.tree  # the parts it acts through
        self.outcome: CheckOutcome | None = None

    def run(self, iteration: int) -> StageReport:
        return self._check(self.ws.settings.spec, iteration)

    def _check(self, spec: str, iteration: int) -> StageReport:
        """The spec's check (none when one found this spec and code met already): what it came
        to, decided, then applied (check_apply). `self.outcome` is set once its writes are done."""
        report = StageReport(Stage.CHECK)
        plan = self.read_first or self.plan.read()
        read = Read(self.tree.repo.head(), spec_digest(self.tree.root, spec))
        view = plan.spec_view(spec)  # read once: for whether to run, and for the prompt
        if met_as_recorded(self.tree.repo, view.record, read.digest):  # no run
            self.ws.journal.event("check_skipped", item=spec, head=read.head)
            self.ws.console.event(f"CHECK {spec}: met already (nothing but plan.jsonl changed since)")
            self.outcome = decide(CheckFacts(already_met=True))
            return report
        run = self._run(view, plan, iteration, report)
        self.outcome = apply(self.ws, spec, run, read, report)
        return report

    def _run(self, view: SpecView, plan: Plan, iteration: int, report: StageReport) -> CheckRun:
        """The check's agent run, and the plan as it was before it."""
        report.items = 1
        span = self.ws.journal.span("stage", stage=str(Stage.CHECK), iteration=iteration, items=1)
        before = self.plan.raw()
        values = prompt_values(plan, view, self.ws.settings.max_new_items)
        result = self.agents.run_agent(Stage.CHECK, iteration, None, values, plan=plan)
        self.agents.check_plan(result)
        return CheckRun(result, before, result.with_persons or plan, span)  # a person's: not its
