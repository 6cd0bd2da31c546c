"""Reading and changing plan.jsonl: strict load, one lock, atomic replace, one commit per change."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import filterfalse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ralph.errors import GitError, PlanInvalid, RalphError
from ralph.plan.plan import Plan
from ralph.store.files import remove_stale_temp_files, write_atomic
from ralph.store.lock import plan_lock
from ralph.store.reader import PLAN_NAME, load_checked, plan_path, read_bytes

if TYPE_CHECKING:
    from ralph.plan.document import Document, Line
    from ralph.secrets import FieldsRedactor
    from ralph.store.git import Repo

EARLIER_CHANGES_MESSAGE = "ralph: commit earlier uncommitted changes to plan.jsonl"


class Change:
    """What a transaction yields: the plan to change and the commit message to record it with."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.message = "ralph: update plan"
        self.commit: str | None = None


@contextmanager
def transaction(
    root: Path, commit: bool | None = None, fold_earlier: bool = False, repo: Repo | None = None
) -> Iterator[Change]:
    """Load under the lock; on a clean exit write atomically and commit, still holding the lock.

    `commit` None means: as the config record says (default yes). An exception leaves the
    file untouched. `repo`: the Repo of `root` to commit through, when the caller keeps one (the
    loop: what it reads once, such as whether commits are signed, is then read once per run).
    """
    with plan_lock(root):
        remove_stale_temp_files(root, PLAN_NAME)
        _refuse_link(root)
        _refuse_read_only(root)
        before = read_bytes(root)
        change = Change(Plan(load_checked(root, before)))
        yield change
        if not change.plan.doc.changed:
            return
        redact_lines(change.plan.doc, change.plan.doc.touched, root)
        after = checked_bytes(change.plan.doc)
        if commit is None:
            commit = _commit_wanted(change.plan)
        if commit and _beside_a_run(root, repo, before, change):
            commit = False  # the live run commits it (ralph.store.beside)
        if commit:
            from ralph.secrets import redact

            message = redact(change.message, root)  # it can quote a task's name or an issue's text
            ops = _ops_trailers(change.plan, root)
            change.commit = _write_and_commit(root, before, after, message, fold_earlier, repo, ops)
        else:
            write_atomic(plan_path(root), after)
            _remember_ops(root, before, after, change.plan, repo)
        from ralph.store import reader, validcache

        validcache.remember(root, after)
        reader.written(after, change.plan)


def _beside_a_run(root: Path, repo: Repo | None, before: bytes, change: Change) -> bool:
    """Whether another process's `ralph construct` runs in this work tree: then this change is a
    person's, written down for the run to commit (ralph.store.beside), not committed here."""
    from ralph.store import beside
    from ralph.store.git import Repo

    repo = repo or Repo(root)
    run = beside.live_run(repo)
    if run is None:
        return False
    from ralph.plan.integrity import record_key
    from ralph.plan.loader import load
    from ralph.secrets import redact

    old = {record_key(line.record): line.raw for line in load(before, PLAN_NAME).records()}
    new = {record_key(line.record): line.raw for line in change.plan.doc.records()}
    keys = sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key))
    lines = {key: new[key].decode("utf-8", "surrogateescape") if key in new else None for key in keys}
    beside.record(repo, run, redact(change.message, root), keys, _ops_trailers(change.plan, root), lines)
    return True


def redact_lines(doc: Document, lines: list[Line], root: Path) -> None:
    """Secrets out of these records of the document, before it is written (and committed, where a
    leak stays): a reason, a note, an issue's or a question's text can quote one."""
    from ralph.plan.document import RecordLine
    from ralph.secrets import FieldsRedactor

    redact_fields = FieldsRedactor(root)
    for line in doc.present(lines):
        if not isinstance(line, RecordLine):
            continue
        redacted = redact_fields(line.record)
        if redacted != line.record:
            line.record.clear()
            line.record.update(redacted)
            doc.rewrite(line)


