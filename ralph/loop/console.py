"""What the loop shows a person: on a terminal one live status line, otherwise one plain line
per event (for CI logs and pipes)."""

from __future__ import annotations

import sys
import threading
import time


class Console:
    def __init__(self, stream=None, live: bool | None = None):
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.started = time.monotonic()
        self.status_text = ""
        self.tokens = 0
        self._lock = threading.Lock()

    def elapsed(self) -> str:
        seconds = int(time.monotonic() - self.started)
        return f"{seconds // 60}:{seconds % 60:02d}"

    def event(self, text: str) -> None:
        with self._lock:
            if self.live:
                self.stream.write("\r\033[K")
            self.stream.write(f"[ralph {self.elapsed()}] {text}\n")
            if self.live and self.status_text:
                self._draw()
            self.stream.flush()

    def status(self, iteration: int, stage: str, item: str = "", tokens: int | None = None) -> None:
        if tokens is not None:
            self.tokens = tokens
        self.status_text = f"iteration {iteration} · {stage}" + (f" · {item}" if item else "")
        if self.live:
            with self._lock:
                self._draw()
                self.stream.flush()

    def _draw(self) -> None:
        tokens = f" · {self.tokens:,} tokens" if self.tokens else ""
        self.stream.write(f"\r\033[K{self.status_text} · {self.elapsed()}{tokens}")

    def close(self) -> None:
        if self.live:
            self.stream.write("\r\033[K")
            self.stream.flush()
