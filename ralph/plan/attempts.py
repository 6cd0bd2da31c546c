"""The construct loop's transitions of a task: build attempts and their verdicts, kills, blocks
and decompositions. What one build attempt changes on its task's record is
ralph.plan.attempt_changes'; VERIFY's transitions are ralph.plan.verify_changes'; a spec's own
records are ralph.plan.spec_records'."""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace

from ralph.errors import Refused
from ralph.plan import questions, tasks
from ralph.plan.attempt_changes import add_usage, record_on
from ralph.plan.document import Record
from ralph.plan.families import inherited_failures, members_to_hold
from ralph.plan.reading import PlanReader
from ralph.plan.records import KillReason, Recorded, Status, Verdict
from ralph.plan.run_records import AttemptRecord, DecomposeRecord


@dataclass(frozen=True)
class BuildHistory:
    """What the plan says of a task's builds, read once (`build_history`): the task as it is and the
    reasons it was sent back, oldest first. What BUILD asks of it is answered from these alone."""

    task: Record  # the task's record, as the plan read holds it (read only)
    reasons: tuple[str, ...] = ()  # every reject record's: VERIFY's, a person's, the loop's set-asides
    verify_reasons: tuple[str, ...] = ()  # VERIFY's (or a person's, `task reject`) alone

    @property
    def rejections(self) -> int:
        """How many times VERIFY (or the loop) has rejected the task: its reject records."""
        return len(self.reasons)

    @property
    def rebuilding(self) -> bool:
        """VERIFY has rejected the task: its builds are rebuilds, with a budget of their own."""
        return bool(self.verify_reasons)

    def out_of_builds(self, max_attempts: int, max_rebuilds: int) -> bool:
        """The task has had the builds its budget allows: max_attempts before VERIFY rejected it,
        max_rebuilds after (the first build, which passed, does not count against the rebuilds)."""
        if self.rebuilding:
            return bool(self.task.get("rebuilds", 0) >= max_rebuilds)
        return bool(self.task.get("attempts", 0) >= max_attempts)

    def rejected_too_often(self, max_attempts: int, max_rebuilds: int) -> bool:
        """VERIFY rejected it max_attempts times, or its rebuilds (and rejected resubmissions)
        used up max_rebuilds: DECOMPOSE splits it."""
        if self.rejections >= max_attempts:
            return True
        return self.rebuilding and self.out_of_builds(max_attempts, max_rebuilds)

    def after(self, attempt: AttemptRecord) -> BuildHistory:
        """The history as recording `attempt` (FAILED, BUILT, RESUBMITTED) would leave it, worked
        out on a copy of the task: whether a counted failure is built again, set aside or asked
        about."""
        if attempt.kind not in (Recorded.FAILED, Recorded.BUILT, Recorded.RESUBMITTED):
            raise ValueError(f"{attempt.kind} adds a record to the plan: it is not worked out on a copy")
        task = copy.deepcopy(self.task)
        record_on(task, attempt, self.rebuilding)
        return replace(self, task=task)


def build_history(plan: PlanReader, task_id: str) -> BuildHistory:
    """The task's build history: its reject records and its line, each read once."""
    rejects = _rejects(plan, task_id)
    reasons = tuple(str(record["reason"]) for record in rejects)
    return BuildHistory(plan.task_line(task_id).record, reasons, _verify_reasons(rejects))


def _rejects(plan: PlanReader, task_id: str) -> list[Record]:
    """The task's reject records, oldest first: VERIFY's and a person's, and the loop's
    set-asides (with a kill_reason)."""
    return [line.record for line in plan.of("reject") if line.record["id"] == task_id]


def _verify_reasons(rejects: list[Record]) -> tuple[str, ...]:
    """Of the reject records, VERIFY's (and a person's) reasons: not the loop's set-asides."""
    return tuple(str(record["reason"]) for record in rejects if not record.get("kill_reason"))


def record_attempt(plan: PlanReader, task_id: str, attempt: AttemptRecord) -> Record:
    """BUILD's write of one attempt on its task: the task's line read once and rewritten once,
    then the reject record or the question it adds. The task as written; with ASKED, the
    question."""
    rebuilding = bool(_verify_reasons(_rejects(plan, task_id)))
    line = plan.task_line(task_id)
    added = record_on(line.record, attempt, rebuilding, plan)
    plan.doc.rewrite(line)
    if added is None:
        return line.record
    plan.doc.append(added)
    return added if attempt.kind is Recorded.ASKED else line.record


def record_build(
    plan: PlanReader,
    task_id: str,
    files: list[str],
    tokens: int,
    cost_usd: float | None,
    model: str | None = None,
) -> Record:
    """A build attempt passed the gate (attempt_changes.record_on)."""
    return record_attempt(plan, task_id, AttemptRecord(Recorded.BUILT, tokens, cost_usd, model, tuple(files)))


