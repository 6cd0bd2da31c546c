"""The readable transcript beside an agent's raw log: what the model wrote, each tool call with
short arguments, a trimmed result. Made from the adapters' typed events (never a second parser of
the streams), so it reads the same for every CLI; a line no adapter reads as an event (the output
of a plain `command` agent, a CLI's stray stderr) is kept as it is."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TextIO

from ralph.agents.base import json_object
from ralph.agents.events import (
    ErrorEvent,
    Event,
    FailureEvent,
    ResultEvent,
    SessionEvent,
    TextEvent,
    ToolEvent,
    ToolResultEvent,
)
from ralph.secrets import OutputLines

SUFFIX = ".transcript.md"
TOOL_MARK = "-> "  # a tool call's line starts with it: `ralph watch` shows these as the last actions
RESULT_LINES = 6
LINE_CHARS = 200
ARGS_CHARS = 160
MAX_CHARS = 2_000_000
# The argument that says what a call does, for the common tools of the four CLIs.
_KEY_ARGS = ("command", "cmd", "file_path", "filePath", "path", "absolute_path", "pattern", "url", "query")


def transcript_path(log: Path) -> Path:
    return log.with_name(log.name.removesuffix(".log") + SUFFIX)


def render(event: Event) -> str | None:
    """One event as transcript text (ending in a newline), or None for what a reader need not see
    (token counts, costs). A text delta is returned bare: it continues the previous text."""
    match event:
        case TextEvent(text=text, delta=True):
            return text
        case TextEvent(text=text):
            return f"\n{text.rstrip()}\n" if text.strip() else None
        case ToolEvent(name=name, input=args, exit_code=code):
            exit_text = f" (exit {code})" if code not in (None, 0) else ""
            return f"\n{TOOL_MARK}{name or 'tool'}: {short_args(args)}{exit_text}\n"
        case ToolResultEvent(output=output, is_error=failed):
            return _trimmed(output, "   ! " if failed else "   | ")
        case SessionEvent(session_id=session, model=model):
            return f"[session {session}{f', model {model}' if model else ''}]\n" if session else None
        case ErrorEvent(message=message):
            return f"\n! error: {one_line(message)}\n"
        case FailureEvent(kind=kind, message=message):
            return f"! failed ({kind}): {one_line(message)}\n"
        case ResultEvent(is_error=failed, subtype=subtype, num_turns=turns, cost_usd=cost):
            parts = [subtype or ("error" if failed else "done")]
            parts += [f"{turns} turns"] if turns else []
            parts += [f"${cost:.4f}"] if isinstance(cost, int | float) else []
            return f"\n= {'ERROR: ' if failed else ''}{', '.join(parts)}\n"
    return None


def short_args(args: object) -> str:
    if isinstance(args, dict):
        key = next((k for k in _KEY_ARGS if isinstance(args.get(k), str)), None)
        text = args[key] if key else json.dumps(args, ensure_ascii=False, default=str)
    elif isinstance(args, list):
        text = " ".join(str(part) for part in args)
    else:
        text = "" if args is None else str(args)
    return _clip(one_line(text), ARGS_CHARS)


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _trimmed(output: str, mark: str) -> str:
    lines = [line for line in output.rstrip().splitlines()]
    if not lines:
        return f"{mark}(no output)\n"
    shown = [mark + _clip(line.rstrip(), LINE_CHARS) for line in lines[:RESULT_LINES]]
    if len(lines) > RESULT_LINES:
        shown.append(f"{mark}... ({len(lines) - RESULT_LINES} more lines)")
    return "\n".join(shown) + "\n"


class Transcript:
    """Written line by line as the run goes, flushed, so `ralph watch` can follow it."""

    def __init__(self, path: Path, header: str):
        self.path = path
        self._out: TextIO = open(path, "w", encoding="utf-8")  # noqa: SIM115 (open for the run)
        self._session: str | None = None
        self._in_text = False  # the last thing written was a piece of streamed text
        self._written = 0
        self._redact = OutputLines()  # redacted as written: a transcript is what people read and share
        self._lock = threading.Lock()
        self._write(f"# {header}\n")

    def add(self, line: str, events: list[Event]) -> None:
        if not events:
            if json_object(line) is None and line.strip():  # plain output, not an unread JSON event
                self._write(line.rstrip("\n") + "\n")
            return
        for event in events:
            if isinstance(event, SessionEvent):  # opencode names the session on every line
                if event.session_id == self._session:
                    continue
                self._session = event.session_id
            text = render(event)
            if text and isinstance(event, TextEvent) and event.delta and not self._in_text:
                text = "\n" + text  # the first piece of a streamed text opens a paragraph
            if text:
                self._write(text)
                self._in_text = isinstance(event, TextEvent) and event.delta

    def note(self, text: str) -> None:
        self._write(f"\n[ralph] {text}\n")

    def _write(self, text: str) -> None:
        with self._lock:  # the reader thread writes; the run's thread closes it when the run ends
            if self._out.closed or self._written > MAX_CHARS:
                return
            text = self._redact(text)
            self._written += len(text)
            if self._written > MAX_CHARS:  # the raw log keeps everything; this stays readable
                text = f"\n[ralph] transcript cut at {MAX_CHARS:,} characters; the raw log has the rest\n"
            self._out.write(text)
            self._out.flush()

    def close(self) -> None:
        with self._lock:
            self._out.close()


def last_actions(path: Path, count: int = 5) -> list[str]:
    """The latest tool calls and texts of a transcript, one short line each (for `ralph watch`)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    lines = [line for line in text.splitlines()[1:] if line.strip() and not line.startswith("   ")]
    return [_clip(line, LINE_CHARS) for line in lines[-count:]]
