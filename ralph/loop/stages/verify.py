"""VERIFY: one agent run per done task, up to --parallel at once (fork/join); each accepts or
rejects its task. A task given no verdict stays done for the next VERIFY. Then prioritize.

Each verifier works in a checkout of its own: a detached worktree of HEAD with its own copy of
plan.jsonl, lent to one verifier at a time, cleaned between two and removed when the fork/join
ends (ralph.loop.tree.checkouts). Verifiers running tests at once never share files, and what each did
is known: any change to its checkout is a permission violation (VERIFY changes no code),
and only its verdict on its own task and the tasks and issues it added are taken into the plan.
A verifier stopped by its time limit or a full context gives no verdict; the task records why,
and after max_attempts such runs it is set aside for DECOMPOSE instead of being verified again."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralph.errors import PlanInvalid
from ralph.loop.process.signals import deferred_signals
from ralph.loop.runs.agent_process import AgentResult
from ralph.loop.runs.permissions import Snapshot, violations
from ralph.loop.runs.prompts import data_block, one_line, task_details
from ralph.loop.stages.agent_errors import state_of
from ralph.loop.stages.job import Job
from ralph.loop.stages.verify_outcome import Exit, RunFacts, VerifyOutcome, decide
from ralph.loop.stages.workspace import StageReport, Workspace
from ralph.loop.tree.checkouts import Checkouts, replaced_or_removed, snapshot
from ralph.loop.tree.plan_access import PLAN_FILE
from ralph.plan.document import Record
from ralph.plan.new_work import new_items
from ralph.plan.plan import Plan
from ralph.plan.records import KillReason, Stage, TaskView, kill_reason_of
from ralph.plan.run_records import VerifyRecord
from ralph.plan.verify_changes import Given, given_by
from ralph.store import reader
from ralph.store.git import Repo
from ralph.text import plural
from ralph.usecases.settings import Settings


@dataclass
class Verification:
    """One verifier's run in its own checkout, and what came of it."""

    task: TaskView
    result: AgentResult
    checkout: str  # where it ran (removed since)
    given: Given | None = None  # what its copy of the plan gave, read as the run ended; None: none taken
    did: list[str] = field(default_factory=list)  # what it did that VERIFY may not
    killed: KillReason | None = None


