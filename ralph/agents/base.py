"""What every agent adapter provides: how to start the CLI, and how to read its output."""

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class Event:
    """One thing the agent reported: kind is text, tool, usage, result or error."""

    kind: str
    data: dict = field(default_factory=dict)


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

    def to_dict(self) -> dict:
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

    def invocation(self, prompt: str, prompt_file: str, env: dict[str, str]) -> Invocation:
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


def json_object(line: str) -> dict | None:
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
        self.result: dict | None = None
        self.session_id: str | None = None
        self.errors: list[str] = []

    def add(self, event: Event) -> None:
        data = event.data
        if event.kind == "usage":
            self.usage.input_tokens += data.get("input_tokens", 0)
            self.usage.output_tokens += data.get("output_tokens", 0)
            self.usage.cache_creation_tokens += data.get("cache_creation_tokens", 0)
            self.usage.cache_read_tokens += data.get("cache_read_tokens", 0)
            self.usage.last_turn_context = (
                data.get("input_tokens", 0)
                + data.get("cache_creation_tokens", 0)
                + data.get("cache_read_tokens", 0)
            )
        elif event.kind == "result":
            self.result = data
            totals = data.get("usage")
            if totals:  # the CLI's own totals are authoritative over per-turn sums
                self.usage.input_tokens = totals.get("input_tokens", self.usage.input_tokens)
                self.usage.output_tokens = totals.get("output_tokens", self.usage.output_tokens)
                self.usage.cache_creation_tokens = totals.get(
                    "cache_creation_tokens", self.usage.cache_creation_tokens
                )
                self.usage.cache_read_tokens = totals.get("cache_read_tokens", self.usage.cache_read_tokens)
            if data.get("cost_usd") is not None:
                self.usage.cost_usd = data["cost_usd"]
            if data.get("context_window"):
                self.usage.context_window = data["context_window"]
        elif event.kind == "cost":
            self.usage.cost_usd = (self.usage.cost_usd or 0) + data["cost_usd"]
        elif event.kind == "session":
            self.session_id = data.get("session_id")
        elif event.kind == "error":
            self.errors.append(str(data.get("message", data)))

    @property
    def reported_error(self) -> bool:
        return bool(self.result and self.result.get("is_error"))
