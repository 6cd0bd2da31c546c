"""opencode (`opencode run`, npm opencode-ai), headless with --format json events.

Every `step_finish` carries that step's tokens {total, input, output, reasoning, cache{read, write}}
(`input` excludes the cached tokens) and its cost; there is no final result event, so success is its
exit status (1 after an `error` event, e.g. an HTTP 400 from the provider). The usage of opencode's
own side request (the session title) is not in the stream. Checked against opencode 1.18
(tests/data/streams/opencode-real*.jsonl).
"""

from __future__ import annotations

from ralph.agents.base import CliAdapter, Invocation, json_object
from ralph.agents.events import (
    CostEvent,
    ErrorEvent,
    Event,
    ResultEvent,
    SessionEvent,
    TextEvent,
    ToolEvent,
    ToolResultEvent,
    UsageEvent,
)
from ralph.agents.limits import classify, retry_after_header


class OpencodeAdapter(CliAdapter):
    name = "opencode"
    program = "opencode"
    auth_hint = "run `opencode auth login`"
    install_hint = "npm install -g opencode-ai"
    state_paths = (".config/opencode/", ".local/share/opencode/", ".local/state/opencode/")
    reports_cost = True  # each step_finish's cost
    default_context_window = 200_000

    def invocation(
        self, prompt: str, prompt_file: str, env: dict[str, str], model: str | None = None
    ) -> Invocation:
        model = model or self.model
        argv = [self.program, "run", "--format", "json", "--auto"]  # --auto: approve tool permissions
        if model:
            argv += ["-m", model]
        env = {"OPENCODE_DISABLE_AUTOUPDATE": "1", **env}
        return Invocation(argv + self.extra_args + [prompt], None, env)

    def parse_line(self, line: str) -> list[Event]:
        event = json_object(line)
        if event is None:
            return []
        kind, part = event.get("type"), event.get("part") or {}
        events: list[Event] = [SessionEvent(event["sessionID"])] if event.get("sessionID") else []
        if kind == "step_finish":
            tokens = part.get("tokens") or {}
            cache = tokens.get("cache") or {}
            usage = UsageEvent(
                input_tokens=tokens.get("input") or 0,
                output_tokens=(tokens.get("output") or 0) + (tokens.get("reasoning") or 0),
                cache_read_tokens=cache.get("read") or 0,
                cache_creation_tokens=cache.get("write") or 0,
            )
            events.append(usage)
            if part.get("cost") is not None:
                events.append(CostEvent(part["cost"]))
        elif kind == "text":
            events.append(TextEvent(part.get("text", "")))
        elif kind == "tool_use":
            state = part.get("state") or {}
            events.append(ToolEvent(part.get("tool"), state.get("input")))
            if "output" in state or state.get("error"):
                failed = state.get("status") == "error"
                events.append(ToolResultEvent(str(state.get("output") or state.get("error") or ""), failed))
        elif kind == "error":
            error = event.get("error") or {}
            data = error["data"] if isinstance(error.get("data"), dict) else {}
            message = data.get("message") or error.get("name") or "error"
            status = data.get("statusCode") if isinstance(data.get("statusCode"), int) else None
            detail = f"{message} {data.get('responseBody') or ''}"
            failure = classify(status, detail, retry_after_header(data.get("responseHeaders")))
            events += [ErrorEvent(message), ResultEvent(is_error=True, subtype="error"), failure]
        return events
