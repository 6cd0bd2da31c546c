"""`ralph skills`: the skills ralph finds, with where each is; one broken is a line on stderr."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import Ralph

MIGRATIONS = """---
name: schema-migration
description: How to add a database migration
types: [feature, bugfix]
---
Run `make migration NAME=...`
"""


def write_skill(root: Path, folder: str, name: str, text: str) -> None:
    path = root / folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_ralph_skills_lists_them_and_names_a_broken_one_on_stderr(repo: Path):
    ralph = Ralph(repo)
    assert "no skills" in ralph("skills").stdout
    write_skill(repo, ".ralph/skills", "migrations", MIGRATIONS)
    shown = ralph("skills").stdout
    assert "schema-migration  .ralph/skills/migrations/SKILL.md (for feature, bugfix tasks)" in shown
    assert json.loads(ralph("skills", "--json").stdout)["skills"][0]["types"] == ["feature", "bugfix"]
    write_skill(repo, ".gemini/skills", "broken", "---\nname: broken\n")
    result = ralph("skills", code=2)
    assert "schema-migration" in result.stdout
    assert (
        result.stderr
        == "ralph: skills: .gemini/skills/broken/SKILL.md:2: the front matter has no closing '---'\n"
    )
