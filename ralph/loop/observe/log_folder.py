"""The log folder (build/ralph-logs) as ralph decided it at the start of a run: resolved and opened
then, never followed through a link it did not make.

In a serial run the agent's work tree is the repository's, so an agent can rename `build/` and put
a link (or a folder of its own) at build/ralph-logs: ralph then wrote its journal, prompts and
transcripts wherever the link pointed, and committed the link with the build. Now the folder's
identity (device and inode of it and of `build/`) is taken at the start, the journal is written
through the folder's open descriptor, and after each run a folder that is not the one of the start
is a permission violation: what took its place is moved into the folder, which is put back."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from ralph.errors import Refused


class LogFolderRefused(Refused):
    """The log folder, or a folder above it in the repository, is a symbolic link at the start."""


class LogFolder:
    def __init__(self, root: Path, relative: Path):
        self.root, self.relative = root, relative
        self.path = root / relative
        self.fd: int | None = None
        self._ids: dict[Path, tuple[int, int]] = {}

    def open(self) -> None:
        """Made if need be (no link followed), its identity taken, held open. Refuses a link."""
        current = self.root
        for part in self.relative.parts:
            current = current / part
            if current.is_symlink():
                raise LogFolderRefused(
                    f"{current.relative_to(self.root)} is a symbolic link (to {os.readlink(current)}):"
                    " ralph writes its logs only into a folder of its own; remove the link"
                )
            with contextlib.suppress(FileExistsError):
                current.mkdir()
            stat = current.lstat()
            self._ids[current] = (stat.st_dev, stat.st_ino)
        self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def replaced(self) -> list[str]:
        """The folders on the way (build/, build/ralph-logs) that are no longer the start's."""
        found = []
        for path, ids in self._ids.items():
            try:
                stat = path.lstat()
                same = (stat.st_dev, stat.st_ino) == ids
            except OSError:
                same = False
            if not same:
                found.append(str(path.relative_to(self.root)))
        return found

    def restore(self) -> str:
        """Put the start's folders back in their places; what stood there instead is moved into
        the log folder as `replaced-<time>-<name>` (a link is moved as the link, never followed).
        Returns where that went, or ""."""
        assert self.fd is not None
        now = Path(os.readlink(f"/proc/self/fd/{self.fd}"))  # where the start's folder is now
        kept = ""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for path in self._ids:  # outermost first
            ids = self._ids[path]
            if path.is_symlink() or path.exists():
                stat = path.lstat()
                if (stat.st_dev, stat.st_ino) == ids:
                    continue
                aside = now / f"replaced-{stamp}-{path.name}"
                os.rename(path, aside)
                kept = str(self.relative / aside.name)
                now = Path(os.readlink(f"/proc/self/fd/{self.fd}"))
            original = self._find(path, ids, now)
            if original is not None:
                os.rename(original, path)
            else:
                path.mkdir()
                self._ids[path] = (path.lstat().st_dev, path.lstat().st_ino)
            now = Path(os.readlink(f"/proc/self/fd/{self.fd}"))
        return kept

    def _find(self, path: Path, ids: tuple[int, int], logs_now: Path) -> Path | None:
        """Where the start's folder `path` is now: the log folder itself, or one of its parents."""
        for candidate in (logs_now, *logs_now.parents):
            with contextlib.suppress(OSError):
                stat = candidate.lstat()
                if (stat.st_dev, stat.st_ino) == ids:
                    return candidate
        return None
