"""git's merge driver for plan.jsonl: merging the three files git hands over, and registering the
driver, which takes a committed `.gitattributes` line and two keys of the repository's git config.
git does not clone its config: a fresh clone has the line but not the keys until `ralph init`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ralph.errors import RalphError
from ralph.store.reader import PLAN_NAME

if TYPE_CHECKING:
    from ralph.plan.merge import Merged
    from ralph.store.git import Repo

DRIVER = "ralph"
ATTRIBUTES_FILE = ".gitattributes"
# Anchored: `plan.jsonl` alone would match a plan.jsonl in every folder (test fixtures included).
ATTRIBUTES_LINE = f"/{PLAN_NAME} merge={DRIVER}"
DRIVER_NAME = "ralph: plan.jsonl merged by record (ralph merge-driver)"
UNREGISTERED = (
    f"warning: {ATTRIBUTES_FILE} merges {PLAN_NAME} with ralph's merge driver, but this clone's git"
    f" config lacks merge.{DRIVER}.driver: run 'ralph init'"
)


def merge_files(base: Path, ours: Path, theirs: Path, name: str = PLAN_NAME) -> Merged:
    """Merge three versions of the plan (git's %O %A %B) and write the result over `ours` (%A), as
    git expects. A version that cannot be merged by record raises, leaving `ours` as it was."""
    from ralph.plan.merge import merge_bytes
    from ralph.store.files import write_atomic

    versions = [_read(path) for path in (base, ours, theirs)]
    merged = merge_bytes(versions[0], versions[1], versions[2], name=name)
    if merged.data != versions[1]:
        write_atomic(ours, merged.data)
    return merged


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise RalphError(f"cannot read {path}: {exc.strerror or exc}") from None


def driver_command() -> str:
    """What git runs: this ralph, through the interpreter it is installed in, so that a merge finds
    it without its virtualenv on PATH. %O base, %A ours (and the result), %B theirs, %P the path."""
    import shlex

    return f"{shlex.quote(sys.executable)} -m ralph merge-driver %O %A %B %P"


def missing_attribute_lines(text: str) -> list[str]:
    """The .gitattributes line to add: none when a line already names ralph's driver, or already
    chooses a merge for plan.jsonl (the user's choice stands)."""
    for words in _attribute_lines(text):
        if f"merge={DRIVER}" in words[1:]:
            return []
        if words[0] in (PLAN_NAME, f"/{PLAN_NAME}") and any(_is_merge(word) for word in words[1:]):
            return []
    return [ATTRIBUTES_LINE]


def upgraded_attributes(text: str) -> tuple[str, list[str]]:
    """The text with each line an older ralph wrote (`plan.jsonl merge=ralph`, which matches a
    plan.jsonl in any folder) anchored to the top-level file, and the lines it changed."""
    lines = text.splitlines(keepends=True)
    changed = []
    for index, line in enumerate(lines):
        words = line.split()
        if words and words[0] == PLAN_NAME and f"merge={DRIVER}" in words[1:]:
            lines[index] = line.replace(PLAN_NAME, f"/{PLAN_NAME}", 1)
            changed.append(line.strip())
    return "".join(lines), changed


def names_driver(text: str) -> bool:
    return any(f"merge={DRIVER}" in words[1:] for words in _attribute_lines(text))


def _attribute_lines(text: str) -> list[list[str]]:
    """Each line of a .gitattributes file as its pattern and attributes; comments left out."""
    return [words for words in map(str.split, text.splitlines()) if words and not words[0].startswith("#")]


def _is_merge(word: str) -> bool:
    return word.lstrip("-!") == "merge" or word.startswith("merge=")


def register(repo: Repo) -> list[str]:
    """Set merge.ralph.name and merge.ralph.driver where git's config lacks them (a value already
    there is kept); return the keys it set."""
    added = []
    for key, value in ((f"merge.{DRIVER}.name", DRIVER_NAME), (f"merge.{DRIVER}.driver", driver_command())):
        if repo.config.get(key) is None:
            repo.config.set(key, value)
            added.append(key)
    return added


def unregistered(root: Path) -> str | None:
    """A one-line warning when .gitattributes names ralph's driver and git's config lacks it (git
    would then merge plan.jsonl line by line, without a word); else None."""
    try:
        text = (root / ATTRIBUTES_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if not names_driver(text):
        return None
    from ralph.errors import GitError
    from ralph.store.git import Repo

    try:
        driver = Repo(root).config.get(f"merge.{DRIVER}.driver")
    except GitError:  # a warning must not stop the command it is printed by
        return None
    return UNREGISTERED if driver is None else None
