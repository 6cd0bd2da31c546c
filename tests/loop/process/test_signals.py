"""Stop signals in ralph's own process: inside stop_signals_interrupt SIGTERM and SIGHUP raise
Stopped (a KeyboardInterrupt) once, a signal ralph was started ignoring stays ignored, and
deferred_signals keeps a cleanup from being cut short. Real signals, raised in this process; the
loop's behaviour on them is in test_construct.py's interrupt tests."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from ralph.loop.process.signals import Stopped, deferred_signals, signal_number, stop_signals_interrupt

pytestmark = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="signal handlers need the main thread"
)


@pytest.fixture(autouse=True)
def default_dispositions():
    """SIGTERM and SIGHUP at their defaults for each test, put back after: these tests are about
    what ralph does with dispositions it inherits, and a suite run under nohup (SIGHUP ignored) or
    from a `(cmd &)` shell would otherwise hand each test its own (see default_signals in
    tests/support/construct.py for the ralph processes the loop tests start)."""
    before = {sig: signal.signal(sig, signal.SIG_DFL) for sig in (signal.SIGTERM, signal.SIGHUP)}
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)


def deliver(sig: signal.Signals) -> None:
    """Raises the signal in this process and gives its Python handler the moment to run."""
    signal.raise_signal(sig)
    time.sleep(0.01)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_raises_stopped_once_and_the_handlers_are_put_back(sig):
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    with stop_signals_interrupt():
        with pytest.raises(Stopped) as stopped:
            deliver(sig)
        try:  # a second one lands in the cleanup after the first: nothing happens
            deliver(signal.SIGTERM)
            deliver(signal.SIGHUP)
        except KeyboardInterrupt as second:  # not let through: pytest would take it as the user's Ctrl-C
            pytest.fail(f"a second signal interrupted the cleanup: {second!r}")
    assert isinstance(stopped.value, KeyboardInterrupt) and signal_number(stopped.value) == sig
    assert {s: signal.getsignal(s) for s in before} == before


def test_ctrl_c_is_sigint():
    assert signal_number(KeyboardInterrupt()) == signal.SIGINT


def test_a_signal_ralph_was_started_ignoring_stays_ignored():
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        with stop_signals_interrupt():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            deliver(signal.SIGHUP)  # ignored: no Stopped
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_signals_during_a_deferred_cleanup_are_ignored_and_the_handlers_put_back():
    with stop_signals_interrupt():
        handler = signal.getsignal(signal.SIGTERM)
        with deferred_signals():
            try:
                deliver(signal.SIGTERM)
                deliver(signal.SIGHUP)
            except KeyboardInterrupt as stop:
                pytest.fail(f"a signal cut the cleanup short: {stop!r}")
            finished = True
        assert signal.getsignal(signal.SIGTERM) is handler
    assert finished
