"""The loop's agent runs (ralph.loop.stages.retries.AgentRuns) over the real AgentRunner, with a
supervisor that starts no process: each run prints what a script says, line by line through the
run's monitor as a real agent's output is read. So the prompt, the agent's environment, the
journal and console, the context monitor, the pricing and AgentRuns' waits, retries and
compactions are ralph's own, and a test of them costs no agent process.

A test gives each stage the runs it will see, in order (`Reply`), and reads back what each run
was started with (`Started`)."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ralph.agents import make_adapter
from ralph.loop.observe.console import Console
from ralph.loop.observe.journal import Journal
from ralph.loop.process.supervisor import BudgetSpent, Monitor, RunResult, Supervisor
from ralph.loop.runs.agent_process import AgentRunner
from ralph.loop.stages.retries import Deadline
from ralph.loop.stages.workspace import Workspace
from ralph.plan.records import StopReason
from ralph.usecases.settings import Settings


def turn(context_tokens: int) -> str:
    """A Claude-style model turn whose context holds `context_tokens` (all input, no output)."""
    usage = {"input_tokens": context_tokens, "output_tokens": 0}
    return json.dumps({"type": "assistant", "message": {"content": [], "usage": usage}})


def failed(status: int, message: str) -> str:
    """The result line of a Claude-style run that ended with an API error."""
    result = {"type": "result", "subtype": "success", "is_error": True, "api_error_status": status}
    return json.dumps({**result, "result": message})


@dataclass
class Reply:
    """One scripted run: what it does in the tree it runs in first (`act`), the lines it prints,
    and its exit code (when nothing stops it)."""

    lines: list[str] = field(default_factory=list)
    exit_code: int = 0
    act: Callable[[Path], None] | None = None


@dataclass
class Started:
    """A run as the supervisor was asked to start it."""

    stage: str
    model: str | None  # $RALPH_MODEL: the model the agent is told to use
    env: dict[str, str] = field(repr=False)
    log: Path = field(repr=False)
    prompt: str = field(repr=False)


class ScriptedSupervisor(Supervisor):
    """Runs a stage's next Reply instead of a process, as Supervisor.run would report it: the
    monitor reads each line until it gives a reason to stop (the rest is never read), the log
    holds the output, and a run stopped for the budget raises BudgetSpent."""

    def __init__(self, replies: dict[str, list[Reply]]):
        super().__init__()
        self.replies = replies
        self.started: list[Started] = []

    def run(
        self,
        argv: list[str],
        *,
        cwd: Path,
        env: dict[str, str],
        log_path: Path,
        timeout_s: float | None,
        stdin_data: bytes | None = None,
        monitor: Monitor | None = None,
        tail_lines: int = 60,
        outlives_stop: bool = False,
    ) -> RunResult:
        stage = str(env["RALPH_STAGE"])  # a Stage, which the real env makes a plain string
        prompt = (stdin_data or b"").decode()
        self.started.append(Started(stage, env.get("RALPH_MODEL"), env, log_path, prompt))
        queue = self.replies.get(stage)
        assert queue, f"no scripted run left for {stage}"
        reply = queue.pop(0)
        if reply.act is not None:
            reply.act(cwd)
        stop: StopReason | None = None
        with open(log_path, "a", encoding="utf-8") as log:
            for line in reply.lines:
                log.write(line + "\n")
                log.flush()  # a monitor's note is appended to the same file
                stop = monitor(line) if monitor is not None else None
                if stop:
                    break
        if stop is StopReason.BUDGET:
            raise BudgetSpent("the time budget is spent", stopped_run=True)
        exit_code = None if stop else reply.exit_code
        return RunResult(exit_code, stop, 0.0, log_path, reply.lines[-tail_lines:])


@dataclass
class Runs:
    """A workspace over the repository at `root` whose agent runs are scripted."""

    workspace: Workspace
    supervisor: ScriptedSupervisor
    journal: Journal
    console: io.StringIO


def scripted_runs(root: Path, settings: Settings, replies: dict[str, list[Reply]]) -> Runs:
    """The loop's workspace at `root` (Workspace.at, as construct makes it) with a command agent
    whose runs `replies` scripts, journalling to build/ralph-logs/events.jsonl."""
    journal = Journal(root / "build" / "ralph-logs" / "events.jsonl")
    said = io.StringIO()
    console = Console(said, live=False)
    supervisor = ScriptedSupervisor(replies)
    runner = AgentRunner(root, settings, make_adapter("command", ["agent"]), journal, console, supervisor)
    workspace = Workspace.at(root, settings, runner, journal, console, Deadline(None))
    return Runs(workspace, supervisor, journal, said)


class FakeClock:
    """time's clock for a module that waits (monkeypatched as its `time`): sleeping moves the
    clock on at once, and `slept` adds up what was asked."""

    def __init__(self) -> None:
        self.now = time.time()
        self.at = time.monotonic()
        self.slept = 0.0

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.at

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.at += seconds
        self.slept += seconds
