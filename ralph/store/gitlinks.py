"""Submodules' `.git` links, as they are before and after an agent run.

A submodule's `.git` is a one-line file in the work tree (`gitdir: ../.git/modules/lib`): agents
write the work tree, and an agent that replaces it with a repository of its own (whose config
sets core.fsmonitor, or core.worktree) has git run that config at the person's next `git status`
(ralph's own never goes into a submodule: ralph.store.git). The sandbox binds each link read-only,
but a folder holding one can still be renamed and a new one made; so each run's link, and the
config of the git directory it leads to, are compared before and after it, and a change is a
permission violation, undone (ralph.loop.tree.work_tree.restore_links).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

_MAX_BYTES = 1 << 20


class Link(NamedTuple):
    """A submodule's `.git` entry: what it is (file, folder, link, missing), its content (a file's
    bytes, a link's target), the inode of a folder, and the config of the git directory it names."""

    path: str
    kind: str
    content: bytes = b""
    inode: int = 0
    config: bytes | None = None


def read_links(root: Path, gitlinks: list[str]) -> frozenset[Link]:
    return frozenset(read_link(root, path) for path in gitlinks)


def read_link(root: Path, path: str) -> Link:
    dot_git = root / path / ".git"
    if through_a_link(root, path):  # never read (or, undoing, write) where an agent's link leads
        return Link(path, "behind a link")
    try:
        if dot_git.is_symlink():
            return Link(path, "link", os.fsencode(os.readlink(dot_git)))
        if dot_git.is_dir():
            return Link(path, "folder", b"", dot_git.stat().st_ino, _config(dot_git))
        data = _small_file(dot_git)
        if data is None:  # a FIFO, a device, a huge file: never read (a FIFO would hang ralph)
            return Link(path, "odd", b"", dot_git.lstat().st_ino)
    except FileNotFoundError:
        return Link(path, "missing")
    except OSError:  # NotADirectoryError (a file where the submodule's folder was), no access
        return Link(path, "unreadable")
    text = data.decode("utf-8", "surrogateescape")
    named = Path(text.removeprefix("gitdir:").strip()) if text.startswith("gitdir:") else None
    git_dir = named if named is None or named.is_absolute() else dot_git.parent / named
    return Link(path, "file", data, 0, _config(git_dir) if git_dir else None)


def through_a_link(root: Path, path: str) -> Path | None:
    """The first folder on the way from `root` to the submodule `path` (itself included) that is
    a symbolic link, if any."""
    folder = root
    for part in Path(path).parts:
        folder = folder / part
        if folder.is_symlink():
            return folder
    return None


def _config(git_dir: Path) -> bytes | None:
    try:
        return _small_file(git_dir / "config")
    except OSError:
        return None


def _small_file(path: Path) -> bytes | None:
    """The bytes of `path` when it is a regular file of at most a megabyte, else None."""
    import stat

    found = path.stat()
    if not stat.S_ISREG(found.st_mode) or found.st_size > _MAX_BYTES:
        return None
    with open(path, "rb") as handle:
        return handle.read(_MAX_BYTES + 1)


def changed_links(before: frozenset[Link], after: frozenset[Link]) -> list[str]:
    """The submodules whose link (or the config it leads to) differs, by path."""
    was = {link.path: link for link in before}
    return sorted(link.path for link in after if link.path in was and was[link.path] != link)
