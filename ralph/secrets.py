"""Keeping secrets out of what ralph stores and shows: the plan (committed, so a leak stays in
history), the journal, hook payloads, transcripts, the console. Text from agents, gates and people
passes `redact` before anything is cut from it (an excerpt cut first could keep the tail of a
secret that no longer looks like one) and before it is stored or printed.

What is redacted: the values of secret-looking environment variables, the values in the
repository's `.env*` files, `KEY=value` and `KEY: value` with a secret-looking key, credentials in
URLs, webhook URLs (Slack's, Discord's: whoever holds one posts as the project), and common token
shapes. Patterns compile on first use: a state command that stores no text never pays for them.

Cutting: `redacted_head` (and OutputLines.head) keep the head of a line too long to keep whole.
Redacting first and cutting after is not enough there: a redaction makes the text shorter, so a cut
at a fixed length of the redacted text reaches past the part that was redacted, into a secret the
window cut in half. They mask instead (each character of a secret replaced by one placeholder, so
positions stay those of the line), cut, and only then say [redacted] for each masked run."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import cache, lru_cache
from pathlib import Path
from typing import TypeVar, cast

T = TypeVar("T")
Hide = Callable[[str], str]  # what a secret found in a text becomes

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 8  # shorter values ("true", "3000", "dev") are too common to hide everywhere

# Names of variables (in the environment or a .env file) whose values are secrets; an author
# (GIT_AUTHOR_EMAIL, `Author: ...`) is not one.
_SECRET_NAME = (
    r"TOKEN|SECRET|PASSW|PASSPHRASE|KEY|CREDENTIAL|AUTH(?!OR(?:S?\b|_))|COOKIE|_DSN|DATABASE_URL|_PAT\b"
    r"|WEBHOOK"
)
# A count of tokens is no secret, though its name says TOKEN: an integer under a name that ends
# in `tokens` or `token_count` (input_tokens, cache_read_input_tokens, max_tokens, total_tokens:
# every agent CLI's usage line) is left alone. An integer under any other secret name is hidden.
_COUNT_NAME_ENDS = ("tokens", "token_count")
_INTEGER = r"[\"']?\d+[\"']?[)}\]]*"  # as a value is read after its separator: quoted, or before a bracket
# A cheap test before the search for assignments: text without any of these holds none.
_NAME_WORDS = (
    "token",
    "secret",
    "pass",
    "key",
    "credential",
    "auth",
    "cookie",
    "dsn",
    "database_url",
    "_pat",
    "webhook",
)

# The shapes of common tokens, each by the text it starts with. Each pattern starts with that text
# and checks the word boundary behind it, so the regex engine can skip to it: a pattern that starts
# with a word boundary or an alternation is tried at every position, a hundred times slower.
_TOKEN_SHAPES = {
    "-----BEGIN ": r"[A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
    "AKIA": r"[0-9A-Z]{16}\b",  # AWS access key id
    "ASIA": r"[0-9A-Z]{16}\b",
    "gh": r"[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
    "github_pat_": r"[A-Za-z0-9_]{20,}",
    "glpat-": r"[A-Za-z0-9_-]{20,}",  # GitLab
    "sk_": r"(?:live|test)_[A-Za-z0-9]{10,}",  # Stripe secret keys
    "rk_": r"(?:live|test)_[A-Za-z0-9]{10,}",  # Stripe restricted keys
    "sk-": r"[A-Za-z0-9_-]{20,}",  # OpenAI / Anthropic style keys (sk-proj-, sk-ant-)
    "xox": r"[abposr]-[A-Za-z0-9-]{10,}",  # Slack
    "npm_": r"[A-Za-z0-9]{20,}",
    "hf_": r"[A-Za-z0-9]{20,}",  # Hugging Face
    "AIza": r"[0-9A-Za-z_-]{35}",  # Google API key
    "eyJ": r"[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}",  # a JWT: three base64url parts
    # Webhook URLs: the path is the credential (anyone holding it posts to the channel).
    "hooks.slack.com/": r"[A-Za-z0-9/_-]{8,}",
    "discord.com/api/webhooks/": r"[A-Za-z0-9/_-]{8,}",
    "discordapp.com/api/webhooks/": r"[A-Za-z0-9/_-]{8,}",
}
_AUTHORIZATION = r"(?i:\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/-]{16,}=*"  # an HTTP Authorization value
_AUTHORIZATION_MARKS = ("earer", "EARER", "asic ", "ASIC ")


@cache
def _shape(start: str) -> re.Pattern[str]:
    boundary = "" if start.startswith("-") else rf"(?<=\b{re.escape(start)})"
    return re.compile(re.escape(start) + boundary + _TOKEN_SHAPES[start])


@cache
def _authorization() -> re.Pattern[str]:
    return re.compile(_AUTHORIZATION)


@cache
def _url() -> re.Pattern[str]:
    """Credentials in a URL: group 1 is its scheme."""
    return re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)[^\s/@:'\"<>]*:[^\s/@'\"<>]+@(?=[^\s/@'\"<>])")


@cache
def _assignment() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """An assignment's separator; the name before it, read backwards from it (blanks and a quote
    first); the value after it, a quoted string or everything up to white space or a quote."""
    return (
        re.compile(r"[=:]"),
        re.compile(r"[ \t]*[\"']?([\w.-]{1,64})"),
        re.compile(r"[ \t]*(\"[^\"\n]{4,}\"|'[^'\n]{4,}'|(?!\[redacted|\ue000)[^\s\"'`,;]{6,})"),
    )


def _hide_assignments(text: str, hide: Hide) -> str:
    """`KEY=value` and `KEY: value` with a secret-looking key, the value hidden. Found from each
    separator, not by a pattern tried at every position (ten times slower on long output)."""
    separators, name_backwards, value_after = _assignment()
    parts, done = [], 0
    for separator in separators.finditer(text):
        at = separator.start()
        if at < done:
            continue
        name = name_backwards.match(text[max(done, at - 80) : at][::-1])
        value = value_after.match(text, at + 1)
        if name and value and _secret_name().search(name.group(1)[::-1]):
            if _is_count(name.group(1)[::-1], value.group(1)):
                continue
            parts += [text[done : value.start(1)], hide(value.group(1))]
            done = value.end(1)
    return "".join(parts) + text[done:] if parts else text


@cache
def _secret_name() -> re.Pattern[str]:
    return re.compile(_SECRET_NAME, re.IGNORECASE)


def _is_count(name: str, value: str) -> bool:
    """A token count (`"input_tokens": 120000`), not a secret: see _COUNT_NAME_ENDS."""
    return name.lower().endswith(_COUNT_NAME_ENDS) and re.fullmatch(_INTEGER, value) is not None


def _looks_secret(name: str, value: str) -> bool:
    """A value worth hiding wherever it appears: a secret-looking name's, long enough, and not a
    path or a plain word (SSH_AUTH_SOCK holds a path; AUTH_MODE=disabled, a word)."""
    if len(value) < MIN_SECRET_CHARS or value.startswith(("/", "~")) or not _secret_name().search(name):
        return False
    if _is_count(name, value):  # MAX_TOKENS=200000000
        return False
    return not (value.isalpha() and len(value) < 16)


def _looks_like_a_token(value: str) -> bool:
    """A value of a .env file whose name does not say secret, but whose shape does: long, one
    word, letters and digits mixed (not `production`, `3000` or a URL without credentials)."""
    if len(value) < 12 or any(char.isspace() for char in value) or "://" in value:
        return False
    return any(char.isdigit() for char in value) and any(char.isalpha() for char in value)


_repository: Path | None = None


def use_repository(root: Path) -> None:
    """The repository whose `.env*` files `redact` reads by default: the construct loop's (its
    agents' worktrees have no such files, they are not committed)."""
    global _repository
    _repository = Path(root)


