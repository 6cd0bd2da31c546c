"""An agent that failed is not always a task that failed. A run that ended with an error (a non-zero
exit, or an error its CLI reported) and changed nothing, neither a file of its work tree nor the
plan, is judged by its reach:

- a crash signal (the agent killed by SIGSEGV, SIGKILL, ...) looks transient: waited out (config
  `agent_retry_ms`, doubling), run again, no attempt (rate limits, network errors and overloaded
  servers are ralph.loop.runs.rate_limits' part, waited out the same way);
- an error on one BUILD task from an agent that works (the run got as far as the model's turns,
  or an earlier run of this construct did something) is that task's: the stage records it as a
  failed attempt and the loop goes on with other tasks;
- anything else (an error before the agent did anything: a usage error, a broken install) is run
  again once, at once; the same error again, or the same error on another item or stage, ends the
  loop with AGENT_FAILING and the agent's last error lines, after two runs.

`max_agent_failures` failures in a row of any kind, with no run between that did something, end
the loop too. The evidence is the run's exit, its events and what it changed, measured around it;
its words only tell one error from another (the same error, on another task, is the agent's)."""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ralph.errors import GitError, RalphError
from ralph.loop.runs.agent_process import AgentResult
from ralph.secrets import redact
from ralph.store.git import Repo

if TYPE_CHECKING:
    from ralph.loop.observe.journal import Journal
    from ralph.loop.process.supervisor import Supervisor
    from ralph.loop.runs.permissions import Snapshot

ERROR_LINES = 10  # of the agent's output, in the journal and the final report
MAX_WAIT_S = 300.0  # one wait, however many failures came before
_STATE = b'{"t": "state"'
# _STATE to the end of its line (as bytes.splitlines cuts them: at \r\n, \r or \n), its ending too.
_STATE_REST = re.compile(re.escape(_STATE) + rb"[^\r\n]*(?:\r\n|\r|\n)?")


def without_state(data: bytes) -> bytes:
    """`data` without its lines that start with _STATE: found by a search in C, not a pass of
    Python over the lines of a plan of 10,000."""
    return b"".join(_state_free(data))


def _state_free(data: bytes) -> list[memoryview]:
    """The pieces of `data` around its lines that start with _STATE, as views (not copies of a
    long plan: a digest takes them as they are)."""
    view, kept, end = memoryview(data), [], 0
    for found in _STATE_REST.finditer(data):
        start = found.start()
        if start and data[start - 1] not in b"\r\n":
            continue  # inside a line: not where one starts (no line starts within this one either)
        kept.append(view[end:start])
        end = found.end()
    kept.append(view[end:])
    return kept


WorkState = tuple[str | None, AbstractSet[str]]  # HEAD, and the paths git lists as changed


class Judgement(StrEnum):
    """What a run that failed without doing anything comes to (see the module's docstring)."""

    WAIT = "wait"  # transient: waited out, then run again; no attempt
    AGAIN = "again"  # run again at once, once; no attempt
    TASK_ERROR = "task_error"  # the task's failed attempt: the stage judges it


# What varies between two runs' words for the same error: times, durations, long hex ids, temporary
# paths. Other numbers stay: "commit 07" and "commit 08" are two tasks' errors, not one.
_VARYING = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+Z?|\b\d+(?:\.\d+)?\s*(?:ms|s)\b|\b[0-9a-f]{8,}\b|/tmp/\S+")


class AgentFailing(RalphError):
    """The agent failed without doing anything too many times in a row: the loop stops with
    AGENT_FAILING (exit 12). `lines`: its last error lines, redacted."""

    def __init__(self, message: str, lines: list[str]):
        super().__init__(message)
        self.lines = lines


def work_marks(root: Path, own: re.Pattern[str], state: WorkState | None = None) -> str:
    """What a run could change in the checkout at `root`, as one hash: HEAD, every changed or new
    file's content but ralph's `own` (its lock, its temporary files), and plan.jsonl without the
    loop's state record (the loop writes that around every run). `state`: HEAD and the changed
    paths as git listed them a moment ago (the loop's snapshot before the run), else asked now."""
    if not root.is_dir():
        return "(gone)"  # the run removed its work tree: it did something (workspace's TreeRemoved)
    try:
        if state is None:
            head, _, listed = Repo(root).changes.work_state(read_only=True)  # one git run per agent run
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
        inner = hashlib.sha256()
        for part in _state_free(data) if path == "plan.jsonl" else (data,):
            inner.update(part)
        digest.update(inner.digest())
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


def error_mark(lines: list[str], own_words: Iterable[str]) -> str:
    """An error's identity across runs and items: its lines with the item's own words (its id, its
    name) and what varies from run to run (times, hex ids, temporary paths) taken out, hashed."""
    text = "\n".join(lines)
    for word in sorted((w for w in own_words if w), key=len, reverse=True):
        text = text.replace(word, "@")
    text = _VARYING.sub("#", text)
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()[:16]


def crashed(result: AgentResult) -> bool:
    """Killed by a signal of its own (a segfault, the kernel's OOM killer): not a verdict on the
    task or on how the agent is set up. A shell reports such a child's end as 128 + the signal."""
    code = result.run.exit_code
    return code is not None and (code < 0 or 128 < code <= 128 + 64)


class _Failed(NamedTuple):
    stage: str
    item: str | None
    mark: str


