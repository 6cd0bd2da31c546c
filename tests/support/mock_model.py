"""A mock model provider for end-to-end runs of the real agent CLIs (stdlib only).

`MockModelServer` listens on 127.0.0.1 on a free port and speaks just enough of two wire APIs:

- Anthropic Messages (Claude Code): `POST /v1/messages[?beta=true]`, streamed as SSE
  (message_start, content_block_start/delta/stop for text and tool_use, message_delta, message_stop)
  or as one JSON message when `stream` is false; `POST /v1/messages/count_tokens`.
- OpenAI Responses (Codex): `POST /v1/responses`, streamed as SSE (response.created,
  response.output_item.added/done, response.output_text.delta, response.completed with usage);
  `GET /v1/models`.
- OpenAI Chat Completions (opencode through @ai-sdk/openai-compatible): `POST /v1/chat/completions`,
  streamed as SSE `data:` chunks (choices[].delta with content or tool_calls, finish_reason, then a
  chunk with `usage` and no choices, then `[DONE]`) or as one JSON completion when `stream` is false.
- Google Gemini API (Gemini CLI): `POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`
  (SSE chunks of candidates[].content.parts with text or functionCall, the last with finishReason
  and usageMetadata), `:generateContent` (one JSON response) and `:countTokens`.

It "plays the model" with a brain: a function of the conversation so far (`Conversation`: the
user's prompt text and the tool results already returned) to the next `Action`: a shell command
(`Shell`, sent as a `Bash` tool_use to Claude Code, as an `exec_command` function_call to Codex, as
a `bash` tool call to opencode, as a `run_shell_command` functionCall to Gemini CLI) or a final
answer (`Final`). `RalphStageBrain` acts out ralph's stages the way a model would.

Every request is logged in `.requests`; the usage sent in every model response is logged in
`.sent` (a `Sent` per response, `side` when the request declared no shell tool, like opencode's
session title), so tests can compare what a CLI reports with what it was told.
Usage per turn is configurable (`Usage`, with an input-token schedule indexed by the turn within
the conversation, so parallel conversations get the same numbers). `fail_status` makes every
model request (or the first `fail_times`) answer with that HTTP error instead; `fail_message`
replaces its message (a 429 is a `rate_limit_error`, as the providers send it).
"""

from __future__ import annotations

import contextlib
import gzip
import itertools
import json
import re
import shlex
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

# ---------------------------------------------------------------------------------------------
# What the brain sees and says


@dataclass
class Conversation:
    """The model's view of one request: who asks (api), what the user said, what tools returned."""

    api: str  # "anthropic", "openai" (Responses), "chat" (Chat Completions) or "gemini"
    prompt: str  # all user text (not tool results), joined; includes the CLI's own reminders
    tool_results: list[str]  # outputs of the tool calls so far, oldest first
    tool_names: list[str]  # the tools the request declares
    body: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def turn(self) -> int:
        """0 for the first model call of a conversation, +1 per tool call answered since."""
        return len(self.tool_results)


@dataclass(frozen=True)
class Shell:
    command: str
    description: str = "Run a shell command"


@dataclass(frozen=True)
class Final:
    text: str


Action = Shell | Final
Brain = Callable[[Conversation], Action]


@dataclass(frozen=True)
class ScriptedBrain:
    """Runs `commands` one per turn, then answers `final`."""

    commands: tuple[str, ...]
    final: str = "Done."

    def __call__(self, conversation: Conversation) -> Action:
        if conversation.turn < len(self.commands):
            return Shell(self.commands[conversation.turn])
        return Final(self.final)


STAGE = re.compile(r"Stage: (PLAN|BUILD|VERIFY|INVESTIGATE|DECOMPOSE)\b")
TASK_ID = re.compile(r"Stage: \w+\. Task (t-[0-9a-z]+)")
ISSUE_ID = re.compile(r"Stage: INVESTIGATE\. Issue (i-[0-9a-z]+)")
SPEC = re.compile(r"Spec: (\S+?)\.?$", re.MULTILINE)
# ralph's prompts show its commands indented: "    /abs/ralph task done t-x" (or "python -m ralph").
RALPH_LINE = re.compile(r"^[ \t]+(/\S.*?) (?:task|issue|query) ", re.MULTILINE)
ADDED_ID = re.compile(r"\b(t-[0-9a-z]+)\b")


