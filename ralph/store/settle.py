"""Settling the changes a kill or a full disk cut in half (their records: ralph.store.intent):
each finished or undone as its kind says, at the next `ralph construct` or `ralph doctor --fix`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralph.errors import PlanInvalid, RalphError, disk_full
from ralph.plan.loader import load
from ralph.plan.overlay import records_by_key, with_records_of
from ralph.store import beside, owned
from ralph.store.files import create_new
from ralph.store.git import Repo
from ralph.store.integrate import settle_paths
from ralph.store.intent import KEPT, PLAN_NAME, Intent, IntentKind, Settled, finish, interrupted, short
from ralph.store.lock import RALPH_FILES, plan_lock
from ralph.store.reader import plan_path
from ralph.store.transaction import restore_plan, transaction
from ralph.text import plural


@dataclass
class Outcome:
    intent: Intent
    settled: Settled
    detail: str = ""

    def line(self) -> str:
        verb = {
            Settled.FINISHED: "finished",
            Settled.UNDONE: "undone",
            Settled.DONE_ALREADY: "had finished; its record removed",
            Settled.LEFT: "left as it is",
            Settled.OVERTAKEN: "overtaken, its record removed",
        }[self.settled]
        return f"{self.intent.describe()}, interrupted: {verb}" + (f" ({self.detail})" if self.detail else "")


def settle_all(repo: Repo, root: Path) -> list[Outcome]:
    """Finish or undo every interrupted change of this work tree, newest first. One that cannot
    be settled now (git fails: the disk is still full) keeps its record for the next try."""

    outcomes = []
    for intent in interrupted(repo, root):
        try:
            outcome = settle(repo, intent)
        except RalphError as exc:
            if disk_full(exc):  # still no room: the run cannot start, nor blame its leftovers on anyone
                raise
            outcome = Outcome(intent, Settled.LEFT, f"{exc}; tried again at the next start")
            outcomes.append(outcome)
            continue
        if outcome.settled is not Settled.LEFT:
            finish(repo, intent)
        outcomes.append(outcome)
    return outcomes


def settle(repo: Repo, intent: Intent) -> Outcome:
    if intent.kind is IntentKind.MERGE:
        return _finish_merge(repo, intent)
    if intent.kind is IntentKind.COMMIT:
        return _finish_commit(intent)
    if intent.kind is IntentKind.BUILD:
        return _undo_build(repo, intent)
    return _settle_plan(intent)


def _undo_build(repo: Repo, intent: Intent) -> Outcome:
    """A build cut off before its commit: what it changed (but the person's own changed paths)
    kept on the task's draft and as a patch, and undone; the task's record put back as the build
    found it (what the agent marked done is not built). The loop's own uncommitted bookkeeping in
    plan.jsonl, and a person's changes, stay."""
    from ralph.store import drafts

    data, root = intent.data, Path(intent.root)
    work = Repo(root)
    if work.head() != data["head"]:
        return Outcome(intent, Settled.OVERTAKEN, f"HEAD moved since, to {short(work.head())}")
    theirs = set(data.get("user_dirty") or [])
    changed = {p for p in work.changes.paths() - theirs - {PLAN_NAME} if not RALPH_FILES.fullmatch(p)}
    task, said = str(data["task"]), []
    draft = None
    if changed:
        kept = create_new(root / KEPT / f"build-{task}.patch")
        work.changes.save_patch(changed, kept)
        draft = drafts.keep(work, task, data["head"], changed, f"ralph: draft of {task}")
        work.changes.revert(changed)
        said.append(f"its changes kept as {kept.relative_to(root)}" + (f" and on {draft}" if draft else ""))
    with transaction(root, commit=False, fold_earlier=True) as change:
        line = next((line for line in change.plan.task_lines() if line.record["id"] == task), None)
        if line is not None and data.get("record") and line.record != data["record"]:
            line.record.clear()
            line.record.update(data["record"])  # as the build found it: not built
            change.plan.doc.rewrite(line)
            said.append(f"{task} as it was before")
        if draft and line is not None:  # offered to the task's next build, as after an interrupt
            change.plan.record_draft(task, draft)
    return Outcome(intent, Settled.UNDONE, "; ".join(said) or "nothing changed")


def _finish_merge(repo: Repo, intent: Intent) -> Outcome:
    data, root = intent.data, Path(intent.root)
    head, commit = data["head"], data["commit"]
    work = Repo(root)
    settled = Settled.DONE_ALREADY
    with plan_lock(root):
        now = work.head()
        if now == head:
            foreign = settle_paths(work, head, commit, check_only=True)
            if foreign:
                changed = ", ".join(foreign[:5])
                return Outcome(intent, Settled.LEFT, f"changed since, neither before nor after: {changed}")
            settle_paths(work, head, commit)
            subject = f"ralph: finish the merge of {data.get('task') or commit[:12]} a killed run left"
            work.git("update-ref", "-m", subject, "HEAD", commit, head)
            settled = Settled.FINISHED
        elif now != commit:
            return Outcome(intent, Settled.OVERTAKEN, f"HEAD moved since, to {short(now)}")
    after_merge(repo, root, data)
    return Outcome(intent, settled, f"HEAD at {short(commit)}")


def after_merge(repo: Repo, root: Path, data: dict[str, Any]) -> None:
    """What follows a build's merge: its commit (as copied) recorded on its task, and its branch
    marked merged so that clean-up deletes it although its own commits are not in HEAD (copies
    are). Safe to repeat."""

    task, recorded = data.get("task"), data.get("record")
    if task and recorded:
        record_build_commit(root, task, recorded)
    if data.get("branch") and data.get("tip"):
        owned.mark_merged(repo, data["branch"], data["tip"])


def record_build_commit(root: Path, task: str, commit: str) -> None:
    """The task's build commit, in plan.jsonl for the loop's next commit (unless it is there)."""

    with transaction(root, commit=False, fold_earlier=True) as change:
        found = change.plan.find_task(task)
        if found is not None and found.get("commit") != commit:
            change.plan.record_build_commit(task, commit)


def _finish_commit(intent: Intent) -> Outcome:
    data = intent.data
    work = Repo(Path(intent.root))
    now = work.head()
    settled = Settled.DONE_ALREADY
    if now == data["head"]:
        commit, files = work.index.commit_paths(set(data["paths"]), data["message"])
        settled = Settled.FINISHED if commit else Settled.DONE_ALREADY
        detail = (
            f"committed {plural(len(files), 'file')} as {short(commit)}"
            if commit
            else "nothing left to commit"
        )
    elif now is not None and work.commit_of(f"{now}^") == data["head"]:
        commit, detail = now, f"HEAD at {short(now)}"
    else:
        return Outcome(intent, Settled.OVERTAKEN, f"HEAD moved since, to {short(now)}")
    if commit and data.get("task"):
        record_build_commit(Path(intent.root), data["task"], commit)
    return Outcome(intent, settled, detail)


def _settle_plan(intent: Intent) -> Outcome:
    root = Path(intent.root)
    work = Repo(root)
    current = plan_path(root).read_bytes() if plan_path(root).exists() else b""
    theirs = beside.entries(work)[0]  # a person's commands beside the killed run: never its
    if intent.data.get("phase") == "planned":
        if theirs:  # PLAN's tasks alone, their records as before it: theirs go in as theirs
            earlier = work.git("cat-file", "blob", intent.data["before"]).encode()
            planned = _with_theirs(current, theirs, earlier, as_written=False)
            commit, _ = work.index.commit_file(PLAN_NAME, planned, intent.data["message"])
        else:
            commit, _ = work.index.commit_paths({PLAN_NAME}, intent.data["message"])
        return Outcome(
            intent, Settled.FINISHED if commit else Settled.DONE_ALREADY, f"commit {short(commit)}"
        )
    # plan.jsonl is UTF-8 (its loader refuses anything else): the text round-trips exactly.
    before = work.git("cat-file", "blob", intent.data["before"]).encode()
    if current == before:
        return Outcome(intent, Settled.DONE_ALREADY, "plan.jsonl as before it")
    spec_name = Path(str(intent.data.get("spec") or "spec")).stem
    kept = create_new(root / KEPT / f"plan-{spec_name}.plan.jsonl")
    kept.write_bytes(current)
    restore_plan(root, _with_theirs(before, theirs, current, as_written=True))
    return Outcome(intent, Settled.UNDONE, f"the plan it left kept as {kept.relative_to(root)}")


def _with_theirs(onto: bytes, theirs: Sequence[beside.Entry], source: bytes, as_written: bool) -> bytes:
    """`onto` with each record a person's commands changed: as they wrote it (`as_written`), or as
    `source` has it; `onto` itself when there are none, or when a plan does not load."""
    if not theirs:
        return onto
    try:
        keys = frozenset(key for entry in theirs for key in entry.keys)
        records = (
            beside.as_written(theirs, load(source)) if as_written else records_by_key(load(source), keys)
        )
        return with_records_of(load(onto), records).to_bytes()
    except PlanInvalid:
        return onto
