"""Specs in the checked format (docs/specs.md) for the tests that plan or build one: with the spec
check on, as it is by default, `ralph construct` plans only a spec that passes it."""

from __future__ import annotations

from pathlib import Path


def checked_spec(title: str = "An example", *requirements: str, body: str = "") -> str:
    """A spec `ralph spec check` passes: a title, `body` (the text a test's fake agents read) and
    each requirement as a checklist item with a way to verify it."""
    items = requirements or ("every task of the plan is built",)
    lines = [f"# {title}", ""]
    if body:
        lines += [body.rstrip("\n"), ""]
    lines += ["## Requirements", ""]
    lines += [f"- [ ] {item} — verify: the gate passes" for item in items]
    return "\n".join(lines) + "\n"


def write_spec(root: Path, relative: str = "specs/app.md", *requirements: str, body: str = "") -> Path:
    """The spec at root/relative, in the checked format; its folder made when missing."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(checked_spec(path.stem, *requirements, body=body), encoding="utf-8")
    return path
