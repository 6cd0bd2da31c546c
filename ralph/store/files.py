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