def _dotenv_values(root: Path) -> frozenset[str]:
    """The secret values of the `.env*` files at the top of `root`. They hold secrets by
    convention (and are git-ignored), so every value that looks like one counts."""
    found: set[str] = set()
    try:
        entries = [entry for entry in os.scandir(root) if entry.name.startswith(".env") and entry.is_file()]
    except OSError:
        return frozenset()
    for entry in entries:
        try:
            stat = entry.stat()
        except OSError:
            continue
        found |= _dotenv_file(entry.path, stat.st_mtime_ns, stat.st_size)
    return frozenset(found)


@lru_cache(maxsize=64)
def _dotenv_file(path: str, mtime_ns: int, size: int) -> frozenset[str]:
    """One .env file's secret values (cached while the file is unchanged)."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    found = set()
    for line in text.splitlines():
        name, sep, value = line.strip().removeprefix("export ").partition("=")
        value = value.strip()
        if not sep or name.startswith("#"):
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if _looks_secret(name, value) or _looks_like_a_token(value):
            found.add(value)
    return frozenset(found)


def secret_values(root: Path | None = None) -> frozenset[str]:
    """The values to hide wherever they appear: the environment's, and those of the .env files of
    `root` and of the repository `use_repository` named (a build's worktree has none of its own)."""
    values = set(_environment_secrets(_environment()))
    for where in {path for path in (root, _repository) if path is not None}:
        values |= _dotenv_values(where)
    return frozenset(values)


def _environment() -> tuple[tuple[str | bytes, str | bytes], ...]:
    """ralph's environment as it is now, as a key: os.environ's own encoded pairs where it has
    them (taken whole in C, where going through the mapping decodes each name and value: redact
    asks for every line a run logs)."""
    data = getattr(os.environ, "_data", None)
    return tuple(data.items()) if isinstance(data, dict) else tuple(os.environ.items())


@lru_cache(maxsize=8)
def _environment_secrets(environment: tuple[tuple[str | bytes, str | bytes], ...]) -> frozenset[str]:
    found = set()
    for encoded_name, encoded_value in environment:
        name, value = os.fsdecode(encoded_name), os.fsdecode(encoded_value)  # as os.environ decodes
        if _looks_secret(name, value):
            found.add(value)
    return frozenset(found)


@lru_cache(maxsize=16)
def _values_pattern(values: frozenset[str]) -> re.Pattern[str] | None:
    if not values:
        return None
    pattern = re.compile("|".join(re.escape(value) for value in sorted(values, key=len, reverse=True)))
    _longest[pattern.pattern] = max(len(value) for value in values)
    return pattern


_longest: dict[str, int] = {}  # a values pattern's longest value, for the margin of a cut


def redact(text: str, root: Path | None = None) -> str:
    """`text` without secrets (see the module's docstring), each replaced by [redacted]; the key
    of a `KEY=value` stays, so a reader still sees what was there. `root`: a repository whose .env
    files count, besides the one `use_repository` named."""
    if not text:
        return text
    return _redact(text, _values_pattern(secret_values(root)))


@cache
def _trigger() -> re.Pattern[str]:
    """Whether a text holds anything the checks below look for: one search in C instead of some
    thirty substring tests in Python for a plain name (a plan of 10,000 tasks redacts each)."""
    literals = [*_TOKEN_SHAPES, *_AUTHORIZATION_MARKS, "://", "=", ":"]
    return re.compile("|".join(re.escape(literal) for literal in literals))


def _redact(text: str, values: re.Pattern[str] | None, hide: Hide | None = None) -> str:
    """`text` with every secret replaced by [redacted], or by what `hide` makes of it."""
    said: str | Callable[[re.Match[str]], str] = REDACTED
    if hide is not None:
        said = lambda match: hide(match.group())  # noqa: E731 (a sub's replacement)
    if values is not None:
        text = values.sub(said, text)
    if not _trigger().search(text):
        return text
    for start in _TOKEN_SHAPES:
        if start in text:
            text = _shape(start).sub(said, text)
    if any(mark in text for mark in _AUTHORIZATION_MARKS):
        text = _authorization().sub(said, text)
    if "://" in text:
        hidden = hide or (lambda _: REDACTED)
        text = _url().sub(
            lambda match: f"{match.group(1)}{hidden(match.group()[len(match.group(1)) : -1])}@", text
        )
    if ("=" in text or ":" in text) and any(word in text.lower() for word in _NAME_WORDS):
        text = _hide_assignments(text, hide or (lambda _: REDACTED))
    return text


# While a cut is made, each character of a secret is one of these (a private-use character): the
# masked text keeps the line's positions, so a cut of it cuts the line where it was meant to.
MASK = "\ue000"
# Past a cut, what is redacted with the part kept besides the longest secret value: enough for a
# token shape, a key block's first line or an assignment's name to be recognised whole.
SHAPE_MARGIN = 256


def _masked(secret: str) -> str:
    return MASK * len(secret)


@cache
def _mask_runs() -> re.Pattern[str]:
    return re.compile(MASK + "+")


def _margin(values: re.Pattern[str] | None) -> int:
    return SHAPE_MARGIN + (_longest.get(values.pattern, len(values.pattern)) if values is not None else 0)


def _head(text: str, limit: int, values: re.Pattern[str] | None, before: str = "") -> str:
    """The first `limit` characters of `text`, redacted as if the whole were (see the module's
    docstring). `before`: what came just before `text` on the same line (a line read in pieces):
    a secret that started there is recognised, and its part in `text` hidden."""
    margin = _margin(values)
    context = before[-margin:]
    window = context + text[: limit + margin]
    masked = _redact(window, values, _masked)[len(context) : len(context) + limit]
    return _mask_runs().sub(REDACTED, masked) if MASK in masked else masked


def redacted_head(text: str, limit: int, root: Path | None = None, before: str = "") -> str:
    """`text` cut to `limit` characters with no piece of a secret left at the cut (`root` as for
    redact, `before` as for OutputLines.head)."""
    return _head(text, limit, _values_pattern(secret_values(root)), before)


def redact_fields(value: T, root: Path | None = None) -> T:
    """`value` (a record: dicts, lists, strings) with every string in it redacted; keys stay."""
    return FieldsRedactor(root)(value)


class FieldsRedactor:
    """`redact_fields` with the secret values read once, for many records in a row."""

    def __init__(self, root: Path | None = None):
        self._values = _values_pattern(secret_values(root))

    def __call__(self, value: T) -> T:
        return cast(T, self._redacted(value))

    def leaves_alone(self, text: str) -> bool:
        """Whether redacting any part of `text` changes nothing: it holds no secret value and none
        of the literals every other check starts from (so no part of it does: one search in C
        tells for many strings joined)."""
        return (self._values is None or not self._values.search(text)) and not _trigger().search(text)

    def _redacted(self, value: object) -> object:
        if isinstance(value, str):
            return _redact(value, self._values) if value else value
        if isinstance(value, dict):
            return {key: self._redacted(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self._redacted(item) for item in value)
        return value


class OutputLines:
    """Redacts a program's output line by line, as it is read. A private key block spans lines: once
    its first line is seen, every line up to its end is hidden whole (a tail of the output that
    starts inside the block must not show its body)."""

    def __init__(self, root: Path | None = None):
        self._values = _values_pattern(secret_values(root))  # read once: a run's output is many lines
        self._in_key = False

    def __call__(self, line: str) -> str:
        return self.head(line)

    def head(self, line: str, limit: int | None = None, before: str = "") -> str:
        """The line redacted; with `limit`, its first `limit` characters, no piece of a secret
        left at the cut. `before`: the same line's text read before this piece (see _head)."""
        if self._in_key:
            if _KEY_END in line:
                self._in_key = False
                return REDACTED + self._cut(line.split(_KEY_END, 1)[1].split("-----", 1)[-1], limit)
            return REDACTED
        redacted = self._cut(line, limit, before)
        if _KEY_BEGIN in line and _KEY_END not in line.split(_KEY_BEGIN, 1)[1]:
            self._in_key = "PRIVATE KEY-----" in line
        return redacted

    def _cut(self, text: str, limit: int | None, before: str = "") -> str:
        if limit is None:
            return _redact(text, self._values)
        return _head(text, limit, self._values, before)


_KEY_BEGIN, _KEY_END = "-----BEGIN ", "-----END "
