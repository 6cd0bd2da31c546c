"""BUILD: one fresh agent run per buildable task, then ralph's own gate. A task stays done only
when the agent marked it done and the gate passed; a failed attempt is retried at once with the
failure in its prompt, up to max_attempts (max_rebuilds once VERIFY rejected it); a timeout, a
context kill, too many failures or the same failure twice in a row set it aside for DECOMPOSE. A
failure that another build or split would only repeat goes to a person instead, as one question
with both texts: a subtask failing (or rejected) as its ancestor did, for its whole family, which
waits with it (ralph.plan.families); the same rejection by VERIFY twice in a row.
A rejected task's builder may resubmit it unchanged with its argument (`task done --unchanged`).
Context compaction continues the task in a fresh run."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ralph.loop.runs.agent_process import AgentResult, ralph_command
from ralph.loop.runs.prompts import data_block, excerpt, one_line, task_details
from ralph.loop.stages.build_apply import (
    Attempt,
    apply,
    failed,
    now,
    record,
    record_failure,
    set_aside,
    tell_failure,
)
from ralph.loop.stages.build_facts import BuildFacts, buildable_now
from ralph.loop.stages.build_outcome import (
    AttemptFacts,
    Failure,
    decide,
)
from ralph.loop.stages.build_parallel import ParallelBuilds
from ralph.loop.stages.job import Job
from ralph.loop.stages.workspace import StageReport, Workspace
from ralph.loop.tree.work_tree import CheckoutBehind
from ralph.plan.attempts import BuildHistory, build_history
from ralph.plan.document import Record
from ralph.plan.families import asks_a_person, family_of, members_to_hold
from ralph.plan.plan import Plan
from ralph.plan.records import KillReason, Recorded, Stage, TaskView, Verdict
from ralph.plan.run_records import AttemptRecord
from ralph.secrets import redact
from ralph.text import plural
from ralph.usecases.settings import Settings


class BuildStage:
    def __init__(self, ws: Workspace):
        self.ws = ws
        self.plan, self.agents, self.tree = ws.plan, ws.agents, ws.tree  # the parts it acts through
        self.facts = BuildFacts(ws)  # what an attempt's run did

    def in_worktree(self, ws: Workspace) -> BuildStage:
        """This stage acting in a build's worktree (ws: Workspace.for_worktree's)."""
        return BuildStage(ws)

    def run(self, iteration: int) -> StageReport:
        span = self.ws.journal.span("stage", stage="BUILD", iteration=iteration)
        report = StageReport(Stage.BUILD)
        coordinator, max_attempts = self.ws.coordinator, self.ws.settings.max_attempts
        while batch := coordinator.next_items(lambda: [task["id"] for task in self.ready(set(), report)]):
            if self.ws.settings.parallel > 1 and len(batch) > 1:
                ParallelBuilds(self, iteration, report).run()
            else:
                self.build_task(batch[0], iteration, report)
            for task_id, conflicts in coordinator.finished(batch, max_attempts).items():
                self._conflicted(task_id, conflicts)
        span.end(tasks=report.items)
        return report

    def _conflicted(self, task_id: str, files: list[str]) -> None:
        """Another runner published changes to the same files first: the build was undone there,
        and its task goes back to be built again."""
        self.ws.journal.event("build_failed", item=task_id, verdict=Verdict.MERGE_CONFLICT, files=files)
        self.ws.console.event(
            f"{task_id}: its build conflicts with pushed work ({', '.join(files[:5])}); built again"
        )

    def ready(self, running: set[str], report: StageReport) -> list[Record]:
        """The tasks to build next, in order, without those being built. On the way, what needs
        no build to judge (here, where every finished build is in the plan, so two builds of one
        family never ask two questions): a task another build would only fail again goes to a
        person (families.asks_a_person), the rest of a family an open question is about waits
        with it, and a task VERIFY keeps rejecting is set aside for DECOMPOSE."""
        while True:
            plan = self.plan.read()
            if self._hold_families(plan, running):
                continue
            ready = [task for task in buildable_now(plan, self.ws.settings) if task["id"] not in running]
            repeating = [task for task in ready if asks_a_person(task)]
            if repeating:
                self._ask_about_repeat(plan, repeating[0], running, report)
                continue
            rejected = [
                past
                for past in (build_history(plan, t["id"]) for t in ready)
                if self._rejected_too_often(past)
            ]
            if not rejected:
                return _waiting_last(ready, self.tree.waiting_for_code(), running)
            self._set_aside_rejected(rejected[0], report)  # VERIFY keeps rejecting it: split it

    def _hold_families(self, plan: Plan, running: set[str]) -> bool:
        """The pending tasks of a family an open question is about wait with it (those being built
        once their build is over); whether any had to."""
        for question in plan.questions(self.ws.settings.spec):
            family = question.get("family")
            waiting = members_to_hold(plan.tasks(), family, running) if family else []
            if not waiting:
                continue
            with self.plan.change(commit=True) as change:
                for member in waiting:
                    change.plan.hold_for_question(member, question["id"])
                change.message = (
                    f"ralph(build): {', '.join(waiting)} wait with family {family} for {question['id']}"
                )
            self.ws.journal.event("family_held", items=waiting, family=family, questions=question["id"])
            self.ws.console.event(
                f"{', '.join(waiting)} wait with family {family} for `ralph answer {question['id']}`"
            )
            return True
        return False

    def _ask_about_repeat(self, plan: Plan, task: Record, running: set[str], report: StageReport) -> None:
        """A person is asked about a failure another build would only repeat, with both texts: a
        family's is asked once, and its other tasks wait with it; a task of a family already asked
        about waits for that question."""
        task_id, ancestor = task["id"], task.get("repeated_from")
        family = family_of(task) if ancestor else None
        asked = next((q for q in plan.questions() if family and q.get("family") == family), None)
        with self.plan.change(commit=True) as change:
            if asked is None:
                by = (
                    "ralph (a failure that survived a split)"
                    if family
                    else "ralph (the same rejection twice)"
                )
                asked = change.plan.ask_about_repeated_failure(
                    task_id, _repeat_question(task), now(), by, family, sorted(running)
                )
                change.message = f"ralph(build): {task_id} {_repeat_words(task)}; asks {asked['id']}"
            else:
                change.plan.hold_for_question(task_id, asked["id"])
                change.message = f"ralph(build): {task_id} {_repeat_words(task)}; waits for {asked['id']}"
        self.ws.journal.event(
            "question_asked",
            item=task_id,
            questions=asked["id"],
            repeated=True,
            family=family,
            ancestor=ancestor,
        )
        said = f"{task_id} {_repeat_words(task)}"
        report.stopped.append(f"{said}; question {asked['id']} for a person")
        held = f" (family {family} waits with it)" if family else ""
        self.ws.console.event(f"{said}; it waits for `ralph answer {asked['id']}`{held}")

    def _set_aside_rejected(self, past: BuildHistory, report: StageReport) -> None:
        """Set aside for DECOMPOSE with a log of its own: what VERIFY said each time and where its
        runs' logs are, and the changes of the rejected build as a patch beside it."""
        task, reasons = past.task, list(past.reasons)
        task_id = task["id"]
        log = self.agents.rel(self.agents.new_log("rejected", task_id))
        patch = self.tree.save_build_patch(TaskView(task), log)
        (self.tree.home / log).write_text(self._rejection_record(task, reasons, patch), encoding="utf-8")
        reason = f"VERIFY rejected it {len(reasons)} times; split it into smaller tasks"
        aside = AttemptRecord(
            Recorded.SET_ASIDE, text=reason, kill_reason=KillReason.DOOM_LOOP, kill_log=str(log)
        )
        record(self.ws, task_id, aside, lambda _: f"ralph(build): {task_id} set aside (rejected too often)")
        self.ws.journal.event(
            "task_killed", item=task_id, kill_reason=KillReason.DOOM_LOOP, rejected=True, log=str(log)
        )
        report.stopped.append(f"{task_id} set aside after {len(reasons)} rejections; log {log}")
        self.ws.console.event(f"{task_id} was rejected too often; it will be decomposed")

    def _rejection_record(self, task: Record, reasons: list[str], patch: Path | None) -> str:
        own = re.compile(rf"ralph-[0-9-]+-verify-{re.escape(task['id'])}(-\d+)?\.log")
        logs = sorted(
            str(self.agents.rel(path))
            for path in self.agents.log_dir.glob("ralph-*-verify-*.log")
            if own.fullmatch(path.name)
        )
        build = task.get("commit") or "(not recorded)"
        changes = str(self.agents.rel(patch)) if patch else "(none saved)"
        return "\n".join(
            [
                f"ralph: task {task['id']} set aside: VERIFY rejected it {len(reasons)} times",
                f"its last build: commit {build}; its changes (still in the code): {changes}",
                "what VERIFY said, oldest first:",
                *(f"{n}. {' '.join(redact(reason).split())[:2000]}" for n, reason in enumerate(reasons, 1)),
                "the VERIFY runs' logs:",
                *(logs or ["(none found)"]),
                "",
            ]
        )

    def build_task(self, task_id: str, iteration: int, report: StageReport) -> None:
        """Builds the task, retrying failed attempts; one VERIFY keeps rejecting is set aside for
        DECOMPOSE instead."""
        _, past = self._read(task_id)
        if self._rejected_too_often(past):
            return self._set_aside_rejected(past, report)
        report.items += 1
        with self.tree.build_recorded(task_id, past.task):
            first = True
            while self._attempt(task_id, iteration, report, first):
                first = False

    def _read(self, task_id: str) -> tuple[Plan, BuildHistory]:
        """The plan as it is now, and the task's build history in it (the one place the stage
        reads it: before the build, before each attempt, and to count a held-back failure)."""
        plan = self.plan.read()
        return plan, build_history(plan, task_id)

    def _attempt(self, task_id: str, iteration: int, report: StageReport, first: bool) -> bool:
        """One attempt: its run, what the run did (one value), what that came to (decided once,
        build_outcome.decide) and that applied in one place (build_apply.apply). Whether the
        build goes on with another attempt at once."""
        plan, past = self._read(task_id)
        if self.tree.in_worktree:
            self._from_the_branch_as_it_is(task_id, first)
        values = _values(self._draft_shown(past.task), plan, self.ws.settings, past.verify_reasons)
        result = self.agents.run_agent(Stage.BUILD, iteration, task_id, values, plan=plan)
        facts, attempt = self.facts.gather(task_id, result, iteration, past)
        outcome = decide(facts)
        apply(self.ws, task_id, outcome, attempt, report)
        return outcome.again

    def _draft_shown(self, task: Record) -> Record:
        """The task as its prompt shows it: its draft named by a ref this clone has (another
        runner's is fetched), or not offered when there is none to read."""
        if not task.get("draft"):
            return task
        ref = self.tree.draft_ref(str(task["draft"]))
        shown = {key: value for key, value in task.items() if key != "draft"}
        return {**shown, "draft": ref} if ref else shown

    def _from_the_branch_as_it_is(self, task_id: str, first: bool) -> None:
        """A build in a worktree starts from the branch as it is: one a neighbour's merge left
        behind before its first attempt is made again (CheckoutBehind). Each attempt's base is
        journalled, with whether the branch had moved past it (the replay bench counts them)."""
        behind = self.tree.behind()
        if behind and first and self.tree.renew_if_behind:
            raise CheckoutBehind(task_id)
        self.ws.journal.event("build_attempt", item=task_id, base=self.tree.base, behind=behind)

    def count_held_back(
        self, task_id: str, failure: Failure, result: AgentResult, report: StageReport
    ) -> bool:
        """A failure StaleBase held back beside running neighbours, judged once they left the code
        as it was (ParallelBuilds): deferred when the agent said it cannot do it and other tasks may
        change the code, else counted. Its changes were set aside then. True when it is built again."""
        others = self.facts.others_ready(task_id) if failure.verdict is Verdict.AGENT_ERROR else []
        if others:
            facts = AttemptFacts(failure=failure, deferred=True, kept=True)
        else:
            counted = self.facts.counted(failed(failure, result), self._read(task_id)[1])
            facts = AttemptFacts(failure=failure, counted=counted, kept=True)
        outcome = decide(facts)
        apply(self.ws, task_id, outcome, Attempt(result, others=tuple(others), counted=facts.counted), report)
        return outcome.again

    def tree_removed(self, task_id: str, result: AgentResult, report: StageReport) -> None:
        """The agent removed the worktree its build ran in, or its .git link (ParallelBuilds): a
        failed attempt, recorded on the loop's plan (the worktree's copy is gone), the other builds
        going on."""
        kept = self.agents.rel(result.log_path).with_suffix(".worktree")
        left = (
            f"its folder is kept as {kept}" if (self.tree.home / kept).exists() else "nothing of it is left"
        )
        failure = Failure(
            Verdict.WORKTREE_REMOVED,
            f"{Verdict.WORKTREE_REMOVED}: the agent removed the worktree it was building in, or its"
            f" .git link; {left}. Work inside that folder, and never delete it or its .git.",
        )
        attempts = record_failure(self.ws, task_id, failure, result)
        tell_failure(self.ws, task_id, attempts, failure, report, result.model)
        if attempts < self.ws.settings.max_attempts:
            return
        reason, log = KillReason.DOOM_LOOP, str(result.log_path)
        set_aside(self.ws, task_id, reason, log)  # no changes to keep: no tree is left
        self.ws.journal.event("task_killed", item=task_id, kill_reason=reason, log=log)
        report.stopped.append(f"{task_id} BUILD killed ({reason}), set aside for DECOMPOSE; log {log}")

    def _rejected_too_often(self, past: BuildHistory) -> bool:
        """VERIFY rejected it max_attempts times, or its rebuilds (and rejected resubmissions)
        used up max_rebuilds: DECOMPOSE splits it."""
        settings = self.ws.settings
        return past.rejected_too_often(settings.max_attempts, settings.max_rebuilds)


