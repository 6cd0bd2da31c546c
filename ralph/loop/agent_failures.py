"""An agent that failed is not a task that failed. A run that ended with an error (a non-zero exit,
or an error its CLI reported) and changed nothing, neither a file of its work tree nor the plan,
did none of its item's work: the agent itself failed (a crash, a usage error, a broken install).
Such a run is run again after a wait (config `agent_retry_ms`, doubling) and is no attempt: the
stage sees only the run that ended otherwise. Too many of them in a row, of any item, with no
other run between (config `max_agent_failures`), end the loop with AGENT_FAILING and the agent's
last error lines. Rate and usage limits and authentication errors are ralph.loop.limits' part.

The evidence is the run's exit and what it changed, measured around it: never its words."""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from pathlib import Path

from ralph.errors import GitError, RalphError
from ralph.loop.agentrun import AgentResult
from ralph.secrets import redact
from ralph.store.git import Repo

ERROR_LINES = 10  # of the agent's output, in the journal and the final report
MAX_WAIT_S = 300.0  # one wait, however many failures came before
_STATE = b'{"t": "state"'


WorkState = tuple[str | None, AbstractSet[str]]  # HEAD, and the paths git lists as changed


class AgentFailing(RalphError):
    """The agent failed without doing anything too many times in a row: the loop stops with
    AGENT_FAILING (exit 12). `lines`: its last error lines, redacted."""

    def __init__(self, message: str, lines: list[str]):
        super().__init__(message)
        self.lines = lines


def work_marks(root: Path, own: re.Pattern, state: WorkState | None = None) -> str:
    """What a run could change in the checkout at `root`, as one hash: HEAD, every changed or new
    file's content but ralph's `own` (its lock, its temporary files), and plan.jsonl without the
    loop's state record (the loop writes that around every run). `state`: HEAD and the changed
    paths as git listed them a moment ago (the loop's snapshot before the run), else asked now."""
    if not root.is_dir():
        return "(gone)"  # the run removed its work tree: it did something (workspace's TreeRemoved)
    try:
        if state is None:
            head, _, listed = Repo(root).work_state(read_only=True)  # one git run per agent run
            state = (head, listed)
        head, changed = state
        digest = hashlib.sha256(str(head).encode())
        paths = {path for path in changed if not own.fullmatch(path)}
    except GitError:  # its .git link broken or replaced: something, not nothing
        return "(no repository)"
    for path in sorted(paths | {"plan.jsonl"}):
        digest.update(b"\0" + os.fsencode(path) + b"\0")
        try:
            data = (root / path).read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            digest.update(b"(gone)")
            continue
        if path == "plan.jsonl":
            data = b"".join(line for line in data.splitlines(True) if not line.startswith(_STATE))
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


def did_nothing_and_failed(result: AgentResult, before: str, after: Callable[[], str]) -> bool:
    """The run ended with an error of its own (not stopped by ralph) and changed nothing. `after`
    gives the work marks now: asked only of a run that failed, as most runs do not."""
    return not result.ok and result.run.stop_reason is None and before == after()


def error_lines(result: AgentResult) -> list[str]:
    """What the agent said last, redacted: its CLI's error message, else its output's last lines."""
    failure = result.tracker.failure
    said = [failure.message] if failure is not None and failure.message else []
    lines = [line for line in result.run.tail if line.strip()][-ERROR_LINES:]
    return [redact(line)[:400] for line in (said + lines)[-ERROR_LINES:]]


class AgentFailures:
    """The agent failures in a row, across items and the parallel builds (one counter, shared)."""

    def __init__(self, limit: int, first_wait_s: float, journal, say, supervisor, deadline_check):
        self.limit, self.first_wait_s = limit, first_wait_s
        self.journal, self.say, self.supervisor = journal, say, supervisor
        self.deadline_check = deadline_check
        self.in_a_row = 0
        self._lock = threading.Lock()

    def good(self) -> None:
        """A run that did something, or failed at its work: the agent works."""
        with self._lock:
            self.in_a_row = 0

    def failed(self, result: AgentResult, stage: str, item: str | None) -> bool:
        """After a run that failed without doing anything: wait, and True to run it again; False
        when ralph is stopping meanwhile. Raises AgentFailing at the limit."""
        lines = error_lines(result)
        with self._lock:
            self.in_a_row += 1
            count = self.in_a_row
        self.journal.event(
            "agent_failed",
            stage=stage,
            item=item,
            exit_code=result.run.exit_code,
            in_a_row=count,
            log=str(result.log_path),
            lines=lines,
        )
        if count >= self.limit:
            raise AgentFailing(
                f"the agent failed {count} times in a row without doing anything ({result.describe()});"
                f" its last log: {result.log_path}",
                lines,
            )
        seconds = min(MAX_WAIT_S, self.first_wait_s * 2 ** (count - 1))
        self.say(
            f"{stage} {item or ''}: the agent failed without doing anything ({result.describe()});"
            f" running it again in {seconds:g}s (not an attempt)"
        )
        return self._sleep(seconds)

    def _sleep(self, seconds: float) -> bool:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self.deadline_check()
            if self.supervisor.stopping:
                return False
            time.sleep(min(left, 0.1))
        return True
