"""The review's aspects (REVIEW, `ralph review`): one fresh agent per aspect reads the whole change
for one concern. ralph ships five (ralph/loop/runs/templates/review/<name>.md); a repository changes
one or adds its own as `.ralph/review/<name>.md`. Those files are read from a commit (the run's
first, as the judges' prompts are: ralph.loop.runs.judged), never from a work tree a build may
have rewritten. Config `review`: true for the defaults and the repository's own, false for none,
or a list of names."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ralph.loop.runs.prompts import PACKAGE_PROMPTS

DEFAULT_ASPECTS = ("bugs-and-security", "goal", "tests", "simplicity", "docs")
REVIEW_DIR = ".ralph/review"  # the repository's aspects: <name>.md
PACKAGE_ASPECTS = PACKAGE_PROMPTS / "review"
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")  # as plan.models.AspectName
MAX_ROUNDS = 2  # every aspect, then once more for critical findings only


@dataclass(frozen=True)
class Aspect:
    name: str
    text: str  # what its agent looks for
    source: str  # where the text came from: ralph's, or the repository's file


# What a commit holds: the names of the files under REVIEW_DIR, and one file's bytes (None: none).
Listing = Callable[[], list[str]]
Reading = Callable[[str], "bytes | None"]


def chosen(setting: bool | tuple[str, ...], listed: Listing, read: Reading) -> tuple[list[Aspect], list[str]]:
    """The aspects a review runs, and the names it cannot (one line each): `setting` True, the
    defaults and the repository's own; False, none; else those named, each the repository's file
    or one of ralph's."""
    if setting is False:
        return [], []
    own = sorted(
        Path(path).stem
        for path in listed()
        if Path(path).parent.as_posix() == REVIEW_DIR
        and path.endswith(".md")
        and NAME.fullmatch(Path(path).stem)
    )
    names = list(dict.fromkeys([*DEFAULT_ASPECTS, *own])) if setting is True else list(setting)
    found, problems = [], []
    for name in names:
        aspect = _aspect(name, read)
        if aspect is None:
            problems.append(f"review aspect {name!r}: no {REVIEW_DIR}/{name}.md and none of ralph's")
        else:
            found.append(aspect)
    return found, problems


def _aspect(name: str, read: Reading) -> Aspect | None:
    if not NAME.fullmatch(name):
        return None
    path = f"{REVIEW_DIR}/{name}.md"
    data = read(path)
    if data is not None:
        return Aspect(name, data.decode("utf-8", "replace"), path)
    shipped = PACKAGE_ASPECTS / f"{name}.md"
    if shipped.is_file():
        return Aspect(name, shipped.read_text(encoding="utf-8"), "ralph")
    return None
