"""`ralph init`: the files ralph needs in a repository, created once and committed, and the merge
driver for plan.jsonl registered in the repository's git config."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ralph.store.reader import PLAN_NAME
from ralph.usecases import mergedriver

if TYPE_CHECKING:
    from ralph.store.git import Repo

# Only what ralph writes: a project's own build/ folder (build output, often committed) is not ralph's.
LOGS_LINE = "/build/ralph-logs/"
GITIGNORE_LINES = (LOGS_LINE, f"/{PLAN_NAME}.lock", f"/.{PLAN_NAME}.*.tmp")
# Lines that already ignore the logs: an older ralph init wrote "/build/".
_LOGS_COVERED_BY = {LOGS_LINE, "/build/ralph-logs", "/build/", "/build", "build/", "build"}

Snapshot = tuple[str | None, list[bytes]]  # HEAD and its top-level tree entries (Repo.objects.snapshot)


def init(root: Path, commit: bool = True) -> list[str]:
    """Create plan.jsonl, specs/ and build/ralph-logs/ (ignored by git), and register the merge
    driver for plan.jsonl. Safe to run again: it adds only what is missing, so a fresh clone (git
    does not clone its config) runs it once to register the driver.

    Returns what it added. With `commit`, a plan.jsonl it created is committed (one that was
    already there is the user's: its edits go through the usual checked path), and so are
    .gitignore and .gitattributes when they had no uncommitted changes of the user's before ralph
    added its lines: all in one commit."""
    from ralph.store.git import Repo
    from ralph.store.transaction import refuse_unsafe_commit

    _refuse_wrong_kinds(root)
    added = _Added()
    for folder in (root / "specs", root / "build" / "ralph-logs"):
        if not folder.is_dir():
            folder.mkdir(parents=True)
            added.created.append(str(folder.relative_to(root)) + "/")
    repo = Repo(root)
    if commit:
        refuse_unsafe_commit(repo)
    base = repo.objects.snapshot() if commit else None
    _ignore_ralphs_files(repo, base, added)
    _merge_plan_by_record(repo, base, added)
    plan_file = root / PLAN_NAME
    if not plan_file.exists():
        plan_file.write_bytes(b"")
        added.created.append(PLAN_NAME)
        added.to_commit[PLAN_NAME] = b""
    if base is not None and added.to_commit:
        repo.index.commit_files(added.to_commit, added.message(), base)
    return added.created


class _Added:
    """What init added: for the person (`created`), for ralph's one commit (`to_commit`, the
    files' new bytes) and for its message (`done`)."""

    def __init__(self) -> None:
        self.created: list[str] = []
        self.to_commit: dict[str, bytes] = {}
        self.done: list[str] = []

    def message(self) -> str:
        """One commit for all of it (it was one per file): the subject says what it did."""
        if PLAN_NAME in self.to_commit:
            return "ralph: init" + ("\n\n" + "; ".join(self.done).capitalize() + "." if self.done else "")
        return "ralph: init: " + "; ".join(self.done)


def _ignore_ralphs_files(repo: Repo, base: Snapshot | None, added: _Added) -> None:
    """The .gitignore lines for ralph's logs, lock and temporary files that it lacks."""
    lines = _read(repo.root / ".gitignore").decode("utf-8", "surrogateescape").splitlines()
    missing = [line for line in GITIGNORE_LINES if line not in lines]
    if LOGS_LINE in missing and _LOGS_COVERED_BY.intersection(line.strip() for line in lines):
        missing.remove(LOGS_LINE)
    if missing:
        _append(repo, base, ".gitignore", missing, added.to_commit)
        added.done += ["ignore ralph's files"] if ".gitignore" in added.to_commit else []
        added.created.append(".gitignore entries: " + " ".join(missing))


def _merge_plan_by_record(repo: Repo, base: Snapshot | None, added: _Added) -> None:
    """The .gitattributes lines that give plan.jsonl ralph's merge driver (an older unanchored
    line anchored to the top-level file), and the driver registered in .git/config."""
    attributes = mergedriver.ATTRIBUTES_FILE
    text, anchored = mergedriver.upgraded_attributes(
        _read(repo.root / attributes).decode("utf-8", "surrogateescape")
    )
    if anchored:
        _write(repo, base, attributes, text.encode("utf-8", "surrogateescape"), added.to_commit)
        if attributes in added.to_commit:
            added.done.append(f"merge only the top-level {PLAN_NAME} with ralph's driver")
        added.created.append(f"{attributes} entry anchored: " + ", ".join(anchored))
    missing = mergedriver.missing_attribute_lines(text)
    if missing:
        _append(repo, base, attributes, missing, added.to_commit)
        if attributes in added.to_commit:
            added.done.append(f"merge {PLAN_NAME} by record (ralph's merge driver)")
        added.created.append(f"{attributes} entry: " + " ".join(missing))
    registered = mergedriver.register(repo)
    if registered:
        added.created.append("git config " + " ".join(registered))


def _refuse_wrong_kinds(root: Path) -> None:
    """A directory where plan.jsonl goes, or a file where a folder goes, stops init before it
    changes anything (it would add the rest and say all is set up)."""
    import errno
    import os

    wanted = {PLAN_NAME: False, "specs": True, "build": True, "build/ralph-logs": True}
    for name, folder in wanted.items():
        path = root / name
        if path.is_dir() != folder and path.exists():
            code = errno.ENOTDIR if folder else errno.EISDIR
            raise OSError(code, os.strerror(code), str(path))


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


def _append(
    repo: Repo, base: Snapshot | None, name: str, lines: list[str], to_commit: dict[str, bytes]
) -> None:
    """Append `lines` to the top-level file `name`; with a `base` snapshot, add the file to
    `to_commit`, unless it held uncommitted changes of the user's (which are not ralph's to commit)."""
    path = repo.root / name
    before = path.read_bytes() if path.exists() else b""
    prefix = b"" if not before or before.endswith(b"\n") else b"\n"
    _write(repo, base, name, before + prefix + "\n".join(lines).encode() + b"\n", to_commit)


def _write(repo: Repo, base: Snapshot | None, name: str, data: bytes, to_commit: dict[str, bytes]) -> None:
    """Write the top-level file `name`; with a `base` snapshot, add it to `to_commit` too, unless it
    held uncommitted changes of the user's (which are not ralph's to commit)."""
    path = repo.root / name
    before = path.read_bytes() if path.exists() else None
    path.write_bytes(data)
    if base is None:
        return
    from ralph.store.blobs import blob_sha
    from ralph.store.git import blob_in

    committed = blob_in(base[1], name)
    if committed == (blob_sha(before) if before is not None else None):
        to_commit[name] = path.read_bytes()
