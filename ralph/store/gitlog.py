"""A file's history from one `git log -p` process: each commit that changed it, with the lines
it removed and added, read as git prints them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from ralph.store.git import Repo


def file_history(repo: Repo, relpath: str, rev: str = "HEAD") -> Iterator[FileChange]:
    """Each commit that changed top-level file `relpath`, oldest first, following first parents
    (a merge counts as the change it made to its first parent): who, when, and the lines it
    removed and added. Yielded as git prints them, so the caller works while git diffs on.

    One `git log -p -U0` process reads the whole history: on 1,000 commits of a 200 KB file it
    takes about 0.6 s, with the lines already diffed. Reading every version instead and diffing
    lines in Python took 2.4 s with one `git cat-file --batch` (190 MB of blobs through the pipe)
    and 1.5 s for gitpython's object database before any diffing (bench/bench_log.py's history)."""
    if repo.head() is None:
        return
    args = (
        *("-c", "log.follow=false", "-c", "log.showSignature=false", "-c", "diff.noprefix=false"),
        *("log", "--reverse", "--first-parent", "-m", "-p", "-U0", "--text", "--no-renames"),
        *("--no-ext-diff", "--no-textconv", "--no-color", "--format=%x01%H%x00%an%x00%aI%x00%P%x00%s"),
        *(rev, "--", relpath),
    )
    yield from _changes(repo.lines(*args))


def _changes(lines: Iterable[bytes]) -> Iterator[FileChange]:
    """`git log -p -U0` output, commit by commit (each header line starts with \\x01)."""
    change: FileChange | None = None
    in_hunk = False
    for line in lines:
        if line.startswith(b"\x01"):
            if change is not None:
                yield change
            fields = line[1:].rstrip(b"\n").decode("utf-8", "replace").split("\0", 4)
            commit, author, when, parents, subject = fields
            change = FileChange(commit, author, when, subject, merge=len(parents.split()) > 1)
            in_hunk = False
        elif change is None:
            continue
        elif line.startswith(b"@@"):
            in_hunk = True
        elif in_hunk and line[:1] == b"-":
            change.removed.append(line[1:].rstrip(b"\n").rstrip(b"\r").decode("utf-8", "replace"))
        elif in_hunk and line[:1] == b"+":
            change.added.append(line[1:].rstrip(b"\n").rstrip(b"\r").decode("utf-8", "replace"))
        elif line.startswith(b"diff "):
            in_hunk = False  # the next file's header (none: one path asked for)
    if change is not None:
        yield change


class FileChange:
    """One commit's change to a file: the lines (without line endings) it removed and added."""

    __slots__ = ("commit", "author", "time", "subject", "merge", "removed", "added")

    def __init__(self, commit: str, author: str, time: str, subject: str, merge: bool = False):
        self.commit, self.author, self.time, self.subject = commit, author, time, subject
        self.merge = merge  # a merge commit: its changes were made on the branch it merged
        self.removed: list[str] = []
        self.added: list[str] = []
