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


# A requirement as a `*` item: the checked format takes any list marker, and the fake agents make a
# task of each `- ` line only (tests/support/scripts/fake_agent.py), so the tasks stay the test's.
REQUIREMENT = "* [ ] what the test asks for is built — verify: the gate passes"


def as_checked(spec: str) -> str:
    """A test's spec (the fake agents' form: each `- ` line a task for PLAN, or no line at all
    when the test adds the tasks) made one the spec check passes, by a `## Requirements` section
    at its end with one requirement the fake agents do not read as a task. A spec that passes
    already is left as it is."""
    from ralph.usecases.spec_lint import spec_report

    if spec_report(spec).ok:
        return spec
    return spec.rstrip("\n") + "\n\n## Requirements\n\n" + REQUIREMENT + "\n"
