"""A spec is checked before it is planned: `ralph spec check FILE` alone, and `ralph construct`,
`ralph plan` and `--dry-run` refuse a spec that still holds the template's placeholders, has no
requirement, or has one with no way to verify it; one line naming the file and line, exit 2,
nothing committed or changed. --no-spec-check (or the config key spec_check) goes on deliberately."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralph.usecases.spec_lint import spec_report
from tests.support.cli import Ralph
from tests.support.gitrepo import git

AGENT = ("--agent", "command", "--agent-cmd", "true")
READY = """# App

## Goal

A greeting.

## Requirements

- [ ] `app Ada` prints a greeting — verify: `app Ada` prints `Hello, Ada!`
- [x] it has tests
  - verify: `python3 -m unittest` passes
"""


def _status(root: Path) -> tuple[str, str, str]:
    """What a refused command must leave as it was: HEAD, the work tree's state, the plan's bytes."""
    plan = root / "plan.jsonl"
    return (
        git(root, "rev-parse", "HEAD"),
        git(root, "status", "--porcelain", "--untracked-files=all"),
        plan.read_text() if plan.exists() else "",
    )


def test_the_template_as_written_fails_and_a_filled_spec_passes(ralph: Ralph):
    ralph("spec", "new", "app")
    done = ralph("spec", "check", "specs/app.md", code=2)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines and all(line.startswith("ralph: specs/app.md:") for line in lines)
    assert any("the template's <the next> is still here" in line for line in lines)
    assert any("the template's comment is still here" in line for line in lines)
    (ralph.root / "specs" / "app.md").write_text(READY)
    done = ralph("spec", "check", "specs/app.md")
    assert done.stdout == "specs/app.md: ok (2 requirements, each with a way to verify it)\n"
    assert done.stderr == ""
    data = json.loads(ralph("spec", "check", "specs/app.md", "--json").stdout)
    assert data == {
        "schema_version": 1,
        "path": "specs/app.md",
        "ok": True,
        "requirements": 2,
        "problems": [],
    }


def test_json_lists_each_problem_with_its_kind_and_line(ralph: Ralph):
    (ralph.root / "specs" / "app.md").write_text("# App\n\n## Requirements\n\n- [ ] it greets\n")
    done = ralph("spec", "check", "specs/app.md", "--json", code=2)
    data = json.loads(done.stdout)
    assert data["ok"] is False and data["requirements"] == 1
    assert [(p["line"], p["kind"]) for p in data["problems"]] == [(5, "unverifiable")]
    assert done.stderr.startswith("ralph: specs/app.md:5: this requirement has no way to verify it")


def test_a_missing_spec_is_one_line(ralph: Ralph):
    done = ralph("spec", "check", "specs/nope.md", code=2)
    assert done.stderr == "ralph: no spec file specs/nope.md\n"


@pytest.mark.parametrize(
    "command", [("construct", "--gate", ""), ("plan",), ("construct", "--dry-run", "--gate", "")]
)
def test_construct_plan_and_dry_run_refuse_the_unfilled_template(ralph: Ralph, command):
    ralph("spec", "new", "app")
    git(ralph.root, "add", "specs/app.md")
    git(ralph.root, "commit", "-qm", "the template, unfilled")
    before = _status(ralph.root)
    done = ralph(*command, "specs/app.md", *AGENT, code=2)
    refusals = [line for line in done.stderr.splitlines() if "specs/app.md" in line]
    assert refusals and refusals[0].startswith("ralph: specs/app.md:11: the template's comment is still here")
    assert "more: ralph spec check specs/app.md" in refusals[0] and "--no-spec-check" in refusals[0]
    if "--dry-run" not in command:
        assert done.stderr.count("\n") == 1
    assert _status(ralph.root) == before


def test_a_spec_in_another_format_is_told_how_to_fix_it_and_can_go_on_deliberately(ralph: Ralph):
    (ralph.root / "specs" / "app.md").write_text("# App\n\n## Requirements\n- Parse input\n- Print it\n")
    git(ralph.root, "add", "specs/app.md")
    git(ralph.root, "commit", "-qm", "a spec of before the check")
    before = _status(ralph.root)
    dry_run = ("construct", "specs/app.md", "--dry-run", "--gate", "", *AGENT)
    done = ralph(*dry_run, "--spec-check", code=2)
    assert (
        "ralph: specs/app.md:4: the requirements are plain bullets, not a checklist: write each as"
        " '- [ ] what must be true — verify: how to check it'" in done.stderr
    )
    assert _status(ralph.root) == before
    ralph(*dry_run, "--no-spec-check")  # exit 0: it would start
    ralph("config", "set", "spec_check", "false")
    ralph(*dry_run)


def test_the_demo_spec_passes(ralph: Ralph):
    demo = Path(__file__).parents[2] / "ralph" / "demo" / "greeter.md"
    assert spec_report(demo.read_text()).ok
