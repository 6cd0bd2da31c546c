"""`ralph watch` followed in this process: a run in BUILD written as a construct writes it (the
journal through ralph's Journal, the agent's transcript through its Transcript), the construct lock
held by the test as the run's own, and watch's sleep between polls ending the run, so that watch
draws the run, sees it end and says how it ended. No process, no waiting."""

from __future__ import annotations

import io
import json
import time
from contextlib import ExitStack
from pathlib import Path
from types import SimpleNamespace
from typing import TextIO

import pytest

from ralph.agents.events import ToolEvent
from ralph.agents.transcript import Transcript, transcript_path
from ralph.loop.observe import follow, watch
from ralph.loop.observe.journal import Journal
from ralph.store.lock import exclusive_run
from ralph.usecases import runs


class Tty(io.StringIO):
    """A stream that says it is a terminal, as a pseudo-terminal does: what is written stays readable."""

    def isatty(self) -> bool:
        return True


class HeldRun:
    """A construct run in its first BUILD, its agent running task `item` named `name`, after a
    gate that failed saying `gate_output`; the agent's transcript has a Bash call of `command` and
    the plain line `output`. Leaving it (or `end()`) ends it COMPLETE and lets go of the lock."""

    def __init__(self, root: Path, item: str, name: str, gate_output: str, command: str, output: str):
        self.root, self._held, self.ended = root, ExitStack(), False
        self._held.enter_context(exclusive_run(runs.lock_path(root), "ralph construct"))  # before the journal
        journal = Journal(root / runs.JOURNAL)
        self._construct = journal.span("construct", spec="specs/app.md")
        journal.span("iteration", iteration=1)
        journal.span("stage", stage="BUILD", iteration=1)
        fields = {"accepted": 0, "total": 1, "max_iterations": 10, "max_minutes": None, "max_cost_usd": None}
        journal.event("progress", **fields)
        gate_log = f"build/ralph-logs/ralph-20260101-000000-gate-{item}.log"
        gate = journal.span("gate", item=item, iteration=1, log=gate_log)
        gate.end(ok=False, summary=gate_output)
        self.log = f"build/ralph-logs/ralph-20260101-000001-build-{item}.log"
        self._agent = journal.span("agent", stage="BUILD", item=item, name=name, iteration=1, log=self.log)
        transcript = Transcript(transcript_path(root / self.log), f"BUILD {item}: {Path(self.log).name}")
        call = ToolEvent("Bash", {"command": command})
        transcript.add(json.dumps({"type": "assistant"}), [call])
        transcript.add(output, [])  # plain output, not an event: kept as the agent printed it
        transcript.close()

    def end(self) -> None:
        if self.ended:
            return
        self.ended = True
        self._agent.end(exit_code=0)
        self._construct.end(outcome="COMPLETE")
        self._held.close()

    def __enter__(self) -> HeldRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.end()


def watched(run: HeldRun, stream: TextIO, monkeypatch: pytest.MonkeyPatch, once: bool = False) -> int:
    """`ralph watch` (`--once`) on `stream`, keys from nowhere; the run ends at watch's first sleep
    between polls (watch's and follow's own `time`: no other sleep is touched)."""
    polls = []

    def sleep(seconds: float) -> None:
        polls.append(seconds)
        assert len(polls) == 1, "watch went on polling after the run ended"  # never a hang
        run.end()

    for module in (watch, follow):
        monkeypatch.setattr(module, "time", SimpleNamespace(time=time.time, sleep=sleep))
    return watch.watch(run.root, stream, once=once, err=stream, keyboard=None)
