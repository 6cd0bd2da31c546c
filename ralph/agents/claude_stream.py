"""Reading Claude Code's `--output-format stream-json` events (one JSON object per line).

`assistant` events carry each model turn's input and cache token counts (their output count is
only the stream's start value); the final `result` event carries the run's totals, cost,
`is_error` and, in modelUsage, the context window.
"""

from __future__ import annotations

import json

from ralph.agents.events import (
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


def parse_stream_json(line: str) -> list[Event]:
    line = line.strip()
    if not line.startswith("{"):
        return []
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return []
    if not isinstance(event, dict):
        return []
    kind = event.get("type")
    if kind == "system" and event.get("subtype") == "init":
        return [SessionEvent(event.get("session_id"), event.get("model"))]
    if kind == "assistant":
        return _assistant(event.get("message") or {})
    if kind == "user":  # the tools' results, sent back to the model
        return _tool_results(event.get("message") or {})
    if kind == "result":
        result = _result(event)
        if not result.is_error:
            return [result]
        status = event.get("api_error_status")
        text = result.text if isinstance(result.text, str) else str(event.get("subtype") or "")
        return [result, classify(status if isinstance(status, int) else None, text)]
    return []


def _assistant(message: JsonObject) -> list[Event]:
    events: list[Event] = []
    for block in message.get("content") or []:
        if block.get("type") == "text":
            events.append(TextEvent(block.get("text", "")))
        elif block.get("type") == "tool_use":
            events.append(ToolEvent(block.get("name"), block.get("input")))
    usage = message.get("usage")
    if usage:
        events.append(_tokens(usage))
    return events


def _tool_results(message: JsonObject) -> list[Event]:
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return [
        ToolResultEvent(_block_text(block.get("content")), bool(block.get("is_error")))
        for block in blocks
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def _block_text(content: object) -> str:
    """A tool result's content: a string, or a list of blocks of which the text ones count."""
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return "" if content is None else str(content)


def _tokens(usage: JsonObject) -> UsageEvent:
    return UsageEvent(
        input_tokens=usage.get("input_tokens") or 0,
        output_tokens=usage.get("output_tokens") or 0,
        cache_creation_tokens=usage.get("cache_creation_input_tokens") or 0,
        cache_read_tokens=usage.get("cache_read_input_tokens") or 0,
    )


def _result(event: JsonObject) -> ResultEvent:
    windows = [
        info["contextWindow"]
        for info in (event.get("modelUsage") or {}).values()
        if isinstance(info, dict) and info.get("contextWindow")
    ]
    return ResultEvent(
        is_error=bool(event.get("is_error")),
        subtype=event.get("subtype"),
        session_id=event.get("session_id"),
        num_turns=event.get("num_turns"),
        cost_usd=event.get("total_cost_usd"),
        usage=_tokens(event["usage"]) if isinstance(event.get("usage"), dict) else None,
        context_window=max(windows) if windows else None,
        text=event.get("result"),
    )
