"""File scope: the path patterns a task may change (`"scope": ["src/auth/**", "tests/test_auth.py"]`).

Patterns are relative to the repository root, `/`-separated: `*` and `?` match within one path
segment, `**` as a whole segment matches any number of segments (none included), and a pattern
ending in `/` names a folder: everything under it (`src/` is `src/**`). A task without `scope` may
change anything.
"""

from __future__ import annotations

import re
from functools import lru_cache

SCOPE_VIOLATION = "scope_violation"  # the verdict on a build that changed files outside its scope


@lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern[str]:
    parts = []
    segments = _segments(pattern)
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
            continue
        text = "".join(
            "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char) for char in segment
        )
        parts.append(text if last else text + "/")
    return re.compile("".join(parts))


def matches(pattern: str, path: str) -> bool:
    return _regex(pattern).fullmatch(path) is not None


def outside(scope: list[str] | None, files: list[str] | set[str]) -> list[str]:
    """The files no pattern of `scope` allows (none when the task declares no scope)."""
    if not scope:
        return []
    return sorted(path for path in files if not any(matches(pattern, path) for pattern in scope))


def overlaps(a: list[str] | None, b: list[str] | None) -> bool:
    """Whether two tasks' scopes may name a common file. Tasks without a scope are not held
    apart: their conflicts, if any, show when their builds are merged."""
    if not a or not b:
        return False
    return any(_patterns_overlap(p, q) for p in a for q in b)


def _patterns_overlap(p: str, q: str) -> bool:
    """Segment by segment: two literal segments that differ keep the patterns apart; a wildcard
    segment is taken to match (erring towards "overlap": builds are then only run one after
    another); `**` matches whatever the rest of the other pattern is."""
    ps, qs = _segments(p), _segments(q)
    for x, y in zip(ps, qs, strict=False):  # the shorter one ends first
        if x == "**" or y == "**":
            return True
        if _literal(x) and _literal(y):
            if x != y:
                return False
        elif _literal(x) and not matches(y, x) or _literal(y) and not matches(x, y):
            return False
    return len(ps) == len(qs)


def _segments(pattern: str) -> list[str]:
    """A pattern's segments; one ending in `/` names a folder, and so everything under it."""
    folder = pattern.endswith("/") and pattern.strip("/") != ""
    return pattern.strip("/").split("/") + (["**"] if folder else [])


def _literal(segment: str) -> bool:
    return not any(char in segment for char in "*?")
