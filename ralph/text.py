"""Showing text that came from users, agents or files: in a message it must stay one line and must
not drive the terminal (an escape sequence in a task name could retitle or rewrite the screen)."""

from __future__ import annotations

import re
from collections.abc import Mapping

# C0 controls, DEL and C1 controls; tabs too, so a message stays one visible line of fields.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """`text` with every control character escaped (\\n, \\r, \\t, \\x1b, ...): one safe line."""
    if text.isprintable():
        return text
    return _CONTROL.sub(_escaped, text)


def terminal_text(text: str) -> str:
    """`text` for a terminal, lines kept: every control character but newline and tab escaped, so
    nothing in it (an agent's title change, screen clear or clipboard write) drives the terminal."""
    if text.isprintable():
        return text
    return _CONTROL_BUT_LINES.sub(_escaped, text)


_CONTROL_BUT_LINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escaped(match: re.Match[str]) -> str:
    return _NAMED.get(match.group(), f"\\x{ord(match.group()):02x}")


def joined_lines(text: str) -> str:
    """Text of several lines (a verifier's reason) as one: its non-blank lines joined by " | ",
    where escaping its newlines would show a literal \\n."""
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())


def shown_path(path: str) -> str:
    """A path as git named it, for the plan, the journal and messages: a name that is not UTF-8
    (carried as surrogates, so git gets its bytes back) shows those bytes as \\xNN escapes."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def json_text(data: object) -> str:
    """JSON text as UTF-8 can carry it: non-ASCII as itself, a lone surrogate (from a name that
    is not UTF-8) escaped, where writing it raw would fail."""
    import json

    text = json.dumps(data, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data)
    return text


# The version of the JSON ralph prints: every object a command prints with --json (each line of a
# JSON-lines output), each hook event and the schema carry it as the top-level `schema_version`. It
# goes up when a field is removed or changes meaning; new fields do not change it.
SCHEMA_VERSION = 1


def versioned(data: Mapping[str, object]) -> dict[str, object]:
    """`data` with `schema_version` as its first key."""
    return {"schema_version": SCHEMA_VERSION, **data}


def plural(count: int, word: str, words: str | None = None) -> str:
    """ "1 run", "2 runs" (`words`: the plural where it is not the word and an s)."""
    return f"{count} {word if count == 1 else words or word + 's'}"