class VerifyStage:
    def __init__(self, ws: Workspace):
        self.ws = ws
        self.plan, self.agents, self.tree = ws.plan, ws.agents, ws.tree  # the parts it acts through

    def run(self, iteration: int) -> StageReport:
        report = StageReport(Stage.VERIFY)
        for batch in self.ws.coordinator.batches(self.ws.settings.parallel):
            report.absorb(self._verify(iteration, batch))
        return report

    def _verify(self, iteration: int, claimed: list[str] | None) -> StageReport:
        """One fork/join of verifiers: every done task, or (with a remote) the claimed ones."""
        plan = self.plan.read()
        found = [job for job in jobs(plan, self.ws.settings) if claimed is None or job.item in claimed]
        done = [TaskView(job.record) for job in found]
        report = StageReport(Stage.VERIFY, items=len(done))
        if not done:
            return report
        span = self.ws.journal.span("stage", stage="VERIFY", iteration=iteration, items=len(done))
        self.plan.set_state(plan, stage=str(Stage.VERIFY))
        before, old = self.tree.snapshot(), self.plan.read()  # the plan as it is once the state is set
        with self.tree.verifier_checkouts() as checkouts:
            runs = self._fork_join(found, iteration, old, checkouts)
        # The verifiers had no business in this work tree or its plan.jsonl at all (their verdicts
        # go to their own copies): whatever changed here is undone, and none of theirs is taken.
        if self.agents.enforce(Stage.VERIFY, set(), before, old, [run.result for run in runs]):
            for run in runs:
                run.given = None
        taken_on = self.plan.read()  # with what a person changed meanwhile, which is theirs
        self._take(runs, report)
        verdicts = self._verdicts(done)
        accepted = [task for task in done if task.id in verdicts["accepted"]]
        report.accepted = [_accepted_line(task) for task in accepted]
        report.accepted_tasks = [_accepted(task) for task in accepted]
        # The subject names what the verifiers added (a cut issue included), not only the verdicts.
        verdicts["added"] = [record["id"] for record in new_items(taken_on, self.plan.read())]
        summary = "; ".join(f"{kind} {', '.join(ids)}" for kind, ids in verdicts.items() if ids)
        commit = self.tree.commit(f"ralph(verify): {summary}")
        report.commits += [commit] if commit else []
        self.plan.prioritize()
        span.end(**{kind.replace(" ", "_"): ids for kind, ids in verdicts.items() if ids})
        return report

    def _fork_join(
        self, found: list[Job], iteration: int, plan: Plan, checkouts: Checkouts
    ) -> list[Verification]:
        """Every verifier run, up to --parallel at once, each in a checkout lent to it alone."""
        pool = ThreadPoolExecutor(max_workers=self.ws.settings.parallel)
        try:
            runs = list(pool.map(lambda job: self._verify_one(job, iteration, plan, checkouts), found))
        except BaseException:  # Ctrl-C or a stop signal: stop every verifier, not only the waited one
            with deferred_signals():
                # Stopped before the threads are joined (`with pool` would wait for every verifier
                # to finish); the queued ones never start. Each running one's checkout is removed.
                pool.shutdown(wait=False, cancel_futures=True)
                self.agents.stop_all()
                pool.shutdown(wait=True)
            raise
        pool.shutdown(wait=True)
        return runs

    def _verify_one(self, job: Job, iteration: int, plan: Plan, checkouts: Checkouts) -> Verification:
        task = TaskView(job.record)
        with checkouts.lend() as loan:
            checkout = loan.repo
            base = reader.read_plan(checkout.root)
            start = loan.start or snapshot(checkout)
            result = self.agents.run_agent(
                Stage.VERIFY,
                iteration,
                task.id,
                job.values,
                cwd=checkout.root,
                plan=plan,
                state=state_of(start),
            )
            run = Verification(task, result, str(checkout.root))
            self._inspect(run, checkout, start, base)
            loan.unchanged = not run.did  # then it is cleaned and lent to the next verifier
            return run

    def _inspect(self, run: Verification, checkout: Repo, start: Snapshot, base: Plan) -> None:
        """What the verifier left in its checkout: what it gave in its copy of the plan (which
        started as `base`), read once here; any change to the code or to HEAD is a violation,
        and the changes are kept as a patch beside its log."""
        gone = replaced_or_removed(checkout)
        if gone:  # no verdict, and nothing is read or run there; the run goes on
            run.did, run.killed = [gone], kill_reason_of(run.result.run.stop_reason)
            return self._violated(run)
        theirs = None
        try:
            theirs = Plan(reader.load_checked(checkout.root, (checkout.root / PLAN_FILE).read_bytes()))
        except (FileNotFoundError, PlanInvalid) as exc:
            problem = "deleted plan.jsonl" if isinstance(exc, FileNotFoundError) else str(exc)
            self.ws.journal.event("verifier_plan_invalid", item=run.task.id, problem=problem)
        end = snapshot(checkout)
        run.did = violations(Stage.VERIFY, {run.task.id}, start, end, base, theirs or base)
        run.killed = kill_reason_of(run.result.run.stop_reason)
        if not run.did:
            if theirs is not None and not run.killed:  # a run stopped half way gives no verdict
                run.given = given_by(run.task.id, base, theirs)
            return
        changed = set(end.dirty)
        if start.head and end.head != start.head:  # its own commits are changes too
            changed |= set(checkout.paths("diff", "--name-only", "-z", start.head))
        log = run.result.log_path
        if changed - {PLAN_FILE}:
            patch = self.tree.root / log.with_suffix(".patch")
            checkout.changes.save_patch(changed - {PLAN_FILE}, patch, base=start.head or "HEAD")
        self._violated(run)

    def _violated(self, run: Verification) -> None:
        """The verifier did what VERIFY may not (run.did): nothing of its run is taken."""
        run.given = None
        log = run.result.log_path
        run.result.violation = "; ".join(run.did)
        self.ws.journal.event(
            "permission_violation",
            stage=str(Stage.VERIFY),
            items=[run.task.id],
            did=run.did,
            log=str(log),
            checkout=run.checkout,
        )
        did = run.result.violation
        self.ws.console.event(f"VERIFY {run.task.id}: permission violation, nothing kept: {did}")

    def _take(self, runs: list[Verification], report: StageReport) -> None:
        """Into the plan: what each verifier's run came to, decided from what it did, then applied."""
        with self.plan.change() as change:  # goes in with this stage's commit
            # Read once for every run: a person may have judged or removed a task meanwhile (no
            # verifier's verdict changes another task's state).
            done = {task.id for task in change.plan.task_views() if task.done}
            for run in runs:
                facts = self._facts(change.plan, run, done)
                self._apply(change.plan, run, decide(facts), report)

    def _facts(self, plan: Plan, run: Verification, done: set[str]) -> RunFacts:
        """What the run did, asked in decide's order (`done`: the tasks still done in the plan as
        the runs before it left it); what its verifier gave was read as the run ended (_inspect),
        its task's earlier stops as the stage found it (only VERIFY counts them)."""
        if run.killed:
            stops = run.task.verify_kills + 1  # with this one
            return RunFacts(killed=run.killed, stops=stops, max_stops=self.ws.settings.max_attempts)
        if run.result.violation:  # in its checkout (_violated) or in the work tree (enforce)
            return RunFacts(violation=True)
        if run.given is None:
            return RunFacts(plan_read=False)
        verdict = run.given.verdict
        return RunFacts(verdict=verdict, overtaken=verdict is not None and run.task.id not in done)

    def _apply(self, plan: Plan, run: Verification, outcome: VerifyOutcome, report: StageReport) -> None:
        """What the run came to, done in this order: its one write to the plan (`written`), the
        build's changes kept beside its log when a stop sets the task aside, then the journal,
        the console and the report told."""
        written = self._written(run, outcome)
        taken = plan.record_verify(run.task.id, written) if written else {}
        if outcome.exit is Exit.SET_ASIDE:  # rather than verified blindly again
            self.tree.save_build_patch(run.task, run.result.log_path)
        if outcome.kill is not None:
            self._tell_stop(run, outcome, report)
        else:
            self._tell_verdict(run, outcome, taken, report)

    def _written(self, run: Verification, outcome: VerifyOutcome) -> VerifyRecord | None:
        """The run's one write, as a value: its stop (at max_attempts the task set aside for
        DECOMPOSE), or what its verifier gave (when taken); None: nothing."""
        kill, log = outcome.kill, str(run.result.log_path)
        if kill is not None:
            why = f"VERIFY was stopped {outcome.stops} times ({kill}); split it into tasks one run can check"
            return VerifyRecord(kill, log, set_aside=why if outcome.exit is Exit.SET_ASIDE else None)
        if not outcome.take or run.given is None:
            return None
        given = run.given  # at most max_new_items of what it added: the rest go into one issue (new_work)
        return VerifyRecord(
            verdict=given.verdict,
            reason=given.reason,
            added=given.added,
            max_new=self.ws.settings.max_new_items,
        )

    def _tell_verdict(
        self, run: Verification, outcome: VerifyOutcome, taken: Record, report: StageReport
    ) -> None:
        """VERIFY's verdict where the person looks: the console, (a rejection, with its reason)
        the final report, and the journal."""
        exit_, task_id, reason = outcome.exit, run.task.id, str(taken.get("reason") or "")
        if exit_ is Exit.OVERTAKEN:
            why = "a person judged or removed the task meanwhile; theirs stands"
            self.ws.console.verdict("VERIFY", task_id, "verdict not taken", why)
        elif exit_ is Exit.VIOLATION:
            self.ws.console.verdict("VERIFY", task_id, "no verdict", "its run did what VERIFY may not")
        elif exit_ is Exit.NO_VERDICT:
            self.ws.console.verdict("VERIFY", task_id, "no verdict", "verified again next time")
        else:
            self.ws.console.verdict("VERIFY", task_id, str(exit_), reason)
        if exit_ is Exit.REJECTED:
            first = next((line.strip() for line in reason.splitlines() if line.strip()), "no reason given")
            report.failed.append(f"{task_id} rejected by VERIFY: {first[:300]}")
        self.ws.journal.event(
            "verdict",
            item=task_id,
            verdict=taken.get("verdict"),
            reason=taken.get("reason"),
            tasks=taken.get("tasks") or None,
            issues=taken.get("issues") or None,
            dropped=taken.get("dropped"),
            violation=bool(run.result.violation) or None,
            checkout=run.checkout,
            log=str(run.result.log_path),
        )

    def _tell_stop(self, run: Verification, outcome: VerifyOutcome, report: StageReport) -> None:
        """A stopped verifier where the person looks: the journal, the report and the console."""
        task_id, reason, log, stops = run.task.id, outcome.kill, str(run.result.log_path), outcome.stops
        set_aside = outcome.exit is Exit.SET_ASIDE
        self.ws.journal.event(
            "verify_stopped", item=task_id, kill_reason=reason, stops=stops, set_aside=set_aside, log=log
        )
        if set_aside:
            self.ws.journal.event("task_killed", item=task_id, kill_reason=reason, log=log, stage="VERIFY")
        limit = self.ws.settings.max_attempts
        then = "set aside for DECOMPOSE" if set_aside else f"verified again next time ({stops} of {limit})"
        report.stopped.append(f"{task_id} VERIFY stopped ({reason}), {then}; log {log}")
        self.ws.console.event(f"VERIFY {task_id} stopped ({reason}); {then}")

    def _verdicts(self, done: list[TaskView]) -> dict[str, list[str]]:
        plan = self.plan.read()
        accepted, current = plan.accepted(), {task.id: task for task in plan.task_views()}
        verdicts: dict[str, list[str]] = {"accepted": [], "rejected": [], "no verdict": []}
        for task in done:
            if task.id in accepted:
                verdicts["accepted"].append(task.id)
            elif task.id in current and current[task.id].done:
                verdicts["no verdict"].append(task.id)
                self.ws.journal.event("no_verdict", item=task.id)
            else:
                verdicts["rejected"].append(task.id)
        return verdicts


