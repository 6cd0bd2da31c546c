"""Writing files so that a reader or a crash never sees half of one."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temp file beside `path`, fsync it, then rename it over `path`. Fails (with the
    file as it was) in one line naming the file when the folder or disk does not allow it."""
    try:
        _replace(path, data)
    except OSError as exc:
        from ralph.errors import RalphError

        raise RalphError(f"cannot write {path.name}: {exc.strerror or exc}; it is unchanged") from None


def _replace(path: Path, data: bytes) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = _new_temp(temp)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            if path.exists():  # through the file made above, whatever has its name by now
                os.fchmod(handle.fileno(), path.stat().st_mode & 0o7777)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a power cut
    finally:
        os.close(directory)


# A temporary file is made afresh, never opened through what has its name: an agent that can write
# beside plan.jsonl (any agent but a fenced one's: ralph.loop.process.sandbox) could put a link there,
# named for the pid of the ralph that writes next, to have ralph write the plan into another file.
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _new_temp(temp: Path) -> int:
    """`temp`, made anew and opened for writing; whatever had its name (a file a killed writer of the
    same pid left, a link, an empty folder) removed first."""
    try:
        return os.open(temp, _TEMP_FLAGS, 0o666)
    except FileExistsError:
        _remove_temp(temp)
        return os.open(temp, _TEMP_FLAGS, 0o666)


def _remove_temp(path: Path) -> None:
    """A temporary file's name freed: a file or a link unlinked (never what a link points to), an
    empty folder removed; a folder with something in it is nobody's temporary file, and stays."""
    if path.is_dir() and not path.is_symlink():
        path.rmdir()
    else:
        path.unlink(missing_ok=True)


def remove_stale_temp_files(folder: Path, name: str) -> None:
    # Under the lock no other writer exists, so any temp file is left from a killed process. What
    # cannot go (a folder with files in it, made by someone else) does not stop the writer.
    for stale in folder.glob(f".{name}.*.tmp"):
        with contextlib.suppress(OSError):
            _remove_temp(stale)


def free_name(path: Path) -> Path:
    """`path`, or the first of `name-2.ext`, `name-3.ext`, ... that does not exist: a file kept
    for a person (a patch of work set aside) never replaces an older one of the same name."""
    candidate, number = path, 1
    while candidate.exists() or candidate.is_symlink():
        number += 1
        candidate = path.with_name(f"{path.stem}-{number}{path.suffix}")
    return candidate


def create_new(path: Path) -> Path:
    """An empty new file at free_name(path), made exclusively (two processes never get the same
    one); its folders are made as needed. Returns where it is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        candidate = free_name(path)
        try:
            os.close(os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            return candidate
        except FileExistsError:  # taken between the look and the open: the next free one
            continue
