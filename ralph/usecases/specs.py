"""`ralph spec new`: a spec file from a template that says what a good spec holds, for a person to
fill in (the on-ramp: specs/ starts empty)."""

from __future__ import annotations

import re
from pathlib import Path
from string import Template

from ralph.errors import InvalidInput, Refused
from ralph.text import printable

SPECS_DIR = "specs"
TEMPLATE = Path(__file__).parent / "templates" / "spec.md"
# A file name that needs no quoting in a shell and reads the same on every system.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def spec_of(name: str) -> str:
    """The spec file a spec name stands for, relative to the repository root."""
    return f"{SPECS_DIR}/{name}.md"


def new_spec(root: Path, name: str) -> str:
    """Write specs/NAME.md from the template and return its path relative to root. An existing
    file is never overwritten. Nothing is committed: the spec is the person's to write first."""
    name = name.removesuffix(".md")
    if not _NAME.fullmatch(name):
        raise InvalidInput(
            f"bad spec name {printable(name)!r}: use letters, digits, '-', '_' and '.'"
            " (it becomes specs/NAME.md)"
        )
    relative = f"{SPECS_DIR}/{name}.md"
    path = root / relative
    if path.exists() or path.is_symlink():
        raise Refused(f"{relative} exists: edit it, or choose another name (nothing was written)")
    if path.parent.exists() and not path.parent.is_dir():
        raise Refused(f"{SPECS_DIR} is not a folder (nothing was written)")
    title = re.sub(r"[-_.]+", " ", name).strip().capitalize()
    text = Template(TEMPLATE.read_text(encoding="utf-8")).substitute(title=title, name=name)
    path.parent.mkdir(exist_ok=True)
    with open(path, "x", encoding="utf-8") as handle:  # "x": a file made meanwhile is not overwritten
        handle.write(text)
    return relative


def require_spec_file(root: Path, spec: str, label: str) -> None:
    """A spec a command is given names a file in the repository (relative to its top, as the plan
    records it): a task of a spec that does not exist would be planned and checked against nothing."""
    path = root / spec
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "does not exist"
        raise InvalidInput(f"{label}: the spec {printable(spec)} {what} (a path from the repository's top)")