def redact_plan(root: Path, clean: set[bytes]) -> None:
    """Every record of the plan redacted (an agent may write plan.jsonl by hand, and one in a
    sandbox cannot read the .env files whose values count); `clean` holds lines known to be clean,
    kept by the caller so that a long plan is not read through again at every commit."""
    from ralph.secrets import FieldsRedactor
    from ralph.store.reader import read_plan

    fresh = _unread(read_plan(root).doc, clean)
    if not fresh:
        return  # nothing new to redact: no lock, no load of a plan of its own
    redact_fields = FieldsRedactor(root)
    # Whether a line is clean is its bytes' alone: the lines no secret is in are known so without
    # the lock, and the plan is changed under it only when one is (its lines looked up again then).
    if _all_clean(fresh, redact_fields):  # a loop's first look at a long plan: one search
        clean.update(fresh)
        return
    clean.update(raw for raw in fresh if _holds_no_secret(raw, redact_fields))
    if fresh.issubset(clean):
        return
    with transaction(root, commit=False, fold_earlier=True) as change:
        doc = change.plan.doc
        fresh = _unread(doc, clean)
        for at, raw in enumerate(doc.raws()):
            if raw not in fresh:
                continue
            record = json.loads(raw)
            redacted = redact_fields(record)  # a new record: a line is made only where a secret goes
            line = doc.record_line(at) if redacted != record else None
            if line is not None:
                line.record.clear()
                line.record.update(redacted)
                doc.rewrite(line)
            clean.add(line.raw if line is not None else raw)


def _all_clean(lines: set[bytes], redact_fields: FieldsRedactor) -> bool:
    """Whether no field of these lines (of a valid plan) holds anything redaction would change, as
    their text tells at once: without a backslash every string is in it as it is (no escape, no
    quote inside one), and `": ` ends a key alone, so with those taken out the text is the
    strings (and the numbers, and the keys: more to find, never less) one search looks through."""
    text = b"".join(lines).decode("utf-8")
    return "\\" not in text and redact_fields.leaves_alone(text.replace('": ', '" '))


def _holds_no_secret(raw: bytes, redact_fields: Callable[[Any], Any]) -> bool:
    record = json.loads(raw)
    return bool(redact_fields(record) == record)


def _unread(doc: Document, clean: set[bytes]) -> set[bytes]:
    """The record lines of a valid plan not in `clean` (looked up in C: no pass of Python)."""
    return {raw for raw in filterfalse(clean.__contains__, doc.raws()) if raw.strip()}


def checked_bytes(doc: Document) -> bytes:
    """The changed file's bytes, once the lines the change wrote and the cross-record rules are
    checked: a command never writes a plan its own loader would refuse."""
    from ralph.plan.loader import touched_problems

    problems = touched_problems(doc)
    if problems:
        raise PlanInvalid(problems)
    return doc.to_bytes()


def _commit_wanted(plan: Plan) -> bool:
    # The construct loop sets RALPH_COMMIT=0 for agents: it commits their plan changes together
    # with their code once the gate has passed.
    if os.environ.get("RALPH_COMMIT", "").lower() in ("0", "false", "no"):
        return False
    wanted: bool = plan.config().get("commit", True)
    return wanted


def _ops_trailers(plan: Plan, root: Path) -> str:
    """The commit's `Ralph-Op:` trailers: the operations that made the change, for a runner to
    replay on the remote's head (ralph.plan.ops). None ("") when something else changed the plan
    too (a hand edit, a redacted secret), or when an argument holds a secret (a commit message
    never quotes one): a runner merges that change by record instead."""
    from ralph.plan.ops import made_by_ops, trailers
    from ralph.secrets import redact

    ops = made_by_ops(plan)
    lines = trailers(ops) if ops else ""
    return lines if lines and redact(lines, root) == lines else ""


def _remember_ops(root: Path, before: bytes, after: bytes, plan: Plan, repo: Repo | None) -> None:
    """The operations of a change written without a commit, for the commit that takes the plan
    later (the loop's, of plan and code together) to record (ralph.store.pending_ops)."""
    if not (root / ".git").exists():
        return  # not a git work tree: nothing will commit it
    from ralph.plan.ops import made_by_ops
    from ralph.store import pending_ops
    from ralph.store.root import git_dir

    # The record is an aid to a later replay, and an agent's sandbox keeps .git read-only: the
    # change itself is written, and the commit that takes it finds a gap (merged by record).
    with contextlib.suppress(OSError):
        pending_ops.remember(git_dir(root), before, after, made_by_ops(plan))