def record_build_commit(plan: PlanReader, task_id: str, commit: str) -> None:
    """The commit that recorded the task's build (a commit cannot name itself, so this goes in
    with the loop's next commit)."""
    line = plan.task_line(task_id)
    line.record["commit"] = commit
    plan.doc.rewrite(line)


def record_draft(plan: PlanReader, task_id: str, branch: str | None) -> None:
    """The branch that keeps the task's unfinished work (ralph.store.drafts); None: it has none."""
    line = plan.task_line(task_id)
    if branch:
        line.record["draft"] = branch
    else:
        line.record.pop("draft", None)
    plan.doc.rewrite(line)


def record_build_failure(
    plan: PlanReader,
    task_id: str,
    verdict: Verdict,
    failure: str,
    tokens: int,
    cost_usd: float | None,
    model: str | None = None,
    files: list[str] | None = None,
) -> int:
    """A build attempt failed (attempt_changes.record_on); returns the attempts so far."""
    failed = AttemptRecord(Recorded.FAILED, tokens, cost_usd, model, tuple(files or ()), verdict, failure)
    attempts: int = record_attempt(plan, task_id, failed)["attempts"]
    return attempts


def failed_builds(task: Record) -> int:
    """How many of the task's builds failed: each it had, as none of them was accepted (its gate,
    its merge or VERIFY failed it). A run whose agent failed without doing anything, or a build
    given back as made on a stale base, is no attempt and counts here neither."""
    return int(task.get("attempts") or 0)


def ask_about_repeated_failure(
    plan: PlanReader,
    task_id: str,
    text: str,
    asked_at: str,
    asked_by: str,
    family: str | None = None,
    running: list[str] | None = None,
) -> Record:
    """A failure repeated where another try would teach nothing (the same failure twice in a task
    that cannot be split further, the same rejection twice, or, with `family`, an ancestor's
    failure that survived a split): a person is asked, which blocks the task. A family's question
    holds its other pending tasks too, except those being built (`running`), which wait with it
    once their build is over (hold_for_question). Once answered, their builds start a fresh count
    of identical failures."""
    question = questions.ask(plan, task_id, text, asked_at, asked_by, family)
    line = plan.task_line(task_id)
    for stale in ("fingerprint", "repeated_failure", "repeated_from", "rejection_fingerprint"):
        line.record.pop(stale, None)
    plan.doc.rewrite(line)
    for member in members_to_hold(plan.tasks(), family, running or ()) if family else ():
        questions.hold_for_question(plan, member, question["id"])
    return question


def verify_reasons(plan: PlanReader, task_id: str) -> list[str]:
    """Why VERIFY (or a person, `task reject`) sent the task back each time, oldest first: not
    the loop's own set-asides, which are recorded the same way with a kill_reason."""
    return plan.verify_reasons(task_id)


def loop_kills(plan: PlanReader, task_id: str) -> list[tuple[KillReason, str]]:
    """Each time the loop killed the task or set it aside, oldest first: why, and its words."""
    return [
        (KillReason(line.record["kill_reason"]), line.record["reason"])
        for line in plan.of("reject")
        if line.record["id"] == task_id and line.record.get("kill_reason")
    ]


def failed_the_same_twice(task: Record) -> bool:
    """Its last two build attempts failed the same way (the same fingerprint in a row)."""
    return bool(task.get("repeated_failure"))


def record_merge_conflict(
    plan: PlanReader, task_id: str, files: list[str], tokens: int = 0, cost_usd: float | None = None
) -> int:
    """The task's build passed but its changes do not merge with what was built meanwhile: back
    to pending (an attempt, built again from the new HEAD), with the files that conflicted."""
    line = plan.task_line(task_id)
    task = line.record
    task["s"] = Status.PENDING
    task["attempts"] = task.get("attempts", 0) + 1
    task["verdict"] = Verdict.MERGE_CONFLICT
    task["merge_conflict"] = sorted(files)
    task["gate_failure"] = (
        "merge_conflict: the build passed its gate, but its changes conflict with work merged"
        f" meanwhile in {', '.join(sorted(files))}; build it again on the current code"
    )
    add_usage(task, tokens, cost_usd)
    for stale in ("commit", "files", "fingerprint"):  # a conflict between two failures: not in a row
        task.pop(stale, None)
    plan.doc.rewrite(line)
    attempts: int = task["attempts"]
    return attempts


def record_unmerged_build(
    plan: PlanReader,
    task_id: str,
    files: list[str],
    built: Record,
    max_attempts: int,
    where: str = "merged",
    kill_log: str | None = None,
) -> int:
    """The task's build passed but conflicts in `files` with work `where` (merged, pushed)
    meanwhile: back to pending (record_merge_conflict), with what the build's runs spent beyond
    this plan's record of the task (`built`: the task as the build's own plan left it); set
    aside for DECOMPOSE once its builds have conflicted `max_attempts` times."""
    task = plan.task_line(task_id).record
    tokens = built.get("tokens", 0) - task.get("tokens", 0)
    cost = (built.get("cost_usd") or 0) - (task.get("cost_usd") or 0)
    attempts = record_merge_conflict(plan, task_id, files, max(tokens, 0), cost or None)
    if attempts >= max_attempts:
        reason = f"its builds kept conflicting with work {where} meanwhile; split it into smaller tasks"
        set_aside(plan, task_id, KillReason.DOOM_LOOP, reason, kill_log=kill_log)
    return attempts


