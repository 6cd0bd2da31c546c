"""What an adapter reads from its CLI's output: one small frozen dataclass per kind of event.

Dataclasses rather than pydantic models: adapters parse every output line, and `ralph.agents`
stays cheap to import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# One JSON object an agent CLI printed, as parsed: its keys and values are the CLI's, read with
# .get() and isinstance checks, so its values stay Any.
JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """The CLI's session (or thread) id, and its model when it says."""

    session_id: str | None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class TextEvent:
    """Text the model wrote; `delta` when it continues the previous text (a streamed piece)."""

    text: str
    delta: bool = False


@dataclass(frozen=True, slots=True)
class ToolEvent:
    """A tool call: its name and input, and the exit code of a shell command when known."""

    name: str | None
    input: object = None
    exit_code: int | None = None


@dataclass(frozen=True, slots=True)
class ToolResultEvent:
    """What a tool call gave back (its output, as the CLI reports it), for the readable transcript."""

    output: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class UsageEvent:
    """Tokens of one model turn; as a result's `usage`, the run's totals. `input_tokens` excludes
    the cached ones."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0


@dataclass(frozen=True, slots=True)
class CostEvent:
    """The cost of one step, added to the run's."""

    cost_usd: float


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """An error message the CLI reported; the run may still succeed (see ResultEvent.is_error)."""

    message: str


@dataclass(frozen=True, slots=True)
class ResultEvent:
    """The end of a run as the CLI reports it; its totals, cost and context window win over the
    per-turn events."""

    is_error: bool
    subtype: str | None = None
    usage: UsageEvent | None = None
    cost_usd: float | None = None
    context_window: int | None = None
    session_id: str | None = None
    num_turns: int | None = None
    text: str | None = None


@dataclass(frozen=True, slots=True)
class FailureEvent:
    """Why a run failed, classified (ralph.agents.limits): `kind` is rate_limit, usage_limit,
    overloaded, auth or other; `reset_at` (epoch seconds) or `retry_after_s` when the CLI said
    when to try again."""

    kind: str
    message: str
    status: int | None = None
    retry_after_s: float | None = None
    reset_at: float | None = None


Event = (
    SessionEvent
    | TextEvent
    | ToolEvent
    | ToolResultEvent
    | UsageEvent
    | CostEvent
    | ErrorEvent
    | ResultEvent
    | FailureEvent
)
