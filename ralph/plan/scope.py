"""File scope: the path patterns a task may change (`"scope": ["src/auth/**", "tests/test_auth.py"]`).

Patterns are relative to the repository root, `/`-separated: `*` and `?` match within one path
segment, `**` as a whole segment matches any number of segments (none included), and a pattern
ending in `/` names a folder: everything under it (`src/` is `src/**`). A task without `scope` may
change anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

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


# A task's coverage in words: each list of it, as people read it.
COVERAGE_WORDS = (
    ("touched", "planned and touched"),
    ("untouched", "planned and untouched"),
    ("unplanned", "touched and unplanned"),
)


@dataclass(frozen=True)
class Coverage:
    """A task's `scope` beside the files its build changed: the files its scope allows (planned
    and touched), the patterns no changed file matches (planned and untouched) and the files no
    pattern allows (touched and unplanned)."""

    task: str
    scope: tuple[str, ...]
    touched: tuple[str, ...]
    untouched: tuple[str, ...]
    unplanned: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "scope": list(self.scope),
            "touched": list(self.touched),
            "untouched": list(self.untouched),
            "unplanned": list(self.unplanned),
        }


def coverage(task: str, scope: object, files: object) -> Coverage | None:
    """The comparison for a task with a scope and a build's files (None for one without either;
    a hand-edited value that is not a list of strings counts as none)."""
    if not _strings(scope) or not _strings(files):
        return None
    assert isinstance(scope, list) and isinstance(files, list)
    unplanned = outside(scope, files)
    touched = sorted(set(files) - set(unplanned))
    untouched = [pattern for pattern in scope if not any(matches(pattern, path) for path in files)]
    return Coverage(task, tuple(scope), tuple(touched), tuple(untouched), tuple(unplanned))


def coverage_total(rows: list[Coverage]) -> dict[str, int]:
    """The comparison summed over tasks: how many tasks, scope patterns, files planned and touched,
    patterns untouched and files unplanned."""
    return {
        "tasks": len(rows),
        "scope": sum(len(row.scope) for row in rows),
        "touched": sum(len(row.touched) for row in rows),
        "untouched": sum(len(row.untouched) for row in rows),
        "unplanned": sum(len(row.unplanned) for row in rows),
    }


def coverage_line(row: Coverage) -> str:
    """One task's comparison in words, for people (the report, `ralph log --task`)."""
    parts = [f"{said} {', '.join(getattr(row, key)) or '-'}" for key, said in COVERAGE_WORDS]
    return f"{row.task} scope {', '.join(row.scope)}: " + "; ".join(parts)


def total_line(total: dict[str, int]) -> str:
    return (
        f"tasks with a scope {total['tasks']}: files planned and touched {total['touched']},"
        f" patterns untouched {total['untouched']} of {total['scope']}, files unplanned {total['unplanned']}"
    )


def _strings(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, str) for item in value)
