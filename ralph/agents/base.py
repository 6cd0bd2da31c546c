"""What every agent adapter provides: how to start the CLI, and how to read its output."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ralph.agents.events import (
    CostEvent,
    ErrorEvent,
    Event,
    FailureEvent,
    JsonObject,
    ResultEvent,
    SessionEvent,
    TextEvent,
    ToolEvent,
    UsageEvent,
)


@dataclass
class Usage:
    """Token usage summed over a run, plus the context fill of its latest model turn."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0
    last_turn_context: int = 0
    context_window: int | None = None
    cost_usd: float | None = None

    def to_dict(self) -> dict[str, int | float]:
        return {key: value for key, value in self.__dict__.items() if value is not None}

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_creation_tokens + self.cache_read_tokens


@dataclass
class Invocation:
    argv: list[str]
    stdin: bytes | None
    env: dict[str, str]


class Adapter:
    """Base adapter. Subclasses set `name` and implement `invocation`; `parse_line` may be
    overridden to read the CLI's event stream."""

    name = "base"
    program = ""
    default_context_window = 200_000
    install_hint = ""  # how to install the CLI, for the error when it is not found
    auth_hint = ""  # how to log in, for the error when it cannot authenticate
    # Where the CLI keeps its login, settings and sessions, relative to $HOME: writable inside
    # ralph's sandbox (ralph/loop/process/sandbox.py), where the rest of $HOME is read-only. A folder
    # (a trailing /) is made when missing, as the CLI would make it on its first run.
    state_paths: tuple[str, ...] = ()
    # Whether the CLI reports each run's cost (Claude's result, opencode's steps): True; never
    # (codex, gemini): False, so a run is priced by its model or unknown; None: ralph cannot know
    # in advance (a command of yours). `--max-cost` is refused up front only on False.
    reports_cost: bool | None = None

    def invocation(
        self, prompt: str, prompt_file: str, env: dict[str, str], model: str | None = None
    ) -> Invocation:
        """How to start one run; `model`: this run's model (a stage's own), else the adapter's."""
        raise NotImplementedError

    def parse_line(self, line: str) -> list[Event]:
        return []


class CliAdapter(Adapter):
    """A named agent CLI: its program (or a path to it), a model option, extra arguments."""

    def __init__(
        self, model: str | None = None, extra_args: list[str] | None = None, program: str | None = None
    ):
        self.model = model
        self.extra_args = list(extra_args or [])
        self.program = program or type(self).program


def json_object(line: str) -> JsonObject | None:
    """The JSON object on an output line, or None for anything else (plain text, arrays)."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        value = json.loads(line)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


class RunTracker:
    """Accumulates one run's events: usage, the final result, errors."""

    def __init__(self) -> None:
        self.usage = Usage()
        self.result: ResultEvent | None = None
        self.session_id: str | None = None
        self.model: str | None = None  # as the CLI reports it: prices a run whose cost it does not say
        self.errors: list[str] = []
        self.failure: FailureEvent | None = None  # why the run failed, as its CLI reported it
        self.ignored: list[str] = []  # reported numbers that made no sense, left out of the sums
        self.turns = 0  # the model's turns seen (text or a tool call): the agent got to work

    def add(self, event: Event) -> None:
        problem = _implausible(event)
        if problem:
            self.ignored.append(problem)
            return
        usage = self.usage
        match event:
            case UsageEvent():
                usage.input_tokens += event.input_tokens
                usage.output_tokens += event.output_tokens
                usage.cache_creation_tokens += event.cache_creation_tokens
                usage.cache_read_tokens += event.cache_read_tokens
                usage.last_turn_context = (
                    event.input_tokens + event.cache_creation_tokens + event.cache_read_tokens
                )
            case ResultEvent():
                self.result = event
                totals = event.usage
                if totals is not None:  # the CLI's own totals are authoritative over per-turn sums
                    usage.input_tokens = totals.input_tokens
                    usage.output_tokens = totals.output_tokens
                    usage.cache_creation_tokens = totals.cache_creation_tokens
                    usage.cache_read_tokens = totals.cache_read_tokens
                if event.cost_usd is not None:
                    usage.cost_usd = event.cost_usd
                if event.context_window:
                    usage.context_window = event.context_window
            case CostEvent():
                usage.cost_usd = (usage.cost_usd or 0) + event.cost_usd
            case TextEvent() | ToolEvent():
                self.turns += 1
            case SessionEvent():
                self.session_id = event.session_id
                self.model = event.model or self.model
            case ErrorEvent():
                self.errors.append(str(event.message))  # a CLI's JSON may put a non-string there
            case FailureEvent():
                if self.failure is None or event.kind != "other":  # the most telling one
                    self.failure = event

    @property
    def reported_error(self) -> bool:
        return self.result is not None and self.result.is_error


_COUNTS = ("input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens")
_MAX_COUNT = 10**12  # more tokens than any run spends: a number past it is garbage
_MAX_COST = 10**6


def _implausible(event: Event) -> str | None:
    """Why an event's numbers cannot be counted (a string count, a negative cost, 1e400), or None.
    One malformed line from an agent must not end the loop."""
    usages = [event] if isinstance(event, UsageEvent) else []
    if isinstance(event, ResultEvent) and event.usage is not None:
        usages.append(event.usage)
    for usage in usages:
        for name in _COUNTS:
            value = getattr(usage, name)
            if type(value) is not int or not 0 <= value <= _MAX_COUNT:
                return f"{name} {value!r}"
    costs = [event.cost_usd] if isinstance(event, CostEvent | ResultEvent) else []
    for cost in costs:
        if cost is not None and (type(cost) not in (int, float) or not 0 <= cost <= _MAX_COST):
            return f"cost_usd {cost!r}"
    window = event.context_window if isinstance(event, ResultEvent) else None
    if window is not None and (type(window) is not int or not 0 < window <= _MAX_COUNT):
        return f"context_window {window!r}"
    return None
