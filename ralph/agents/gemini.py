"""Gemini CLI (`gemini`, npm @google/gemini-cli), headless with stream-json events.

The final `result` event has `status` and `stats` with the run's token counts (`input_tokens`
includes `cached`; `input` is the uncached part); after an API error it has `status: "error"` and
the message in `error.message` (exit code 144 for an HTTP 400). There is no per-turn usage in the
stream. Checked against Gemini CLI 0.61 (tests/data/streams/gemini-real*.jsonl).
"""

from __future__ import annotations

from ralph.agents.base import CliAdapter, Invocation, json_object
from ralph.agents.events import (
    ErrorEvent,
    Event,
    JsonObject,
    ResultEvent,
    SessionEvent,
    TextEvent,
    ToolEvent,
    ToolResultEvent,
    UsageEvent,
)
from ralph.agents.limits import classify


class GeminiAdapter(CliAdapter):
    name = "gemini"
    program = "gemini"
    auth_hint = "set GEMINI_API_KEY, or log in by running `gemini` once"
    install_hint = "npm install -g @google/gemini-cli"
    state_paths = (".gemini/",)
    reports_cost = False  # its result's stats are tokens only
    default_context_window = 1_000_000

    def invocation(
        self, prompt: str, prompt_file: str, env: dict[str, str], model: str | None = None
    ) -> Invocation:
        model = model or self.model
        argv = [self.program, "-p", prompt, "--output-format", "stream-json", "--yolo", "--skip-trust"]
        if model:
            argv += ["-m", model]
        return Invocation(argv + self.extra_args, None, dict(env))

    def parse_line(self, line: str) -> list[Event]:
        event = json_object(line)
        if event is None:
            return []
        kind = event.get("type")
        if kind == "init":
            return [SessionEvent(event.get("session_id"), event.get("model"))]
        if kind == "message" and event.get("role") == "assistant":
            return [TextEvent(event.get("content", ""), delta=bool(event.get("delta")))]
        if kind == "tool_use":
            return [ToolEvent(event.get("tool_name"), event.get("parameters"))]
        if kind == "tool_result":
            error = event.get("error")
            output = event.get("output") or (error.get("message") if isinstance(error, dict) else error)
            return [ToolResultEvent(str(output or ""), event.get("status") not in (None, "success"))]
        if kind == "error":
            return [ErrorEvent(event.get("message", ""))]
        if kind == "result":
            error = event.get("error") or {}
            errors: list[Event] = [ErrorEvent(error.get("message") or str(error))] if error else []
            result = _result(event)
            if result.is_error:
                errors.append(classify(None, str(error.get("message") or error or result.subtype)))
            return [*errors, result]
        return []


def _result(event: JsonObject) -> ResultEvent:
    stats = event.get("stats") or {}
    cached = stats.get("cached") or 0
    total_input = stats.get("input_tokens") or 0
    # No cache-creation count here; its zero replaces no per-turn sum, since Gemini reports none.
    usage = UsageEvent(
        input_tokens=stats.get("input", max(0, total_input - cached)),
        output_tokens=stats.get("output_tokens") or 0,
        cache_read_tokens=cached,
    )
    status = event.get("status")
    return ResultEvent(
        is_error=status not in (None, "success"), subtype=status, usage=usage if stats else None
    )
