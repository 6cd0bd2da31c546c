"""SIGTERM and SIGHUP stop the loop the way Ctrl-C does. CI timeouts, `timeout(1)`, systemd and a
closed terminal send these; without a handler Python dies at once, leaving agents running and the
plan written but not committed. The exit code is 128 + the signal (130, 143, 129)."""

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
    """While inside, SIGTERM and SIGHUP raise Stopped in the main thread and Ctrl-C raises
    KeyboardInterrupt, but only the first of them does: a second one (systemd sends SIGHUP right
    after SIGTERM; a person presses Ctrl-C twice) would land in the cleanup after the first, before
    it can defer signals, and leave agents running. A signal ralph was started ignoring (nohup, a
    background job's Ctrl-C) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread (e.g. ralph used as a library)
        return
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        if stopping:
            return  # the run is already being stopped
        stopping = True
        raise KeyboardInterrupt if signum == signal.SIGINT else Stopped(signum)

    previous = {}
    for sig in (signal.SIGINT, *STOP_SIGNALS):
        current = signal.getsignal(sig)
        if current is signal.SIG_IGN or (sig == signal.SIGINT and current is not signal.default_int_handler):
            continue  # the parent's choice, or an embedding program's own Ctrl-C handling
        previous[sig] = signal.signal(sig, stop)
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
