"""Commits that move HEAD and record what they took in the index: exactly the paths given, or
top-level files (plan.jsonl) built on HEAD's tree, prepared first and then landed.

Committing plan.jsonl builds the new tree from HEAD's tree with only plan.jsonl replaced, so the
user's staged and unstaged work is never part of ralph's commit and the index keeps everything
the user staged.
"""

from __future__ import annotations

import os
import stat
import time
from typing import TYPE_CHECKING

from ralph.errors import GitError
from ralph.store.blobs import blob_sha
from ralph.store.git.objects import blob_in, entry_of, message_bytes
from ralph.store.git.run import ZERO_SHA
from ralph.store.root import PLAN_NAME

if TYPE_CHECKING:
    from pathlib import Path

    from ralph.store.git.objects import Objects
    from ralph.store.git.run import Runner
    from ralph.store.git.state import State


class Index:
    def __init__(self, git: Runner, objects: Objects, state: State):
        self._git, self._objects, self._state = git, objects, state

    # --- top-level files on HEAD's tree ----------------------------------------------------------
    def commit_file(
        self, relpath: str, data: bytes, message: str, base: tuple[str | None, list[bytes]] | None = None
    ) -> tuple[str | None, list[bytes]]:
        """Commit `data` as the content of top-level file `relpath`, and nothing else.

        `base` is a snapshot() still current. Returns the new snapshot; its commit is None when
        HEAD already holds exactly these bytes (nothing to commit).
        """
        prepared = self.prepare_commit(relpath, data, message, base)
        if prepared is None:
            return None, (base or self._objects.snapshot())[1]
        self.land(prepared)
        return prepared.commit, prepared.entries

    def commit_files(
        self, files: dict[str, bytes], message: str, base: tuple[str | None, list[bytes]] | None = None
    ) -> tuple[str | None, list[bytes]]:
        """Commit each top-level file of `files` with its bytes, and nothing else, in one commit;
        as commit_file does for one (None: HEAD already holds them all)."""
        parent, entries = base or self._objects.snapshot()
        staged: list[tuple[str, str, str]] = []
        for relpath, data in files.items():
            old, mode = entry_of(entries, relpath)
            if old != f"{mode} blob {blob_sha(data)}\t".encode() + os.fsencode(relpath):
                entries, blob = self._objects.entries_with(entries, old, mode, relpath, data)
                staged.append((relpath, blob, mode))
        if not staged:
            return None, entries
        commit = self._objects.commit_tree(self._objects.mktree(entries), parent, message)
        subject = (message.splitlines()[0] if message.strip() else "ralph")[:200]
        self._git.git("update-ref", "-m", subject, "HEAD", commit, parent or ZERO_SHA)
        try:
            for relpath, blob, mode in staged:
                self._stage(relpath, blob, mode)
        except GitError as exc:
            self._undo_ref(PreparedCommit(*staged[0], commit, parent, entries, message))
            raise GitError(f"{exc}; HEAD was put back, nothing is committed") from None
        return commit, entries

    def prepare_commit(
        self, relpath: str, data: bytes, message: str, base: tuple[str | None, list[bytes]] | None = None
    ) -> PreparedCommit | None:
        """Write the commit's objects, moving nothing: whatever would stop the commit (no git
        identity, a full disk) fails here, before the caller writes any file. None when HEAD
        already holds exactly these bytes."""
        parent, entries = base or self._objects.snapshot()
        old, mode = entry_of(entries, relpath)
        if old == f"{mode} blob {blob_sha(data)}\t".encode() + os.fsencode(relpath):
            return None
        new_entries, blob = self._objects.entries_with(entries, old, mode, relpath, data)
        commit = self._objects.commit_tree(self._objects.mktree(new_entries), parent, message)
        return PreparedCommit(relpath, mode, blob, commit, parent, new_entries, message)

    def land(self, prepared: PreparedCommit, from_work_tree: bool = False) -> None:
        """Move HEAD to the prepared commit and record the file in the index: both or neither.
        `from_work_tree`: the work tree's file holds the commit's bytes (see _stage)."""
        self._state.refuse_switched_branch()
        # The reflog keeps the subject; argv has a size limit, so a huge one is cut.
        subject = (prepared.message.splitlines()[0] if prepared.message.strip() else "ralph")[:200]
        # The old value makes this a compare-and-swap: a commit made meanwhile is never lost.
        self._git.git("update-ref", "-m", subject, "HEAD", prepared.commit, prepared.parent or ZERO_SHA)
        try:
            self._stage(prepared.relpath, prepared.blob, prepared.mode, from_work_tree)
        except GitError as exc:
            self._undo_ref(prepared)
            raise GitError(f"{exc}; HEAD was put back, nothing is committed") from None

    def _undo_ref(self, prepared: PreparedCommit) -> None:
        if prepared.parent:
            self._git.git("update-ref", "-m", "ralph: undo", "HEAD", prepared.parent, prepared.commit)
        else:
            self._git.git("update-ref", "-d", "HEAD", prepared.commit)

    def _stage(self, relpath: str, blob: str, mode: str = "100644", from_work_tree: bool = False) -> None:
        """Record the committed content in the index, so `git status` shows plan.jsonl clean.
        `from_work_tree`: added from the work tree's file, which holds those bytes, so the index
        has its stat data too: each `git status` after a recorded blob alone would hash the file
        again (a read-only one never writes what it found back to the index)."""
        args = (
            ("add", "--", relpath)
            if from_work_tree
            else ("update-index", "--add", "--cacheinfo", f"{mode},{blob},{relpath}")
        )
        for delay in (0.05, 0.1, 0.2, 0.4, 0.8, 0):
            try:
                self._git.git(*args)
                return
            except GitError as exc:
                if "index.lock" not in str(exc) or not delay:
                    raise
                time.sleep(delay)  # someone else's git command holds the index for a moment

    # --- the paths given, through the index ------------------------------------------------------
    def commit_paths(self, paths: set[str], message: str) -> tuple[str | None, list[str]]:
        """Commit exactly `paths` (added, changed or deleted), skipping the user's hooks; return the
        commit and the files it changed (None and [] when nothing differed)."""
        if not paths:
            return None, []
        self._state.refuse_switched_branch()
        ordered = sorted(paths)
        if ordered == [PLAN_NAME] and (data := _plain_bytes(self._git.root / PLAN_NAME)) is not None:
            return self._commit_plan(data, message)
        return self._commit_added(ordered, message)

    def _commit_added(self, ordered: list[str], message: str) -> tuple[str | None, list[str]]:
        """commit_paths through `git add` and `git commit -- paths`."""
        # A path gone from both the work tree and the index (the agent ran `git rm` or `git mv`) is
        # already staged as deleted, and `git add` would refuse it: "pathspec did not match".
        gone = {path for path in ordered if not os.path.lexists(self._git.root / path)}
        indexed = set(self._git.listing("ls-files", "-z", "--", *sorted(gone)).split("\0")) if gone else set()
        addable = [path for path in ordered if path not in gone or path in indexed]
        if addable:
            self._git.git("add", "-A", "--", *addable)
        blobs = self._staged_blobs(ordered)
        staged = list(blobs)
        if not staged:
            return None, []
        takes_plan = PLAN_NAME in blobs
        if takes_plan:
            message = self._with_pending_ops(message, *blobs[PLAN_NAME])
        head = self._git.head()
        stamps = self._objects.commit_dates([head] if head else [])
        self._git.output(
            ("commit", "--no-verify", "-q", "-F", "-", "--", *staged), message_bytes(message), stamps
        )
        if takes_plan:
            from ralph.store import pending_ops

            pending_ops.forget(self._git)
        made = self._git.head()
        self._objects.note_stamp(made, stamps)
        return made, staged

    def _commit_plan(self, data: bytes, message: str) -> tuple[str | None, list[str]]:
        """commit_paths of plan.jsonl alone, whose bytes are `data`: its blob and tree written here
        (ralph.store.loose), not hashed by `git add` and again by `git commit -- plan.jsonl` (two
        passes of git's collision-detecting SHA-1 over a long history's plan, in each of the loop's
        commits)."""
        parent, entries = self._objects.snapshot()
        if entry_of(entries, PLAN_NAME)[1] != "100644":  # executable in HEAD: as `git add` stages it
            return self._commit_added([PLAN_NAME], message)
        before, after = blob_in(entries, PLAN_NAME), blob_sha(data)
        message = self._with_pending_ops(message, before, after, data) if before != after else message
        prepared = self.prepare_commit(PLAN_NAME, data, message, (parent, entries))
        if prepared is None:  # HEAD holds it: the index is made to as well, as `git add` did
            self._stage(PLAN_NAME, after, from_work_tree=True)
            return None, []
        self.land(prepared, from_work_tree=True)
        if _plain_bytes(self._git.root / PLAN_NAME) != data:  # written meanwhile: the index holds HEAD's
            self._stage(PLAN_NAME, prepared.blob, prepared.mode)
        from ralph.store import pending_ops

        pending_ops.forget(self._git)
        return prepared.commit, [PLAN_NAME]

    def _staged_blobs(self, paths: list[str]) -> dict[str, tuple[str | None, str | None]]:
        """The paths among `paths` whose staged content differs from HEAD's, each with its blob in
        HEAD and in the index (None where it has none: added, deleted): one git run for both."""
        out = self._git.listing(
            "diff", "--cached", "--no-renames", "--raw", "--no-abbrev", "-z", "--", *paths
        )
        fields = iter(out.split("\0"))
        blobs: dict[str, tuple[str | None, str | None]] = {}
        for meta in fields:  # ":100644 100644 <HEAD's blob> <the index's blob> M", then the path
            if not meta.startswith(":"):
                continue
            _, _, before, after, _ = meta[1:].split(" ", 4)
            blobs[next(fields, "")] = (_blob_or_none(before), _blob_or_none(after))
        blobs.pop("", None)
        return blobs

    def _with_pending_ops(
        self, message: str, parent: str | None, staged: str | None, data: bytes | None = None
    ) -> str:
        """The message with the operations that made the staged plan's change from blob `parent`
        to blob `staged` (ralph.store.pending_ops); `data`: its bytes, when not stored yet."""
        from ralph.store import pending_ops

        git_dir = self._git.git_dir()
        if staged is None or not any((git_dir / name).exists() for name in pending_ops.NAMES):
            return message
        return pending_ops.message_with(self._git, self._objects, message, parent, staged, data)

    def stage_paths(self, paths: set[str]) -> None:
        """Put exactly `paths` in the index as they are in the work tree (added, changed, deleted)."""
        if paths:
            self._git.git("add", "-A", "--", *sorted(paths))


class PreparedCommit:
    """A commit whose objects are written but which no ref points at yet."""

    __slots__ = ("relpath", "mode", "blob", "commit", "parent", "entries", "message")

    def __init__(
        self,
        relpath: str,
        mode: str,
        blob: str,
        commit: str,
        parent: str | None,
        entries: list[bytes],
        message: str,
    ):
        self.relpath, self.mode, self.blob, self.commit = relpath, mode, blob, commit
        self.parent, self.entries, self.message = parent, entries, message


def _plain_bytes(path: Path) -> bytes | None:
    """The bytes of `path` where it is a regular file, not a link and not executable (its commit's
    entry is then a plain blob's, as `git add` would stage it), read through the descriptor that
    was checked; None otherwise (a FIFO is not waited on)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as file:
        mode = os.fstat(descriptor).st_mode
        return file.read() if stat.S_ISREG(mode) and not mode & 0o111 else None


def _blob_or_none(name: str) -> str | None:
    """A blob's name as `git diff --raw` gives it; None for the zeros that say there is none."""
    return None if not name.strip("0") else name
