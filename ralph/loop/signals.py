"""SIGTERM and SIGHUP stop the loop the way Ctrl-C does. CI timeouts, `timeout(1)`, systemd and a
closed terminal send these; without a handler Python dies at once, leaving agents running and the
plan written but not committed."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """A stop signal arrived. A KeyboardInterrupt, so every path that cleans up after Ctrl-C
    cleans up after it too."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def signal_number(exc: KeyboardInterrupt) -> int:
    """The signal behind an interrupt: Ctrl-C is SIGINT."""
    return exc.signum if isinstance(exc, Stopped) else signal.SIGINT


@contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise Stopped in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread (e.g. ralph used as a library)
        return

    def raise_stopped(signum: int, frame: object) -> None:
        raise Stopped(signum)

    previous = {sig: signal.signal(sig, raise_stopped) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def deferred_signals() -> Iterator[None]:
    """While cleaning up after a stop, a second Ctrl-C or signal must not cut the cleanup short."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signals = (signal.SIGINT, *STOP_SIGNALS)
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