def _write_and_commit(
    root: Path,
    before: bytes,
    after: bytes,
    message: str,
    fold_earlier: bool,
    repo: Repo | None,
    ops: str = "",
) -> str | None:
    """Commit `after` as plan.jsonl alone. Everything that could stop the commit is checked, and
    the commit's objects are written, before the file is: a refused commit leaves the plan as it
    was, and a written plan is committed (or the error says exactly what was left).

    It needs no record of its own (ralph.store.intent): its one file is its own record. A kill
    after the write leaves plan.jsonl ahead of HEAD, and the next transaction commits that first
    (EARLIER_CHANGES_MESSAGE): rolled forward, as every change confirmed to its caller must be."""
    from ralph.store.blobs import blob_sha
    from ralph.store.git import Repo, blob_in

    repo = repo or Repo(root)
    refuse_unsafe_commit(repo)
    base = repo.objects.snapshot()
    if blob_in(base[1], PLAN_NAME) != blob_sha(before) and before.strip():
        if fold_earlier:
            ops = ""  # the commit holds earlier changes no operation made
        else:
            # Commit what was already there (a hand edit, or a change whose commit was
            # interrupted) on its own, so this command's commit shows only this command's change.
            earlier_message = earlier_changes_message(repo, base[1], before)
            earlier, entries = repo.index.commit_file(PLAN_NAME, before, earlier_message, base)
            base = (earlier or base[0], entries)
    from ralph.plan.ops import with_trailers
    from ralph.store import pending_ops

    prepared = repo.index.prepare_commit(PLAN_NAME, after, with_trailers(message, ops), base)
    write_atomic(plan_path(root), after)
    pending_ops.forget(repo)  # committed now, with its operations or merged by record
    if prepared is None:
        return None
    try:
        repo.index.land(prepared)
    except GitError as exc:
        raise GitError(
            f"{exc} (plan.jsonl is changed but not committed; the next ralph command commits it)"
        ) from None
    return prepared.commit


def earlier_changes_message(repo: Repo, head_entries: list[bytes], before: bytes) -> str:
    """EARLIER_CHANGES_MESSAGE, with the operations that made those changes when they are known
    (the loop's agents and its own bookkeeping write the plan without a commit)."""
    from ralph.store import pending_ops
    from ralph.store.blobs import blob_sha
    from ralph.store.git import blob_in

    parent = blob_in(head_entries, PLAN_NAME)
    return pending_ops.message_with(
        repo, repo.objects, EARLIER_CHANGES_MESSAGE, parent, blob_sha(before), before
    )


def refuse_unsafe_commit(repo: Repo) -> None:
    """Refuse, before writing anything, a commit git would lose or could not record."""
    operation = repo.state.operation_in_progress()
    if operation:
        raise GitError(f"{operation}: finish or abort it first, or pass --no-commit")
    if repo.state.head_detached():
        # Agents in the loop's detached checkouts (VERIFY) never get here: they run with
        # RALPH_COMMIT=0, and the loop commits on a branch.
        raise GitError("HEAD is detached: check out a branch for ralph to commit on, or pass --no-commit")
    if repo.state.index_locked():
        for delay in (0.05, 0.1, 0.2, 0.4, 0.8):  # another git command may hold it for a moment
            time.sleep(delay)
            if not repo.state.index_locked():
                return
        raise GitError(
            "git's index is locked (.git/index.lock exists): another git command is running, or one"
            " crashed and left it; remove the file once no git command runs. Nothing was changed"
        )


def _refuse_link(root: Path) -> None:
    if plan_path(root).is_symlink():
        raise RalphError(
            f"{PLAN_NAME} is a symbolic link; ralph replaces the file atomically and would turn the"
            " link into a regular file: make it a regular file (or edit the link's target by hand)"
        )


def _refuse_read_only(root: Path) -> None:
    # The atomic replace needs only the folder's permission, so it would go through a plan the
    # user made read-only (chmod a-w) to protect it; root would too. Its mode is the user's word.
    path = plan_path(root)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    if not mode & 0o222 or not os.access(path, os.W_OK):
        raise RalphError(
            f"{PLAN_NAME} is read-only (mode {mode & 0o777:o}): make it writable"
            f" (chmod u+w {PLAN_NAME}) for ralph to change it; nothing was changed"
        )


def restore_plan(root: Path, data: bytes) -> None:
    """Put known-good bytes back (under the lock), e.g. after an agent broke the file by hand."""
    with plan_lock(root):
        write_atomic(plan_path(root), data)