def _waiting_last(ready: list[Record], waiting: set[str], running: set[str]) -> list[Record]:
    """The ready tasks, those deferred until the code moves left out while any other is ready or
    builds beside them may still change the code."""
    others = [task for task in ready if task["id"] not in waiting]
    if others or running - waiting:
        return others
    return ready


def jobs(plan: Plan, settings: Settings, root: Path | None = None) -> list[Job]:
    """The BUILD runs a plan calls for now (each build's gate after it); the builds they unblock
    follow in the same stage. A task whose repeated failure goes to a person first gets none.
    (`root`: every stage's jobs take the same arguments, ralph.loop.stages.modules.)"""
    return [
        Job(Stage.BUILD, task["id"], task["name"], _values(task, plan, settings), list(settings.gate), task)
        for task in buildable_now(plan, settings)
        if not asks_a_person(task)
    ]


def _values(
    task: Record, plan: Plan, settings: Settings, reasons: Sequence[str] | None = None
) -> dict[str, object]:
    """The BUILD prompt's values for the task (`reasons`: why VERIFY sent it back, oldest first;
    None: as the plan has them)."""
    reasons = plan.verify_reasons(task["id"]) if reasons is None else reasons
    names = {other["id"]: other["name"] for other in plan.tasks()}
    return {
        "task_id": task["id"],
        "task_name": one_line(task["name"]),
        "task_type": task.get("type") or "",
        "task_details": task_details(task, names, plan.answers_for(task["id"]))
        + _after_rejection(task["id"], reasons),
        "gate": " ".join(settings.gate) or "(none)",
    }