def q(text: str) -> str:
    return shlex.quote(text)


class RalphStageBrain:
    """Acts out one ralph stage from its prompt, one shell command per turn, like a model would.

    PLAN: `cat SPEC`, then one `task add` per "- name" line of the spec (each depending on the
    one before, with the id read from the previous tool result). BUILD: writes work/<id>.txt
    ("ok"), then `task done`. VERIFY: `task accept`. INVESTIGATE: `issue resolve`. DECOMPOSE: two
    subtasks with the task as parent, then `task delete`. Then a short final answer.
    """

    def __init__(self, final: str = "Done.") -> None:
        self.final = final

    def __call__(self, conversation: Conversation) -> Action:
        stage = STAGE.search(conversation.prompt)
        ralph = RALPH_LINE.search(conversation.prompt)
        if not stage or not ralph:
            return Final("I see no ralph stage in this prompt.")
        steps = getattr(self, stage.group(1).lower())(conversation, ralph.group(1))
        if conversation.turn < len(steps):
            return Shell(steps[conversation.turn], f"ralph {stage.group(1)} step {conversation.turn + 1}")
        return Final(self.final)

    @staticmethod
    def _id(pattern: re.Pattern[str], conversation: Conversation) -> str:
        found = pattern.search(conversation.prompt)
        if not found:
            raise ValueError(f"no {pattern.pattern!r} in the prompt")
        return found.group(1)

    def plan(self, conversation: Conversation, ralph: str) -> list[str]:
        spec = SPEC.search(conversation.prompt)
        steps = [f"cat {q(spec.group(1) if spec else 'spec.md')}"]
        if not conversation.tool_results:
            return steps + ["(pending)"]  # the rest depends on the spec's text
        names = [
            line[2:].strip() for line in conversation.tool_results[0].splitlines() if line.startswith("- ")
        ]
        results = conversation.tool_results[1:]
        for index, name in enumerate(names):
            item: dict[str, Any] = {"name": name, "accept": "work file says ok"}
            if index:
                previous = ADDED_ID.search(results[index - 1]) if index - 1 < len(results) else None
                if previous:
                    item["deps"] = [previous.group(1)]
            steps.append(f"{ralph} task add {q(json.dumps(item))}")
        return steps

    def build(self, conversation: Conversation, ralph: str) -> list[str]:
        task_id = self._id(TASK_ID, conversation)
        return [f"mkdir -p work && printf ok > work/{task_id}.txt", f"{ralph} task done {task_id}"]

    def verify(self, conversation: Conversation, ralph: str) -> list[str]:
        return [f"{ralph} task accept {self._id(TASK_ID, conversation)}"]

    def investigate(self, conversation: Conversation, ralph: str) -> list[str]:
        issue_id = self._id(ISSUE_ID, conversation)
        return [f"{ralph} issue resolve {issue_id} --note {q('the mock model found nothing to do')}"]

    def decompose(self, conversation: Conversation, ralph: str) -> list[str]:
        task_id = self._id(TASK_ID, conversation)
        name = re.search(r"Task t-[0-9a-z]+: (.*)", conversation.prompt)
        base = (name.group(1) if name else task_id).split(" [")[0].strip()
        adds = [
            f"{ralph} task add {q(json.dumps({'name': f'{base} ({part})', 'parent': task_id}))}"
            for part in ("part 1", "part 2")
        ]
        return [*adds, f"{ralph} task delete {task_id}"]


# ---------------------------------------------------------------------------------------------
# Usage


@dataclass
class Usage:
    """Token usage the mock reports. `input_tokens_schedule[turn]` (the last value repeats) is
    the input per model call: Anthropic's `input_tokens` (which excludes cache), OpenAI's
    `input_tokens` (which includes `cached_tokens`, so keep cache_read_tokens below it)."""

    input_tokens_schedule: list[int] = field(default_factory=lambda: [1000])
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 20
    reasoning_tokens: int = 0

    def input_for(self, turn: int, conversation: Conversation | None = None) -> int:
        """Override to vary the input by conversation (e.g. by stage or compaction)."""
        schedule = self.input_tokens_schedule or [0]
        return schedule[min(turn, len(schedule) - 1)]


