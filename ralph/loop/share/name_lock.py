"""One live runner per name per host and shared remote. Claims name their runner; a runner adopts
the claims its name holds as left by its own run before (a restart), so two live runners of one
name would each take the other's tasks for its own and build every one twice. A runner therefore
holds its name on this host for as long as it runs: a second run under that name against the same
remote branch is refused at its start. Where the system has them (Linux), the name is an abstract
Unix socket, which exists only while its process lives and leaves no file behind; elsewhere, an
flock on a file in the temporary folder, which the kernel drops with its process too.

Runners on other hosts that share a name are told apart by the host their claims record
(ralph.usecases.claim_refs.held_by)."""

from __future__ import annotations

import hashlib
import socket
import sys
import tempfile
from pathlib import Path
from typing import IO

from ralph.errors import Busy


class NameLock:
    """The runner's name, held on this host until `release` (or the process's end)."""

    def __init__(self, remote_url: str, branch: str, runner: str):
        self.runner, self.where = runner, f"{remote_url} {branch}"
        key = hashlib.sha256(f"{remote_url}\0{branch}\0{runner}".encode()).hexdigest()[:32]
        self._socket: socket.socket | None = None
        self._file: IO[bytes] | None = None
        if sys.platform.startswith("linux"):
            self._hold_socket(key)
        else:
            self._hold_file(key)

    def _hold_socket(self, key: str) -> None:
        held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            held.bind(b"\0ralph-runner-" + key.encode())
        except OSError:
            held.close()
            raise self._busy() from None
        self._socket = held

    def _hold_file(self, key: str) -> None:
        import fcntl

        path = Path(tempfile.gettempdir()) / f"ralph-runner-{key}.lock"
        held = open(path, "ab")  # noqa: SIM115 - held open for the run's length
        try:
            fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            held.close()
            raise self._busy() from None
        self._file = held

    def _busy(self) -> Busy:
        return Busy(
            f"another ralph runs as runner {self.runner!r} on this host against {self.where}:"
            " give each runner its own --runner name"
        )

    def release(self) -> None:
        for held in (self._socket, self._file):
            if held is not None:
                held.close()
        self._socket = self._file = None