class AgentFailures:
    """The agent failures in a row, across items and the parallel builds (one memory, shared)."""

    def __init__(
        self,
        limit: int,
        first_wait_s: float,
        journal: Journal,
        say: Callable[[str], None],  # a line on the console
        supervisor: Supervisor,
        deadline_check: Callable[[], None],  # raises once the time budget is spent
    ):
        self.limit, self.first_wait_s = limit, first_wait_s
        self.journal, self.say, self.supervisor = journal, say, supervisor
        self.deadline_check = deadline_check
        self.in_a_row = 0
        self.worked = False  # a run of this construct did something: the agent is set up right
        self._last: _Failed | None = None  # the last failure, while no run did something since
        # What ended the loop: a parallel build's run that fails after it neither counts nor starts
        # again, and ends with the same words (the limit's count, not one more).
        self._ended: AgentFailing | None = None
        self._lock = threading.Lock()

    def good(self) -> None:
        """A run that did something, or failed at its work: the agent works."""
        with self._lock:
            self.in_a_row, self._last, self.worked = 0, None, True

    def judge(
        self, result: AgentResult, stage: str, item: str | None, own_words: Iterable[str] = ()
    ) -> Judgement:
        """A run that failed without doing anything: what it comes to. Raises AgentFailing when
        the agent itself is what fails (see the module's docstring)."""
        lines = error_lines(result)
        now = _Failed(stage, item, error_mark(lines, [*(own_words), *([item] if item else [])]))
        how = f"without doing anything ({result.describe()}); its last log: {result.log_path}"
        with self._lock:  # the ending decided and set in one step: no build's run starts after it
            self._raise_if_ended()  # another build's run ended the loop first: its words stand
            last, self._last = self._last, now
            works = self.worked or result.tracker.turns > 0
            judgement = _judgement(result, now, last, works)
            if judgement is not Judgement.TASK_ERROR:
                self.in_a_row += 1
            count = self.in_a_row
            if judgement is None:
                self._ended = AgentFailing(f"the agent failed the same way {_where(now, last)} {how}", lines)
            elif count >= self.limit:
                self._ended = AgentFailing(f"the agent failed {count} times in a row {how}", lines)
            ending = self._ended
            self.journal.event(  # under the lock: the journal's order is the decisions' (starting)
                "agent_failed",
                stage=stage,
                item=item,
                exit_code=result.run.exit_code,
                in_a_row=count,
                judgement=str(judgement) if judgement else "agent_failing",
                log=str(result.log_path),
                lines=lines,
            )
        if ending is not None:
            raise ending
        assert judgement is not None  # for mypy: no judgement ended the loop above
        return judgement

    @contextmanager
    def starting(self) -> Iterator[None]:
        """Entered as a run begins: AgentFailing once the loop has ended. While a run's start is
        written down no failure is judged, so no run begins after the ending."""
        with self._lock:
            self._raise_if_ended()
            yield

    def _raise_if_ended(self) -> None:
        ended = self._ended  # one read: set once, never unset
        if ended is not None:
            raise AgentFailing(str(ended), ended.lines)

    def wait(self, result: AgentResult, stage: str, item: str | None, judgement: Judgement) -> bool:
        """Before running a failed run again: a transient failure is waited out (doubling). True
        to run it again; False when ralph is stopping meanwhile; AgentFailing when another build's
        run ended the loop."""
        seconds = (
            min(MAX_WAIT_S, self.first_wait_s * 2 ** (self.in_a_row - 1))
            if judgement is Judgement.WAIT
            else 0.0
        )
        when = f"in {seconds:g}s" if seconds else "once more"
        self.say(
            f"{stage} {item or ''}: the agent failed without doing anything ({result.describe()});"
            f" running it again {when} (not an attempt)"
        )
        return self._sleep(seconds)

    def _sleep(self, seconds: float) -> bool:
        """Raises AgentFailing when another build's run ended the loop meanwhile: no run starts
        again after that."""
        end = time.monotonic() + seconds
        while True:
            self._raise_if_ended()
            if self.supervisor.stopping:
                return False
            if (left := end - time.monotonic()) <= 0:
                return True
            self.deadline_check()
            time.sleep(min(left, 0.1))


def _judgement(result: AgentResult, now: _Failed, last: _Failed | None, works: bool) -> Judgement | None:
    """None: the agent fails, whatever the item (the same error on another item or stage, or the
    same error twice on one item before the agent did anything)."""
    if crashed(result):
        return Judgement.WAIT
    if last is not None and last.mark == now.mark and (last.stage, last.item) != (now.stage, now.item):
        return None  # the same error on another item: the agent's, not the items'
    if works and now.stage == "BUILD" and now.item:
        return Judgement.TASK_ERROR
    if last is not None and last == now:
        return None  # run again once already, and failed the same way
    return Judgement.AGAIN


def _where(now: _Failed, last: _Failed | None) -> str:
    """Where the same error came twice: on one item, or on two."""
    if last is None or (last.stage, last.item) == (now.stage, now.item):
        return "twice"
    first, then = (" ".join(filter(None, (f.stage, f.item))) for f in (last, now))
    return f"on {first} and on {then}"


def state_of(snapshot: Snapshot) -> WorkState:
    """HEAD and the changed paths of a lent checkout as a stage found it, for the agent run's
    marks (its lock and temporary files left out, as the marks leave them out)."""
    return snapshot.head, snapshot.dirty
