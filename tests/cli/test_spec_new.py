"""`ralph spec new NAME`: a spec to fill in, from the template that says what a good spec holds;
an existing file or a bad name changes nothing."""

from __future__ import annotations

import re

from tests.support.cli import Ralph
from tests.support.gitrepo import git

SECTIONS = ["## Goal", "## Requirements", "## Constraints", "## Out of scope", "## How to verify"]


def test_writes_the_template_under_specs_and_commits_nothing(ralph: Ralph):
    head = git(ralph.root, "rev-parse", "HEAD")
    done = ralph("spec", "new", "login-form")
    assert done.stdout.splitlines() == [
        "wrote specs/login-form.md: replace each comment with your text and commit it, then",
        "  ralph construct specs/login-form.md --dry-run    # what the first run would do",
    ]
    text = (ralph.root / "specs" / "login-form.md").read_text()
    assert text.startswith("# Login form\n") and "`ralph construct specs/login-form.md`" in text
    assert [line for line in text.splitlines() if line.startswith("## ")] == SECTIONS
    assert "- [ ] <one behaviour — verify: the command to run and what it prints>" in text  # a checklist
    assert "$" not in re.sub(r"`[^`]*`", "", text)  # every placeholder filled
    assert git(ralph.root, "rev-parse", "HEAD") == head
    assert git(ralph.root, "status", "--porcelain", "--untracked-files=all") == "?? specs/login-form.md\n"
    assert (
        ralph("spec", "new", "api.md", "--json").stdout == '{"schema_version": 1, "path": "specs/api.md"}\n'
    )


def test_an_existing_spec_is_never_overwritten_and_a_bad_name_is_one_line(ralph: Ralph):
    (ralph.root / "specs" / "mine.md").write_text("my own words\n")
    done = ralph("spec", "new", "mine", code=1)
    assert (
        done.stderr == "ralph: specs/mine.md exists: edit it, or choose another name (nothing was written)\n"
    )
    assert (ralph.root / "specs" / "mine.md").read_text() == "my own words\n"
    for bad in ("../escape", "-x", "a/b", ""):
        done = ralph("spec", "new", "--", bad, code=2)
        assert (
            done.stderr.startswith(f"ralph: bad spec name {bad!r}: use letters")
            and done.stderr.count("\n") == 1
        )
    assert sorted(path.name for path in (ralph.root / "specs").iterdir()) == ["mine.md"]
