"""Why a failed agent run failed, read from what its CLI reported: a rate limit, a usage limit (with
its reset time when the CLI says it), an overloaded or failing server (5xx), an authentication
error, or anything else. Pure: the adapters call `classify` on their structured error output.

The loop waits out the first three (they say nothing about the work) and stops on an
authentication error (no retry can fix it); only "other" counts against the task."""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta

from ralph.agents.events import FailureEvent

RATE_LIMIT = "rate_limit"
USAGE_LIMIT = "usage_limit"
OVERLOADED = "overloaded"
AUTH = "auth"
NETWORK = "network"
OTHER = "other"
WAITED_OUT = frozenset({RATE_LIMIT, USAGE_LIMIT, OVERLOADED, NETWORK})

_STATUS_IN_TEXT = re.compile(
    r"(?:\bstatus(?:Code)?\W{0,3}|API Error:?\s*|\bHTTP\s*|\"code\"\s*:\s*)(\d{3})\b", re.I
)
_USAGE = re.compile(
    r"usage limit|usage_limit|hit your (?:usage )?limit|\d+-hour limit|weekly limit|quota|insufficient_quota|"
    r"billing|out of credits|credit balance|limit resets|resets? at|resets \d",
    re.I,
)
_RATE = re.compile(r"rate[ _-]?limit|too many requests|resource_exhausted", re.I)
_OVERLOADED = re.compile(
    r"overloaded|server error|internal error|service unavailable|bad gateway|gateway timeout|"
    r"temporarily unavailable|\bunavailable\b|api_error\b",
    re.I,
)
_NETWORK = re.compile(
    r"ECONNRESET|ECONNREFUSED|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|socket hang up|fetch failed|"
    r"connection (?:reset|refused|error|timed out|closed)|network (?:error|is unreachable)",
    re.I,
)
_AUTH = re.compile(
    r"authentication|unauthori[sz]ed|invalid (?:x-)?api[ _-]?key|api key (?:not valid|is invalid)|"
    r"permission_error|/login\b|not logged in|log ?in again|oauth token|invalid_api_key|"
    r"\bforbidden\b|permission denied",
    re.I,
)
# Claude Code's usage-limit message ends with the reset time in epoch seconds: "...reached|1763913600".
_EPOCH = re.compile(r"\|(\d{10})\b")
_DURATION = r"\d+(?:\.\d+)?\s*(?:ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?)\b"
_RETRY_IN = re.compile(
    rf"(?:retry|try again)\w*\s+(?:after|in)\s+((?:{_DURATION}(?:,?\s*(?:and\s+)?)?)+)", re.I
)
_RETRY_DELAY = re.compile(r"\"retryDelay\"\s*:\s*\"(\d+(?:\.\d+)?)s\"")
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|milli\w*|s\w*|m\w*|h\w*)", re.I)
# "resets at 5pm", "resets 5:30pm", "resets at 17:00" (the CLI's local time).
_RESETS_AT = re.compile(r"resets?\s+(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\b", re.I)


def classify(
    status: int | None, text: str, retry_after_s: float | None = None, now: float | None = None
) -> FailureEvent:
    """What a failed run's error says: `status` is the HTTP status when the CLI reports it,
    `text` its error message, `retry_after_s` a Retry-After the CLI passed on."""
    now = time.time() if now is None else now
    text = str(text or "")[:4000]
    if status is None:
        found = _STATUS_IN_TEXT.search(text)
        status = int(found.group(1)) if found else None
    reset_at = _reset_at(text, now)
    if retry_after_s is None:
        retry_after_s = _retry_after(text)
    if status in (401, 403) or (status is None and _AUTH.search(text)):
        kind = AUTH
    elif _RATE.search(text) and status in (None, 429):
        kind = RATE_LIMIT
    elif _USAGE.search(text) and status in (None, 429, 402):
        kind = USAGE_LIMIT
    elif status == 429:
        kind = RATE_LIMIT
    elif (status is not None and (status >= 500 or status == 408)) or (
        status is None and _OVERLOADED.search(text)
    ):
        kind = OVERLOADED
    elif _NETWORK.search(text):
        kind = NETWORK
    else:
        kind = OTHER
    message = " ".join(text.split())[:300]
    return FailureEvent(kind, message, status, retry_after_s, reset_at)


def _retry_after(text: str) -> float | None:
    found = _RETRY_DELAY.search(text)
    if found:
        return float(found.group(1))
    found = _RETRY_IN.search(text)
    if not found:
        return None
    total = 0.0
    for number, unit in _PART.findall(found.group(1)):
        total += float(number) * _seconds_per(unit.lower())
    return total or None


def _seconds_per(unit: str) -> float:
    if unit.startswith(("ms", "milli")):
        return 0.001
    return 3600 if unit.startswith("h") else 60 if unit.startswith("m") else 1


def _reset_at(text: str, now: float) -> float | None:
    found = _EPOCH.search(text)
    if found:
        return float(found.group(1))
    found = _RESETS_AT.search(text)
    if not found:
        return None
    hour, minute, half = int(found.group(1)), int(found.group(2) or 0), (found.group(3) or "").lower()
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half == "pm" else 0)
    if hour > 23 or minute > 59:
        return None
    local = datetime.fromtimestamp(now)
    reset = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if reset <= local:
        reset += timedelta(days=1)
    return reset.timestamp()


def retry_after_header(headers: object) -> float | None:
    """Seconds from a Retry-After (or retry-after-ms) header, as some CLIs pass the response on."""
    if not isinstance(headers, dict):
        return None
    lowered = {str(key).lower(): value for key, value in headers.items()}
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return float(lowered[key]) * scale
        except (KeyError, TypeError, ValueError):
            continue
    return None