def jobs(plan: Plan, settings: Settings, root: Path | None = None) -> list[Job]:
    """The VERIFY runs a plan calls for: one per task of the spec that is done (built, through the
    gate) and not yet accepted. (`root`: every stage's jobs take the same arguments,
    ralph.loop.stages.modules.)"""
    names = {task["id"]: task["name"] for task in plan.tasks()}
    return [
        Job(Stage.VERIFY, task.id, task.name, _values(task, names, settings.max_attempts), record=task.record)
        for task in plan.task_views(settings.spec)
        if task.done
    ]


def _values(task: TaskView, names: dict[str, str], max_attempts: int) -> dict[str, object]:
    return {
        "task_id": task.id,
        "task_name": one_line(task.name),
        "task_type": task.record.get("type") or "",
        "task_details": task_details(task.record, names) + _resubmission(task.record),
        "task_commit": task.commit or "HEAD",
        "previous": _previous_stop(task, max_attempts),
    }


def _previous_stop(task: TaskView, limit: int) -> str:
    """What the verifier is told of earlier VERIFY runs of the task that were stopped."""
    if not task.verify_kill_reason:
        return ""
    said = (
        f"{plural(task.verify_kills, 'earlier VERIFY run')} of this task"
        f" {'was' if task.verify_kills == 1 else 'were'} stopped, the last one by"
        f" {task.verify_kill_reason} (log: {task.verify_kill_log}); at {limit} the task is split instead."
    )
    advice = "Keep test runs short and focused, and give a verdict."
    return f"{data_block('earlier VERIFY runs', said)}\n{advice}\n"


def _resubmission(task: Record) -> str:
    """A task resubmitted unchanged after a rejection: the builder's argument, for this verifier,
    which judges it afresh."""
    argument = task.get("resubmitted")
    if not argument:
        return ""
    return (
        "\nVERIFY rejected this task (why: above); its builder resubmitted the same work unchanged,"
        " arguing that it already meets the criteria. Judge the work itself afresh, with the argument"
        " and the rejection both in mind:\n\n" + data_block("the builder's argument", argument) + "\n"
    )


def _accepted_line(task: TaskView) -> str:
    """The report's line of an accepted task: its id, name, and type (what its build was held to)."""
    kind = task.record.get("type")
    return f"{task.id} {task.name}" + (f" [{kind}]" if kind else "")


def _accepted(task: TaskView) -> dict[str, Any]:
    """What the run keeps of an accepted task: its id and name, and the draft it was offered with
    the parent it came from (a decomposed parent's draft goes once no task is offered it); its
    scope and files, for the report's coverage."""
    kept = {"id": task.id, "name": task.name}
    kept_keys = ("parent", "draft", "scope", "files")
    return kept | {key: task.record[key] for key in kept_keys if task.record.get(key)}