def set_aside(
    plan: PlanReader, task_id: str, kill_reason: KillReason, reason: str, kill_log: str | None = None
) -> Record:
    """The loop gives up building the task as it is: DECOMPOSE splits it next."""
    return tasks.reject(plan, task_id, reason, kill_reason=kill_reason, kill_log=kill_log)


def block(plan: PlanReader, task_id: str, reason: str) -> Record:
    """The loop gives up on the task: a person must split or rethink it. Nothing depending on
    it is built meanwhile."""
    line = plan.task_line(task_id)
    tasks.blocked_on(line.record, reason)
    plan.doc.rewrite(line)
    return line.record


def record_decompose(plan: PlanReader, task_id: str, run: DecomposeRecord) -> int:
    """DECOMPOSE's one write of a run on its task: the subtasks that replace it
    (record_decomposition), or, not decomposed, its run undone and its failure counted, perhaps
    blocking it (record_undecomposed). The task's failed decompositions so far (none, once it is
    decomposed: it is gone)."""
    if run.children:
        record_decomposition(plan, task_id, list(run.children), decomposed=run.task)
        return 0
    return record_undecomposed(plan, task_id, run.task, list(run.drop), run.counted, run.block)


def record_decomposition(
    plan: PlanReader,
    task_id: str,
    children: list[str],
    depth_of_task: int = 0,
    decomposed: Record | None = None,
) -> None:
    """DECOMPOSE replaced the task by `children`: they are one level deeper than it, of its family,
    of its type unless they have one, and remember the failures recorded on it and its ancestors
    (families.inherited_failures).
    `decomposed` (or its depth alone) is the task as DECOMPOSE found it, for when the agent
    already removed it. The task goes. What it and its subtasks are is read first, then written."""
    parent = plan.find_task(task_id)
    reasons = plan.verify_reasons(task_id)
    # The answers given for the task hold for its parts: the subtasks name those questions.
    answers = [question["id"] for question in plan.answers_for(task_id)]
    lines = [plan.task_line(child) for child in children]
    source = parent or decomposed or {"id": task_id}
    depth = source.get("depth", depth_of_task) + 1
    family = source.get("family") or task_id
    remembered = inherited_failures({**source, "id": task_id}, reasons)
    for line in lines:
        line.record["depth"], line.record["family"] = depth, family
        if remembered:
            line.record["ancestor_failures"] = remembered
        if source.get("type") and not line.record.get("type"):  # the work's kind, unless it said another
            line.record["type"] = source["type"]
        known = line.record.get("questions", [])
        if answers:
            line.record["questions"] = known + [q for q in answers if q not in known]
        plan.doc.rewrite(line)
    if parent is not None:  # the agent may have removed it itself
        tasks.delete(plan, task_id)


def restore_task(plan: PlanReader, record: Record) -> Record:
    """Put back a task an agent removed in a run whose changes are undone (a decomposition into
    too few parts): as it was before the run."""
    if plan.find_task(record["id"]) is not None:
        raise Refused(f"task {record['id']} is in the plan already")
    plan.doc.append(dict(record))
    return record


def record_undecomposed(
    plan: PlanReader,
    task_id: str,
    task: Record,
    drop: list[str],
    counted: bool = True,
    block: str | None = None,
) -> int:
    """DECOMPOSE's write of a task it did not decompose, in one transition: the subtasks its run
    made undone (`drop`), the task put back as it was (`task`) when its agent removed it, the
    failed decomposition counted (`counted`), and with `block` (why) the task blocked for a
    person, its line rewritten once. Returns its failed decompositions so far."""
    for child in drop:
        tasks.delete(plan, child, force=True)
    line = plan.find_task_line(task_id)
    record = line.record if line else dict(task)  # the agent removed it, with too few parts: as it was
    if counted:
        record["decompose_failures"] = record.get("decompose_failures", 0) + 1
    if block is not None:
        tasks.blocked_on(record, block)
    if line is None:
        plan.doc.append(record)  # back
    else:
        plan.doc.rewrite(line)
    return int(record.get("decompose_failures", 0))


def record_decompose_failure(plan: PlanReader, task_id: str) -> int:
    """DECOMPOSE made too few or too many subtasks (and they were undone); returns how often."""
    line = plan.task_line(task_id)
    line.record["decompose_failures"] = line.record.get("decompose_failures", 0) + 1
    plan.doc.rewrite(line)
    failures: int = line.record["decompose_failures"]
    return failures
