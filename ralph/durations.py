"""Durations as people write them in flags and config: milliseconds ('300000', as the config's
`*_ms` keys hold them) or with a unit ('1500ms', '90s', '5m', '1.5h')."""

from __future__ import annotations

import re

from ralph.errors import InvalidInput

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def parse_duration(text: str) -> float:
    """Seconds from '300000' (milliseconds, as the config's timeout_ms), '90s', '5m', '1.5h'."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", str(text))
    if not match or float(match.group(1)) <= 0:
        raise InvalidInput(f"invalid duration {text!r}: use milliseconds or a unit, e.g. 300000, 90s, 5m")
    return float(match.group(1)) * _UNITS[match.group(2) or "ms"]


def spoken(seconds: float) -> str:
    """An age or a TTL in the largest whole unit that reads well: 45s, 12 min, 3 h, 4 days."""
    if seconds < 120:
        return f"{max(0, int(seconds))}s"
    if seconds < 2 * 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} days"