@dataclass
class Sent:
    """One model response the mock sent: to which api, the turn, the action, and the usage."""

    api: str
    turn: int
    action: Action
    usage: dict[str, Any]
    at: float = field(default_factory=time.time)
    side: bool = False  # a request that declared no shell tool (a session title, a routing question)


# ---------------------------------------------------------------------------------------------
# Parsing requests into Conversations


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(part) for part in content)
    if isinstance(content, dict):
        for key in ("text", "content", "output"):
            if key in content:
                return _text_of(content[key])
    return ""


def anthropic_conversation(body: dict[str, Any]) -> Conversation:
    prompt, results = [], []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            prompt.append(content)
            continue
        for block in content or []:
            if block.get("type") == "tool_result":
                results.append(_text_of(block.get("content", "")))
            elif block.get("type") == "text":
                prompt.append(block.get("text", ""))
    tools = [tool.get("name", "") for tool in body.get("tools") or []]
    return Conversation("anthropic", "\n".join(prompt), results, tools, body)


def openai_conversation(body: dict[str, Any]) -> Conversation:
    prompt, results = [], []
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for item in items or []:
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "user":
            prompt.append(_text_of(item.get("content")))
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            results.append(_text_of(item.get("output", "")))
    tools = [tool.get("name") or tool.get("type", "") for tool in body.get("tools") or []]
    return Conversation("openai", "\n".join(prompt), results, tools, body)


def chat_conversation(body: dict[str, Any]) -> Conversation:
    """OpenAI Chat Completions: user messages are the prompt, `tool` messages the results."""
    prompt, results = [], []
    for message in body.get("messages", []):
        role = message.get("role")
        if role == "user":
            prompt.append(_text_of(message.get("content")))
        elif role == "tool":
            results.append(_text_of(message.get("content")))
    tools = [
        (tool.get("function") or {}).get("name") or tool.get("name", "") for tool in body.get("tools") or []
    ]
    return Conversation("chat", "\n".join(prompt), results, tools, body)


def gemini_conversation(body: dict[str, Any]) -> Conversation:
    """Gemini API: user text parts are the prompt, functionResponse parts the results."""
    prompt, results = [], []
    for content in body.get("contents", []):
        if content.get("role", "user") != "user":
            continue
        for part in content.get("parts") or []:
            if "functionResponse" in part:
                response = (part["functionResponse"] or {}).get("response")
                results.append(_text_of(response) if not isinstance(response, str) else response)
            elif "text" in part:
                prompt.append(part.get("text", ""))
    tools = [
        declaration.get("name", "")
        for tool in body.get("tools") or []
        for declaration in tool.get("functionDeclarations") or tool.get("function_declarations") or []
    ]
    return Conversation("gemini", "\n".join(prompt), results, tools, body)


# ---------------------------------------------------------------------------------------------
# The server


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, raw text, or None
    at: float = field(default_factory=time.time)


