"""Whether a spec is ready to be planned: `ralph spec check`, and the refusal `ralph construct`,
`ralph plan` and `--dry-run` make before PLAN turns an unfinished spec into paid work.

The format, as the template (ralph/usecases/templates/spec.md) and docs/specs.md say it:
- a *requirement* is a checklist item (`- [ ] ...`, `- [x] ...`; `*` or `+` too) at the top level
  of a section headed `Requirements` (any heading level; the section runs to the next heading of
  the same or a higher level);
- its *way to verify* is a `verify:` (or `check:`) part anywhere in the item: on its line, or on
  an indented line or sub-bullet under it;
- a *placeholder* is one of the template's `<...>` checklist items, or one of the template's
  section comments left as it was written.
Text inside ``` fences is never read as a heading or an item (a spec may quote Markdown)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any

from ralph.errors import InvalidInput
from ralph.text import printable

REQUIREMENTS = "requirements"  # the heading, compared without case
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_LIST_ITEM = re.compile(r"^( *)[-*+]\s")
_CHECKLIST_ITEM = re.compile(r"^ {0,1}[-*+]\s+\[[ xX]\]\s+(?P<text>.*)$")
_VERIFY = re.compile(r"\b(verify|check)\s*:", re.IGNORECASE)
_COMMENT = re.compile(r"<!--(.*?)-->", re.DOTALL)
FORMAT_HINT = "'- [ ] what must be true — verify: how to check it' under '## Requirements'"


class SpecProblemKind(StrEnum):
    PLACEHOLDER = "placeholder"  # the template's text, not yet replaced
    NO_REQUIREMENTS = "no_requirements"  # no Requirements section, or no checklist item in it
    UNVERIFIABLE = "unverifiable"  # a requirement without a `verify:` part


@dataclass(frozen=True)
class SpecProblem:
    line: int  # 1-based
    kind: SpecProblemKind
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "kind": str(self.kind), "message": self.message}


@dataclass(frozen=True)
class SpecReport:
    """What `spec_report` found: the requirements counted, and every problem by line."""

    requirements: int
    problems: list[SpecProblem]

    @property
    def ok(self) -> bool:
        return not self.problems


@cache
def _template_marks() -> tuple[tuple[str, ...], tuple[re.Pattern[str], ...]]:
    """The template's `<...>` checklist placeholders, and its section comments as patterns (the
    template's $name and $title match anything). Read from the template itself, so the check and
    the template cannot drift apart."""
    from ralph.usecases.specs import TEMPLATE

    text = TEMPLATE.read_text(encoding="utf-8")
    placeholders = tuple(re.findall(r"^- \[ \] (<[^>\n]*>)", text, re.MULTILINE))
    sections = text[text.find("\n## ") :]  # the opening comment is guidance, and may stay
    comments = tuple(_comment_pattern(body) for body in _COMMENT.findall(sections))
    return placeholders, comments


def _comment_pattern(body: str) -> re.Pattern[str]:
    words = _normal(re.sub(r"\$\{?\w+\}?", "\0", body)).split("\0")
    return re.compile(".*?".join(re.escape(word) for word in words), re.DOTALL)


def _normal(text: str) -> str:
    return " ".join(text.split())


def _line_at(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _outside_fences(lines: list[str]) -> list[bool]:
    """For each line, whether it is Markdown (not inside a ``` or ~~~ fence, nor a fence line)."""
    markdown, fence = [], None
    for line in lines:
        found = _FENCE.match(line)
        if fence is None and found:
            fence = found.group(1)
            markdown.append(False)
        elif fence is not None:
            markdown.append(False)
            if line.lstrip().startswith(fence):
                fence = None
        else:
            markdown.append(True)
    return markdown


def _requirements_section(lines: list[str], markdown: list[bool]) -> tuple[int, int] | None:
    """The Requirements section's heading index and its end (exclusive), or None."""
    start, level = None, 0
    for index, line in enumerate(lines):
        heading = _HEADING.match(line) if markdown[index] else None
        if not heading:
            continue
        depth = len(heading.group(1))
        if start is not None and depth <= level:
            return start, index
        if start is None and heading.group(2).strip().lower().rstrip(":") == REQUIREMENTS:
            start, level = index, depth
    return (start, len(lines)) if start is not None else None


def _items(lines: list[str], markdown: list[bool], begin: int, end: int) -> list[tuple[int, str]]:
    """The section's top-level checklist items: each one's index and its whole text (its line and
    the lines under it, up to the next top-level list item). A plain bullet's index is negative:
    -1 - its index (a spec in another format: the message says how to turn it into a checklist)."""
    items: list[tuple[int, list[str]]] = []
    for index in range(begin, end):
        line = lines[index]
        listed = _LIST_ITEM.match(line) if markdown[index] else None
        top_level = bool(listed) and len(listed.group(1)) < 2  # type: ignore[union-attr]
        if top_level and _CHECKLIST_ITEM.match(line):
            items.append((index, [line]))
        elif top_level:
            items.append((-1 - index, []))  # a plain bullet ends the item above it; no requirement
        elif items and items[-1][0] >= 0:
            items[-1][1].append(line)
    return [(index, "\n".join(body)) for index, body in items]


def _placeholders(text: str, lines: list[str]) -> list[SpecProblem]:
    placeholders, comments = _template_marks()
    found = [
        SpecProblem(
            index + 1,
            SpecProblemKind.PLACEHOLDER,
            f"the template's {mark} is still here: write the requirement",
        )
        for index, line in enumerate(lines)
        for mark in placeholders
        if mark in line
    ]
    for match in _COMMENT.finditer(text):
        if any(pattern.fullmatch(_normal(match.group(1))) for pattern in comments):
            found.append(
                SpecProblem(
                    _line_at(text, match.start()),
                    SpecProblemKind.PLACEHOLDER,
                    "the template's comment is still here: replace it with your text",
                )
            )
    return found


def spec_report(text: str) -> SpecReport:
    """Every problem that keeps the spec's text from being planned, by line."""
    lines = text.splitlines()
    markdown = _outside_fences(lines)
    problems = _placeholders(text, lines)
    section = _requirements_section(lines, markdown)
    if section is None:
        problems.append(
            SpecProblem(
                1,
                SpecProblemKind.NO_REQUIREMENTS,
                f"no Requirements section: write each requirement as {FORMAT_HINT}",
            )
        )
        return SpecReport(0, sorted(problems, key=lambda p: p.line))
    placeholders, _ = _template_marks()
    found = _items(lines, markdown, section[0] + 1, section[1])
    items = [(i, body) for i, body in found if i >= 0 and not any(mark in body for mark in placeholders)]
    bullets = [-1 - i for i, _ in found if i < 0]
    if not items:
        problems.append(_no_requirements(section[0], bullets))
    for index, body in items:
        if not _VERIFY.search(body):
            problems.append(
                SpecProblem(
                    index + 1,
                    SpecProblemKind.UNVERIFIABLE,
                    "this requirement has no way to verify it: add 'verify: <a command and what it"
                    " prints, a test, a thing to look at>' on its line or on a line under it",
                )
            )
    return SpecReport(len(items), sorted(problems, key=lambda p: p.line))


def _no_requirements(heading: int, bullets: list[int]) -> SpecProblem:
    """No checklist item under the heading; plain bullets there are a spec in another format."""
    if bullets:
        return SpecProblem(
            bullets[0] + 1,
            SpecProblemKind.NO_REQUIREMENTS,
            f"the requirements are plain bullets, not a checklist: write each as {FORMAT_HINT}",
        )
    return SpecProblem(
        heading + 1,
        SpecProblemKind.NO_REQUIREMENTS,
        f"no requirement under this heading: write each as {FORMAT_HINT}",
    )


def read_spec(path: Path, shown: str) -> str:
    """The spec's text; a missing or unreadable file is one line naming it."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InvalidInput(f"no spec file {printable(shown)}") from None
    except IsADirectoryError:
        raise InvalidInput(f"the spec {printable(shown)} is a folder, not a file") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read the spec {printable(shown)}: {exc.strerror}") from None
    return data.decode("utf-8", errors="replace")


def check_spec_file(path: Path, shown: str) -> SpecReport:
    """spec_report for the file at `path`, named `shown` in errors."""
    return spec_report(read_spec(path, shown))


def problem_line(shown: str, problem: SpecProblem) -> str:
    """One problem as a person reads it: `specs/x.md:12: ...`."""
    return f"{printable(shown)}:{problem.line}: {problem.message}"


def spec_refusal(root: Path, spec: str) -> InvalidInput | None:
    """The one-line refusal of a run asked to plan the spec at `root/spec`, or None when it is
    ready: its first problem, how many more there are, and how to go on without the check."""
    report = check_spec_file(root / spec, spec)
    if report.ok:
        return None
    first = report.problems[0]
    more = len(report.problems) - 1
    others = f" (+{more} more: ralph spec check {printable(spec)})" if more else ""
    return InvalidInput(
        f"{problem_line(spec, first)}{others}; the format is in docs/specs.md, or plan it as it is"
        " with --no-spec-check"
    )
