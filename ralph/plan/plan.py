"""The plan: tasks, issues, config and loop state over a plan.jsonl document, and the
transitions the `ralph` commands make. Pure: no files, no git, no printing.

Plan is the one front door for transitions; each method hands its work to the module of its topic
(tasks, attempts, claims, questions, singletons), and reading is PlanReader's (reading.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# The loop's own topics (attempts, verify_changes, spec_records, drafts) are imported in the methods
# that call them: every state command makes a Plan, and none of them calls those (3 ms of 60).
from ralph.plan import claims, questions, singletons, tasks
from ralph.plan.document import Record
from ralph.plan.ops import recorded
from ralph.plan.reading import PlanReader, claim_age_s

if TYPE_CHECKING:  # annotations alone
    from ralph.plan.records import KillReason, Verdict
    from ralph.plan.run_records import AttemptRecord, CheckRecord, DecomposeRecord, VerifyRecord


class Plan(PlanReader):
    """A plan and every transition of it: the one front door the commands and the loop change a
    plan through. Each method is its topic module's function of the same name."""

    def add_tasks(self, items: list[object], issue_id: str | None = None) -> list[Record]:
        return tasks.add_tasks(self, items, issue_id)

    def done(self, task_id: str | None, unchanged: str | None = None) -> Record:
        return tasks.done(self, task_id, unchanged)

    def accept(self, task_id: str | None) -> list[Record]:
        return tasks.accept(self, task_id)

    def reject(
        self,
        task_id: str | None,
        reason: str,
        kill_reason: KillReason | None = None,
        kill_log: str | None = None,
    ) -> Record:
        return tasks.reject(self, task_id, reason, kill_reason, kill_log)

    def delete(self, task_id: str, force: bool = False) -> tuple[Record, list[str]]:
        return tasks.delete(self, task_id, force)

    def prioritize(self, spec: str | None = None) -> Record:
        return tasks.prioritize(self, spec)

    def add_spec(self, path: str) -> None:
        from ralph.plan import spec_records

        return spec_records.add_spec(self, path)

    def record_plan_kill(
        self, spec: str, kill_reason: KillReason | None, kill_log: str | None = None
    ) -> None:
        from ralph.plan import spec_records

        return spec_records.record_plan_kill(self, spec, kill_reason, kill_log)

    def record_planned(self, spec: str) -> None:
        from ralph.plan import spec_records

        return spec_records.record_planned(self, spec)

    def record_spec_check(self, spec: str, commit: str | None, digest: str | None) -> None:
        from ralph.plan import spec_records

        return spec_records.record_spec_check(self, spec, commit, digest)

    def record_check(self, spec: str, run: CheckRecord) -> int:
        from ralph.plan import spec_records

        return spec_records.record_check(self, spec, run)

    def record_check_kill(self, spec: str, kill_reason: KillReason, kill_log: str) -> int:
        from ralph.plan import spec_records

        return spec_records.record_check_kill(self, spec, kill_reason, kill_log)

    def record_attempt(self, task_id: str, attempt: AttemptRecord) -> Record:
        from ralph.plan import attempts

        return attempts.record_attempt(self, task_id, attempt)

    def record_build(
        self, task_id: str, files: list[str], tokens: int, cost_usd: float | None, model: str | None = None
    ) -> Record:
        from ralph.plan import attempts

        return attempts.record_build(self, task_id, files, tokens, cost_usd, model)

    def ask_about_repeated_failure(
        self,
        task_id: str,
        text: str,
        asked_at: str,
        asked_by: str,
        family: str | None = None,
        running: list[str] | None = None,
    ) -> Record:
        from ralph.plan import attempts

        return attempts.ask_about_repeated_failure(self, task_id, text, asked_at, asked_by, family, running)

    def record_build_commit(self, task_id: str, commit: str) -> None:
        from ralph.plan import attempts

        return attempts.record_build_commit(self, task_id, commit)

    def record_draft(self, task_id: str, branch: str | None) -> None:
        from ralph.plan import attempts

        return attempts.record_draft(self, task_id, branch)

    def record_build_failure(
        self,
        task_id: str,
        verdict: Verdict,
        failure: str,
        tokens: int,
        cost_usd: float | None,
        model: str | None = None,
        files: list[str] | None = None,
    ) -> int:
        from ralph.plan import attempts

        return attempts.record_build_failure(self, task_id, verdict, failure, tokens, cost_usd, model, files)

    def record_merge_conflict(
        self, task_id: str, files: list[str], tokens: int = 0, cost_usd: float | None = None
    ) -> int:
        from ralph.plan import attempts

        return attempts.record_merge_conflict(self, task_id, files, tokens, cost_usd)

    def record_unmerged_build(
        self,
        task_id: str,
        files: list[str],
        built: Record,
        max_attempts: int,
        where: str = "merged",
        kill_log: str | None = None,
    ) -> int:
        from ralph.plan import attempts

        return attempts.record_unmerged_build(self, task_id, files, built, max_attempts, where, kill_log)

    def set_aside(
        self, task_id: str, kill_reason: KillReason, reason: str, kill_log: str | None = None
    ) -> Record:
        from ralph.plan import attempts

        return attempts.set_aside(self, task_id, kill_reason, reason, kill_log)

    def block(self, task_id: str, reason: str) -> Record:
        from ralph.plan import attempts

        return attempts.block(self, task_id, reason)

    def record_decompose(self, task_id: str, run: DecomposeRecord) -> int:
        from ralph.plan import attempts

        return attempts.record_decompose(self, task_id, run)

    def record_decomposition(
        self, task_id: str, children: list[str], depth_of_task: int = 0, decomposed: Record | None = None
    ) -> None:
        from ralph.plan import attempts

        return attempts.record_decomposition(self, task_id, children, depth_of_task, decomposed)

    def restore_task(self, record: Record) -> Record:
        from ralph.plan import attempts

        return attempts.restore_task(self, record)

    def record_undecomposed(
        self, task_id: str, task: Record, drop: list[str], counted: bool = True, block: str | None = None
    ) -> int:
        from ralph.plan import attempts

        return attempts.record_undecomposed(self, task_id, task, drop, counted, block)

    def record_decompose_failure(self, task_id: str) -> int:
        from ralph.plan import attempts

        return attempts.record_decompose_failure(self, task_id)

    def record_verify_kill(self, task_id: str, kill_reason: KillReason, kill_log: str) -> int:
        from ralph.plan import verify_changes

        return verify_changes.record_verify_kill(self, task_id, kill_reason, kill_log)

    def record_verify_stop(
        self, task_id: str, kill_reason: KillReason, kill_log: str, set_aside: str | None = None
    ) -> int:
        from ralph.plan import verify_changes

        return verify_changes.record_verify_stop(self, task_id, kill_reason, kill_log, set_aside)

    def record_verify(self, task_id: str, run: VerifyRecord) -> Record:
        from ralph.plan import verify_changes

        return verify_changes.record_verify(self, task_id, run)

    def take_verification(self, task_id: str, base: Plan, theirs: Plan, max_new: int | None = None) -> Record:
        from ralph.plan import verify_changes

        return verify_changes.take_verification(self, task_id, base, theirs, max_new)

    def apply_verification(
        self,
        task_id: str,
        verdict: str | None,
        reason: str | None,
        added: list[Record],
        max_new: int | None = None,
    ) -> Record:
        from ralph.plan import verify_changes

        return verify_changes.apply_verification(self, task_id, verdict, reason, added, max_new)

    def claim(
        self,
        task_id: str,
        runner: str,
        now: str,
        ttl_s: float | None = None,
        ages: claims.Ages = claim_age_s,
        host: str | None = None,
    ) -> Record:
        return claims.claim(self, task_id, runner, now, ttl_s, ages, host)

    def release(self, task_id: str, runner: str, host: str | None = None) -> Record | None:
        return claims.release(self, task_id, runner, host)

    def add_issue(self, text: str, priority: str | None = None) -> Record:
        return questions.add_issue(self, text, priority)

    def keep_issue_open(self, issue_id: str, reason: str) -> Record:
        return questions.keep_issue_open(self, issue_id, reason)

    def record_investigation_kill(self, issue_id: str, kill_reason: KillReason, kill_log: str) -> int:
        return questions.record_investigation_kill(self, issue_id, kill_reason, kill_log)

    def ask(
        self, task_id: str, text: str, asked_at: str, asked_by: str | None = None, family: str | None = None
    ) -> Record:
        return questions.ask(self, task_id, text, asked_at, asked_by, family)

    def ask_about_draft(
        self,
        draft: str,
        spec: str,
        text: str,
        choices: list[str],
        asked_at: str,
        asked_by: str | None = None,
    ) -> Record:
        from ralph.plan import drafts

        return drafts.ask_about_draft(self, draft, spec, text, choices, asked_at, asked_by)

    def forget_draft(self, draft: str) -> list[Record]:
        from ralph.plan import drafts

        return drafts.forget_draft(self, draft)

    def hold_for_question(self, task_id: str, question_id: str) -> Record:
        return questions.hold_for_question(self, task_id, question_id)

    def answer(self, question_id: str, text: str, answered_at: str) -> tuple[Record, Record | None]:
        return questions.answer(self, question_id, text, answered_at)

    def resolve_issue(self, issue_id: str, note: str | None = None) -> Record:
        return questions.resolve_issue(self, issue_id, note)

    def set_config(self, key: str, value: object) -> Record:
        return singletons.set_config(self, key, value)

    def unset_config(self, key: str) -> Record:
        return singletons.unset_config(self, key)

    def update_state(self, **fields: object) -> Record:
        return singletons.update_state(self, **fields)

    def add_spending(self, by_stage: dict[str, dict[str, Any]]) -> Record:
        return singletons.add_spending(self, by_stage)


# Every transition is recorded as an operation (ralph.plan.ops): what a runner replays on the
# remote's head when its push lost the race.
# take_verification reads two whole plans and makes its change through apply_verification,
# whose arguments are plain data: that one is the operation.
NOT_OPERATIONS = frozenset({"take_verification"})
TRANSITIONS = frozenset(
    name
    for name, value in vars(Plan).items()
    if callable(value) and not name.startswith("_") and name not in NOT_OPERATIONS
)
for _name in TRANSITIONS:
    setattr(Plan, _name, recorded(getattr(Plan, _name)))