class MockModelServer:
    """Use as a context manager (or start()/stop()); `url` is http://127.0.0.1:PORT."""

    def __init__(
        self,
        brain: Brain | None = None,
        usage: Usage | None = None,
        *,
        fail_status: int | None = None,
        fail_times: int | None = None,
        fail_message: str | None = None,
        model: str = "mock-model",
        anthropic_shell_tool: str = "Bash",
        openai_shell_tool: str | None = None,
        chat_shell_tool: str = "bash",
        gemini_shell_tool: str = "run_shell_command",
    ) -> None:
        self.brain: Brain = brain or RalphStageBrain()
        self.usage = usage or Usage()
        self.fail_status, self.fail_times, self.fail_message = fail_status, fail_times, fail_message
        self.model = model
        self.anthropic_shell_tool = anthropic_shell_tool
        self.openai_shell_tool = openai_shell_tool  # None: pick from the request's tools
        self.chat_shell_tool = chat_shell_tool
        self.gemini_shell_tool = gemini_shell_tool
        self.requests: list[Request] = []
        self.sent: list[Sent] = []
        self.failures_sent = 0
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> MockModelServer:
        server = self

        class Handler(_Handler):
            mock = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="mock-model", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> MockModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the server is not running"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- records ----------------------------------------------------------------------------

    def model_requests(self, api: str | None = None) -> list[Request]:
        """The POSTs that asked the model for an answer (not count_tokens), of one api or all."""
        return [
            r for r in self.requests if r.method == "POST" and _api_of(r.path) in ((api,) if api else APIS)
        ]

    def sent_usage(self, api: str | None = None, side: bool = True) -> list[dict[str, Any]]:
        """The usage of every response sent (of one api); without the side requests' if side=False."""
        return [s.usage for s in self.sent if (api is None or s.api == api) and (side or not s.side)]

    def totals(self, api: str | None = None, side: bool = True) -> dict[str, int]:
        """Every numeric usage field summed over the responses sent (nested dicts flattened
        with a dot: input_tokens_details.cached_tokens); side=False leaves out side requests
        (opencode does not report its session-title request's usage)."""
        total: dict[str, int] = {}
        for usage in self.sent_usage(api, side):
            for key, value in _flatten(usage).items():
                total[key] = total.get(key, 0) + value
        return total

    # -- decisions --------------------------------------------------------------------------

    def _next_id(self, prefix: str) -> str:
        return f"{prefix}_mock{next(self._ids):06d}"

    def _should_fail(self) -> int | None:
        with self._lock:
            if self.fail_status is None:
                return None
            if self.fail_times is not None and self.failures_sent >= self.fail_times:
                return None
            self.failures_sent += 1
            return self.fail_status

    def _decide(self, conversation: Conversation) -> Action:
        try:
            return self.brain(conversation)
        except Exception as exc:  # a brain bug should show up in the transcript, not hang the CLI
            return Final(f"mock brain error: {exc!r}")

    def _record(self, api: str, turn: int, action: Action, usage: dict[str, Any], side: bool = False) -> None:
        with self._lock:
            self.sent.append(Sent(api, turn, action, usage, side=side))


APIS = ("anthropic", "openai", "chat", "gemini")
GEMINI_MODEL_PATH = re.compile(
    r"^/v1(?:beta|alpha)?/models/([^/:]+):(streamGenerateContent|generateContent)$"
)


def _api_of(path: str) -> str | None:
    path = urlsplit(path).path
    if GEMINI_MODEL_PATH.match(path):
        return "gemini"
    return {"/v1/messages": "anthropic", "/v1/responses": "openai", "/v1/chat/completions": "chat"}.get(path)


def _flatten(usage: dict[str, Any], prefix: str = "") -> dict[str, int]:
    flat: dict[str, int] = {}
    for key, value in usage.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        elif isinstance(value, int) and not isinstance(value, bool):
            flat[f"{prefix}{key}"] = value
    return flat


