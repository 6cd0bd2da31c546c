"""`ralph init`: the files ralph needs in a repository, created once and committed, and the merge
driver for plan.jsonl registered in the repository's git config."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ralph.ops import mergedriver
from ralph.store.reader import PLAN_NAME

if TYPE_CHECKING:
    from ralph.store.git import Repo

# Only what ralph writes: a project's own build/ folder (build output, often committed) is not ralph's.
LOGS_LINE = "/build/ralph-logs/"
GITIGNORE_LINES = (LOGS_LINE, f"/{PLAN_NAME}.lock", f"/.{PLAN_NAME}.*.tmp")
# Lines that already ignore the logs: an older ralph init wrote "/build/".
_LOGS_COVERED_BY = {LOGS_LINE, "/build/ralph-logs", "/build/", "/build", "build/", "build"}

Snapshot = tuple[str | None, list[bytes]]  # HEAD and its top-level tree entries (Repo.snapshot)


def init(root: Path, commit: bool = True) -> list[str]:
    """Create plan.jsonl, specs/ and build/ralph-logs/ (ignored by git), and register the merge
    driver for plan.jsonl. Safe to run again: it adds only what is missing, so a fresh clone (git
    does not clone its config) runs it once to register the driver.

    Returns what it added. With `commit`, a plan.jsonl it created is committed (one that was
    already there is the user's: its edits go through the usual checked path), and so are
    .gitignore and .gitattributes when they had no uncommitted changes of the user's before ralph
    added its lines."""
    from ralph.store.git import Repo
    from ralph.store.transaction import refuse_unsafe_commit

    created = []
    for folder in (root / "specs", root / "build" / "ralph-logs"):
        if not folder.is_dir():
            folder.mkdir(parents=True)
            created.append(str(folder.relative_to(root)) + "/")
    repo = Repo(root)
    if commit:
        refuse_unsafe_commit(repo)
    base = repo.snapshot() if commit else None
    before = _read(root / ".gitignore")
    lines = before.decode("utf-8", "surrogateescape").splitlines()
    missing = [line for line in GITIGNORE_LINES if line not in lines]
    if LOGS_LINE in missing and _LOGS_COVERED_BY.intersection(line.strip() for line in lines):
        missing.remove(LOGS_LINE)
    if missing:
        base = _append(repo, base, ".gitignore", missing, "ralph: init: ignore ralph's files")
        created.append(".gitignore entries: " + " ".join(missing))
    attributes = mergedriver.ATTRIBUTES_FILE
    missing = mergedriver.missing_attribute_lines(_read(root / attributes).decode("utf-8", "replace"))
    if missing:
        message = f"ralph: init: merge {PLAN_NAME} by record (ralph's merge driver)"
        base = _append(repo, base, attributes, missing, message)
        created.append(f"{attributes} entry: " + " ".join(missing))
    registered = mergedriver.register(repo)
    if registered:
        created.append("git config " + " ".join(registered))
    plan_file = root / PLAN_NAME
    if not plan_file.exists():
        plan_file.write_bytes(b"")
        created.append(PLAN_NAME)
        if base is not None:
            repo.commit_file(PLAN_NAME, b"", "ralph: init", base)
    return created


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


def _append(repo: Repo, base: Snapshot | None, name: str, lines: list[str], message: str) -> Snapshot | None:
    """Append `lines` to the top-level file `name`; with a `base` snapshot, commit the file too,
    unless it held uncommitted changes of the user's (which are not ralph's to commit)."""
    path = repo.root / name
    before = path.read_bytes() if path.exists() else None
    prefix = "" if not before or before.endswith(b"\n") else "\n"
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(prefix + "\n".join(lines) + "\n")
    if base is None:
        return None
    from ralph.store.git import blob_sha

    committed = repo.blob_in(base[1], name)
    if committed != (blob_sha(before) if before is not None else None):
        return base
    commit, entries = repo.commit_file(name, path.read_bytes(), message, base)
    return (commit or repo.head(), entries)
