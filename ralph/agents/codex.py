"""Codex (`codex exec`, npm @openai/codex), headless with --json events.

Usage arrives once per turn in `turn.completed` (input_tokens there includes the cached ones);
Codex has no final result event, so a run succeeded when it exits 0 without `turn.failed`.
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


class CodexAdapter(CliAdapter):
    name = "codex"
    program = "codex"
    auth_hint = "run `codex login`, or set OPENAI_API_KEY"
    install_hint = "npm install -g @openai/codex"
    state_paths = (".codex/",)
    reports_cost = False  # turn.completed has tokens only
    default_context_window = 272_000

    def invocation(
        self, prompt: str, prompt_file: str, env: dict[str, str], model: str | None = None
    ) -> Invocation:
        model = model or self.model
        argv = [self.program, "exec", "--json", "--dangerously-bypass-approvals-and-sandbox"]
        if model:
            argv += ["-m", model]
        return Invocation(argv + self.extra_args + [prompt], None, dict(env))

    def parse_line(self, line: str) -> list[Event]:
        event = json_object(line)
        if event is None:
            return []
        kind = event.get("type")
        if kind == "thread.started":
            return [SessionEvent(event.get("thread_id"))]
        if kind == "turn.completed":
            return [_usage(event.get("usage") or {})]
        if kind == "turn.failed":
            message = str((event.get("error") or {}).get("message", "turn failed"))
            failed = ResultEvent(is_error=True, subtype="turn.failed")
            return [ErrorEvent(message), failed, classify(None, message)]
        if kind == "error":  # often a retry it reports on its way ("Reconnecting... 429"): not yet a failure
            return [ErrorEvent(event.get("message", ""))]
        if kind == "item.completed":
            return _item(event.get("item") or {})
        return []


def _usage(usage: JsonObject) -> UsageEvent:
    cached = usage.get("cached_input_tokens") or 0
    return UsageEvent(
        input_tokens=max(0, (usage.get("input_tokens") or 0) - cached),
        cache_read_tokens=cached,
        output_tokens=usage.get("output_tokens") or 0,
    )


def _item(item: JsonObject) -> list[Event]:
    kind = item.get("type")
    if kind == "agent_message":
        return [TextEvent(item.get("text", ""))]
    if kind == "command_execution":
        exit_code = item.get("exit_code")
        output = ToolResultEvent(str(item.get("aggregated_output") or ""), exit_code not in (0, None))
        return [ToolEvent("shell", item.get("command"), exit_code), output]
    # An `error` item ("Model metadata ... not found") is harmless with a custom provider: log only.
    return []
