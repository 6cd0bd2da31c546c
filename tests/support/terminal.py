"""A real terminal for tests (a pseudo-terminal), and running ralph as a person would beside a run."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

from tests.support.construct import wait_for


def ralph_out(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ralph", "-C", str(root), *args], capture_output=True, text=True, timeout=120
    )


def let_go(root: Path) -> None:
    (root.parent / "agent-state").mkdir(exist_ok=True)
    (root.parent / "agent-state" / "go").write_text("")


class Terminal:
    """A pseudo-terminal of 40 rows and 200 columns, and what was written on it."""

    def __init__(self):
        self.leader, self.follower = pty.openpty()
        fcntl.ioctl(self.follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
        os.set_blocking(self.leader, False)
        self.chunks: list[bytes] = []
        self.closed = False

    def started(self, running: subprocess.Popen) -> Terminal:
        self.running = running
        os.close(self.follower)  # the child holds its own copy: EOF comes when it ends
        return self

    def seen(self) -> str:
        """What was written so far (reading what is waiting)."""
        while not self.closed and select.select([self.leader], [], [], 0.05)[0]:
            try:
                chunk = os.read(self.leader, 65536)
            except BlockingIOError:
                break
            except OSError:  # EIO: the terminal's last writer is gone
                chunk = b""
            self.closed = not chunk
            self.chunks.append(chunk)
        return b"".join(self.chunks).decode("utf-8", "replace")

    def finish(self) -> str:
        """Everything, once the program ended."""
        wait_for(lambda: self.seen() is not None and self.closed, "the program on the terminal ended", 300)
        self.running.wait(timeout=60)
        os.close(self.leader)
        return self.seen()


def terminal(argv: list[str]) -> Terminal:
    screen = Terminal()
    tty = screen.follower
    env = {**os.environ, "TERM": "xterm"}  # a terminal that takes escape sequences
    return screen.started(subprocess.Popen(argv, env=env, stdin=tty, stdout=tty, stderr=tty))
