"""The task commands as plain functions: each takes a repository root and plain values, changes
plan.jsonl in one transaction with one commit, and returns what changed. The CLI prints it."""

from __future__ import annotations

from pathlib import Path

from ralph.plan.document import Record
from ralph.plan.records import KillReason
from ralph.store.transaction import transaction
from ralph.usecases.names import named


def add(
    root: Path, items: list[object], commit: bool | None = None, issue_id: str | None = None
) -> list[Record]:
    from ralph.usecases.specs import require_spec_file

    for item in items:  # the plan's own default spec (its state's) is the loop's, and exists
        if isinstance(item, dict) and isinstance(item.get("spec"), str) and item["spec"]:
            require_spec_file(root, item["spec"], "task add")
    with transaction(root, commit) as change:
        added = change.plan.add_tasks(items, issue_id)
        change.message = f"ralph: task add {named(added)}"
    return added


def done(root: Path, task_id: str | None, commit: bool | None = None, unchanged: str | None = None) -> Record:
    """`unchanged`: resubmit the work VERIFY rejected as it is, with the argument why it is right."""
    with transaction(root, commit) as change:
        task = change.plan.done(task_id, unchanged)
        said = "\n\nresubmitted unchanged: " + unchanged if unchanged is not None else ""
        change.message = f"ralph: task done {named([task])}{said}"
    return task


def accept(root: Path, task_id: str | None, commit: bool | None = None) -> list[Record]:
    with transaction(root, commit) as change:
        accepted = change.plan.accept(task_id)
        change.message = f"ralph: task accept {named(accepted)}"
    return accepted


def reject(
    root: Path,
    task_id: str | None,
    reason: str,
    kill_reason: str | None = None,
    kill_log: str | None = None,
    commit: bool | None = None,
) -> Record:
    with transaction(root, commit) as change:
        task = change.plan.reject(task_id, reason, KillReason(kill_reason) if kill_reason else None, kill_log)
        change.message = f"ralph: task reject {named([task])}\n\n{reason}"
    return task


def delete(
    root: Path, task_id: str, force: bool = False, commit: bool | None = None
) -> tuple[Record, list[str]]:
    with transaction(root, commit) as change:
        task, rewired = change.plan.delete(task_id, force)
        change.message = f"ralph: task delete {named([task])}"
    return task, rewired


def prioritize(
    root: Path, spec: str | None = None, commit: bool | None = None, fold_earlier: bool = False
) -> Record:
    with transaction(root, commit, fold_earlier) as change:
        if (
            spec
            and not (root / spec).is_file()
            and not any(t.get("spec") == spec for t in change.plan.tasks())
        ):
            from ralph.usecases.specs import require_spec_file

            require_spec_file(root, spec, "task prioritize")  # a typo would filter every task out
        counts = change.plan.prioritize(spec)
        change.message = (
            f"ralph: task prioritize ({counts['high']} high, {counts['medium']} medium, {counts['low']} low)"
        )
    return counts