class _Handler(BaseHTTPRequestHandler):
    mock: MockModelServer
    protocol_version = "HTTP/1.1"
    server_version = "MockModel/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # -- plumbing ---------------------------------------------------------------------------

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        encoding = (self.headers.get("Content-Encoding") or "").lower()
        with contextlib.suppress(Exception):
            if encoding == "gzip":
                raw = gzip.decompress(raw)
            elif encoding == "deflate":
                raw = zlib.decompress(raw)
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _log(self, body: Any) -> None:
        with self.mock._lock:
            self.mock.requests.append(Request(self.command, self.path, dict(self.headers.items()), body))

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status >= 400:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for name, data in events:
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

    def _sse_data(self, chunks: list[Any], done: bool) -> None:
        """SSE without event names (`data: {...}`), as Chat Completions and Gemini stream."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for chunk in chunks:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            if done:
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

    # -- routes -----------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._log(None)
        path = urlsplit(self.path).path
        if path.rstrip("/").endswith("/models"):
            model = {"id": self.mock.model, "object": "model", "created": 0, "owned_by": "mock"}
            self._json(200, {"object": "list", "data": [model], "models": []})
        else:
            self._json(404, {"error": {"type": "not_found_error", "message": f"no route GET {path}"}})

    def do_HEAD(self) -> None:
        self._log(None)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = self._read_body()
        self._log(body)
        path = urlsplit(self.path).path
        if not isinstance(body, dict):
            body = {}
        if path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": self.mock.usage.input_for(0)})
        elif path == "/v1/messages":
            self._anthropic(body)
        elif path == "/v1/responses":
            self._openai(body)
        elif path == "/v1/chat/completions":
            self._chat(body)
        elif path.endswith(":countTokens") and path.startswith("/v1"):
            self._json(200, {"totalTokens": self.mock.usage.input_for(0)})
        elif GEMINI_MODEL_PATH.match(path):
            found = GEMINI_MODEL_PATH.match(path)
            assert found is not None
            self._gemini(body, found.group(1), stream=found.group(2) == "streamGenerateContent")
        else:
            self._json(404, {"error": {"type": "not_found_error", "message": f"no route POST {path}"}})

    # -- Anthropic Messages -----------------------------------------------------------------

    def _anthropic(self, body: dict[str, Any]) -> None:
        mock = self.mock
        status = mock._should_fail()
        if status is not None:
            kind = (
                "rate_limit_error"
                if status == 429
                else "invalid_request_error"
                if status < 500
                else "api_error"
            )
            said = mock.fail_message or f"mock failure (HTTP {status})"
            self._json(status, {"type": "error", "error": {"type": kind, "message": said}})
            return
        conversation = anthropic_conversation(body)
        shell = mock.anthropic_shell_tool
        # A side request (title, summary, quota probe) declares no shell tool: just answer.
        action = mock._decide(conversation) if shell in conversation.tool_names else Final("Mock answer.")
        usage_cfg = mock.usage
        usage = {
            "input_tokens": usage_cfg.input_for(conversation.turn, conversation),
            "cache_creation_input_tokens": usage_cfg.cache_creation_tokens,
            "cache_read_input_tokens": usage_cfg.cache_read_tokens,
            "output_tokens": usage_cfg.output_tokens,
        }
        mock._record("anthropic", conversation.turn, action, usage)
        message_id = mock._next_id("msg")
        model = body.get("model") or mock.model
        if isinstance(action, Shell):
            block = {"type": "tool_use", "id": mock._next_id("toolu"), "name": shell, "input": {}}
            arguments = {"command": action.command, "description": action.description}
            content = [{**block, "input": arguments}]
            stop_reason = "tool_use"
        else:
            content = [{"type": "text", "text": action.text}]
            stop_reason = "end_turn"
        if not body.get("stream"):
            message = {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": usage,
            }
            self._json(200, message)
            return
        start_usage = {**usage, "output_tokens": 1}
        start: dict[str, Any] = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": start_usage,
        }
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": start})
        ]
        events.append(("ping", {"type": "ping"}))
        if isinstance(action, Shell):
            partial = json.dumps(content[0]["input"])
            events.append(
                ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block})
            )
            for piece in (partial[: len(partial) // 2], partial[len(partial) // 2 :]):
                delta = {"type": "input_json_delta", "partial_json": piece}
                events.append(
                    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
                )
        else:
            text_block = {"type": "text", "text": ""}
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": text_block},
                )
            )
            delta = {"type": "text_delta", "text": action.text}
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        message_delta = {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        }
        events.append(("message_delta", message_delta))
        events.append(("message_stop", {"type": "message_stop"}))
        self._sse(events)

    # -- OpenAI Responses -------------------------------------------------------------------

    def _openai_shell(self, conversation: Conversation) -> tuple[str, Callable[[str], dict[str, Any]]]:
        """The shell tool the request declares and how to shape its arguments."""
        shapes: dict[str, Callable[[str], dict[str, Any]]] = {
            "exec_command": lambda cmd: {"cmd": cmd},
            "shell_command": lambda cmd: {"command": cmd},
            "shell": lambda cmd: {"command": ["bash", "-lc", cmd]},
        }
        name = self.mock.openai_shell_tool
        if name is None:
            name = next((n for n in shapes if n in conversation.tool_names), "exec_command")
        return name, shapes.get(name, shapes["exec_command"])

    def _failed_openai_style(self) -> bool:
        """Answer with an OpenAI-style HTTP error when the mock is set to fail; True if it did."""
        status = self.mock._should_fail()
        if status is None:
            return False
        kind = (
            "rate_limit_exceeded"
            if status == 429
            else "invalid_request_error"
            if status < 500
            else "server_error"
        )
        message = self.mock.fail_message or f"mock failure (HTTP {status})"
        self._json(status, {"error": {"message": message, "type": kind, "param": None, "code": kind}})
        return True

    def _openai(self, body: dict[str, Any]) -> None:
        mock = self.mock
        if self._failed_openai_style():
            return
        conversation = openai_conversation(body)
        action = mock._decide(conversation) if conversation.tool_names else Final("Mock answer.")
        cfg = mock.usage
        input_tokens = cfg.input_for(conversation.turn, conversation)
        usage = {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cfg.cache_read_tokens},
            "output_tokens": cfg.output_tokens,
            "output_tokens_details": {"reasoning_tokens": cfg.reasoning_tokens},
            "total_tokens": input_tokens + cfg.output_tokens,
        }
        mock._record("openai", conversation.turn, action, usage)
        response_id = mock._next_id("resp")
        model = body.get("model") or mock.model
        if isinstance(action, Shell):
            name, shape = self._openai_shell(conversation)
            item: dict[str, Any] = {
                "type": "function_call",
                "id": mock._next_id("fc"),
                "call_id": mock._next_id("call"),
                "name": name,
                "arguments": json.dumps(shape(action.command)),
                "status": "completed",
            }
            added = {**item, "arguments": "", "status": "in_progress"}
            middle = [
                (
                    "response.function_call_arguments.delta",
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": item["id"],
                        "output_index": 0,
                        "delta": item["arguments"],
                    },
                ),
            ]
        else:
            item = {
                "type": "message",
                "id": mock._next_id("msg"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": action.text, "annotations": []}],
            }
            added = {**item, "content": [], "status": "in_progress"}
            middle = [
                (
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": 0,
                        "content_index": 0,
                        "delta": action.text,
                    },
                ),
            ]
        base = {"id": response_id, "object": "response", "created_at": int(time.time()), "model": model}
        events: list[tuple[str, dict[str, Any]]] = [
            ("response.created", {"type": "response.created", "response": {**base, "status": "in_progress"}}),
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": 0, "item": added},
            ),
            *middle,
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": item},
            ),
            (
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {**base, "status": "completed", "output": [item], "usage": usage},
                },
            ),
        ]
        for number, (_, data) in enumerate(events):
            data["sequence_number"] = number
        self._sse(events)

    # -- OpenAI Chat Completions ------------------------------------------------------------

    def _chat(self, body: dict[str, Any]) -> None:
        mock = self.mock
        if self._failed_openai_style():
            return
        conversation = chat_conversation(body)
        shell = mock.chat_shell_tool
        # A side request (opencode's session title) declares no tools: just answer.
        action = mock._decide(conversation) if shell in conversation.tool_names else Final("Mock answer.")
        cfg = mock.usage
        prompt_tokens = cfg.input_for(conversation.turn, conversation)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": cfg.output_tokens,
            "total_tokens": prompt_tokens + cfg.output_tokens,
            "prompt_tokens_details": {"cached_tokens": cfg.cache_read_tokens},
            "completion_tokens_details": {"reasoning_tokens": cfg.reasoning_tokens},
        }
        mock._record("chat", conversation.turn, action, usage, side=shell not in conversation.tool_names)
        completion_id = mock._next_id("chatcmpl")
        model = body.get("model") or mock.model
        base = {"id": completion_id, "created": int(time.time()), "model": model}
        if isinstance(action, Shell):
            call: dict[str, Any] = {
                "id": mock._next_id("call"),
                "type": "function",
                "function": {
                    "name": shell,
                    "arguments": json.dumps({"command": action.command, "description": action.description}),
                },
            }
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": action.text}
            finish = "stop"
        if not body.get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": finish}
            self._json(200, {**base, "object": "chat.completion", "choices": [choice], "usage": usage})
            return

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
            return {**base, "object": "chat.completion.chunk", "choices": [choice]}

        chunks = [chunk({"role": "assistant", "content": ""})]
        if isinstance(action, Shell):
            arguments = call["function"]["arguments"]
            head = {"index": 0, "id": call["id"], "type": "function"}
            chunks.append(chunk({"tool_calls": [{**head, "function": {"name": shell, "arguments": ""}}]}))
            for piece in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
                chunks.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
        else:
            chunks.append(chunk({"content": action.text}))
        chunks.append(chunk({}, finish))
        chunks.append({**base, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        self._sse_data(chunks, done=True)

    # -- Google Gemini API ------------------------------------------------------------------

    def _gemini(self, body: dict[str, Any], model: str, stream: bool) -> None:
        mock = self.mock
        status = mock._should_fail()
        if status is not None:
            reason = "INVALID_ARGUMENT" if status < 500 else "INTERNAL"
            message = f"mock failure (HTTP {status})"
            self._json(status, {"error": {"code": status, "message": message, "status": reason}})
            return
        conversation = gemini_conversation(body)
        shell = mock.gemini_shell_tool
        config = body.get("generationConfig") or {}
        if shell in conversation.tool_names:
            action = mock._decide(conversation)
        elif config.get("responseMimeType") == "application/json" or config.get("responseJsonSchema"):
            # Gemini CLI's side questions (model routing, next speaker) want JSON back.
            action = Final(json.dumps(_gemini_json_answer(config)))
        else:
            action = Final("Mock answer.")
        cfg = mock.usage
        prompt_tokens = cfg.input_for(conversation.turn, conversation)
        usage = {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": cfg.output_tokens,
            "totalTokenCount": prompt_tokens + cfg.output_tokens,
            "cachedContentTokenCount": cfg.cache_read_tokens,
        }
        mock._record("gemini", conversation.turn, action, usage, side=shell not in conversation.tool_names)
        if isinstance(action, Shell):
            parts: list[dict[str, Any]] = [
                {"functionCall": {"name": shell, "args": {"command": action.command}}}
            ]
        else:
            parts = [{"text": action.text}]

        def response(parts: list[dict[str, Any]], last: bool) -> dict[str, Any]:
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
            payload: dict[str, Any] = {"candidates": [candidate], "modelVersion": model}
            if last:
                candidate["finishReason"] = "STOP"
                payload.update(usageMetadata=usage, responseId=mock._next_id("gem"))
            return payload

        if not stream:
            self._json(200, response(parts, last=True))
        elif isinstance(action, Final) and len(action.text) > 1:
            half = len(action.text) // 2
            first, rest = action.text[:half], action.text[half:]
            self._sse_data([response([{"text": first}], False), response([{"text": rest}], True)], done=False)
        else:
            self._sse_data([response(parts, last=True)], done=False)


def _gemini_json_answer(config: dict[str, Any]) -> dict[str, Any]:
    """A plausible JSON answer to one of Gemini CLI's side questions, from the schema asked for."""
    schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
    properties = schema.get("properties") or {}
    answer: dict[str, Any] = {}
    for name, spec in properties.items():
        choices = spec.get("enum")
        if name == "next_speaker":
            answer[name] = "user"
        elif name == "model_choice":
            answer[name] = "flash" if not choices or "flash" in choices else choices[0]
        elif choices:
            answer[name] = choices[0]
        elif str(spec.get("type", "")).lower() in ("boolean",):
            answer[name] = False
        elif str(spec.get("type", "")).lower() in ("number", "integer"):
            answer[name] = 0
        else:
            answer[name] = "mock"
    return answer


@contextlib.contextmanager
def mock_model(**kwargs: Any):
    """`with mock_model(brain=..., usage=...) as server:` — started, and stopped afterwards."""
    server = MockModelServer(**kwargs)
    with server:
        yield server