def _after_rejection(task_id: str, reasons: Sequence[str]) -> str:
    """For a rebuild after VERIFY rejected the task: every verifier's reasons, oldest first, and
    how to resubmit the work unchanged when it is right as it is."""
    if not reasons:
        return ""
    said = "\n".join(f"{n}. {' '.join(reason.split())}" for n, reason in enumerate(reasons, 1))
    return (
        "\n"
        + data_block(
            f"what the verifiers said, oldest first (VERIFY rejected it {plural(len(reasons), 'time')})", said
        )
        + "\n\nIts last build is still in the code. Fix what they found. If you find after checking that"
        " the work already meets the criteria and the verifiers are wrong, do not change it for the"
        " sake of a change: resubmit it as it is, with your argument (a fresh verifier judges it once;"
        " a second rejection counts as a rebuild):\n\n"
        f'    {ralph_command()} task done {task_id} --unchanged "why it is right, point by point"\n'
    )


EVIDENCE_CHARS = 4000  # of each text a question quotes: two fit in one (intake.MAX_TEXT)


def _repeat_words(task: Record) -> str:
    """What repeated, in the words of a commit subject and the console."""
    if task.get("repeated_from"):
        if task.get("verdict") == Verdict.REJECTED:
            return f"was rejected as its ancestor {task['repeated_from']} was"
        return f"failed as its ancestor {task['repeated_from']} did"
    return "was rejected the same way twice"


def _repeat_question(task: Record) -> str:
    """The question about a repeated failure, quoting both texts, the earlier first."""
    first, second = (excerpt(text, EVIDENCE_CHARS) for text in task["repeated_failure"])
    task_id, name, ancestor = task["id"], one_line(task["name"]), task.get("repeated_from")
    if ancestor:
        rejected = task.get("verdict") == Verdict.REJECTED
        what = "VERIFY rejected it as it rejected" if rejected else "its build failed as did"
        return (
            f"Task {task_id} ({name}): {what} its ancestor {ancestor}, before DECOMPOSE split that."
            " The failure survived the split, so splitting further will not cure it; the other tasks"
            f" of its family ({family_of(task)}) wait with it. How should it be done, or should it be"
            f" dropped?\n\nThe ancestor's ({ancestor}):\n{first}\n\nThis task's ({task_id}):\n{second}"
        )
    return (
        f"VERIFY rejected task {task_id} ({name}) twice in a row for the same reason. Is the criterion"
        " right, and how should the task meet it, or should it be dropped? Built again as it is, it"
        f" would be rejected again.\n\nThe first rejection:\n{first}\n\nThe second:\n{second}"
    )
