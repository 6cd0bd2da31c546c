"""Writing files so that a reader or a crash never sees half of one."""

from __future__ import annotations

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
    try:
        with open(temp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(temp, path.stat().st_mode & 0o7777)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a power cut
    finally:
        os.close(directory)


def remove_stale_temp_files(folder: Path, name: str) -> None:
    # Under the lock no other writer exists, so any temp file is left from a killed process.
    for stale in folder.glob(f".{name}.*.tmp"):
        stale.unlink(missing_ok=True)


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
