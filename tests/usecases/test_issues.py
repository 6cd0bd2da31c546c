"""The issue commands as functions (ralph/usecases/issues.py): add, resolve with a note, keep open with
a reason; each one commit whose subject names the issue by its text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralph.errors import InvalidInput
from ralph.usecases import issues
from tests.support.gitrepo import git, said


def message(root: Path) -> str:
    return said(root)


def records(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "plan.jsonl").read_text().splitlines() if line.strip()]


def test_an_issue_is_added_resolved_with_a_note_and_gone_from_the_plan(repo):
    issue = issues.add(repo, "  Passwords are logged  ", priority="high")
    assert (
        issue["id"].startswith("i-")
        and issue["text"] == "Passwords are logged"
        and issue["priority"] == "high"
    )
    assert message(repo) == f"ralph: issue add {issue['id']} Passwords are logged"
    issues.resolve(repo, issue["id"], note="the logger masks them now")
    assert (
        message(repo)
        == f"ralph: issue resolve {issue['id']} Passwords are logged\n\nthe logger masks them now"
    )
    assert issue["id"] not in [r.get("id") for r in records(repo) if r["t"] == "issue"]
    # The note is kept in the plan too: an agent resolves with RALPH_COMMIT=0, and no commit of its own.
    resolved = [r for r in records(repo) if r["t"] == "resolve"]
    assert resolved == [
        {
            "t": "resolve",
            "id": issue["id"],
            "note": "the logger masks them now",
            "text": "Passwords are logged",
        }
    ]


def test_an_issue_resolved_by_an_agent_keeps_its_note_in_the_plan_uncommitted(repo, monkeypatch):
    issue = issues.add(repo, "Dark mode")
    head = message(repo)
    monkeypatch.setenv("RALPH_COMMIT", "0")
    issues.resolve(repo, issue["id"], note="out of scope: the spec has no themes")
    assert message(repo) == head  # nothing committed: the loop commits the agent's plan changes
    assert [r["note"] for r in records(repo) if r["t"] == "resolve"] == [
        "out of scope: the spec has no themes"
    ]
    issues.resolve(repo, issues.add(repo, "No note")["id"])
    assert len([r for r in records(repo) if r["t"] == "resolve"]) == 1  # without a note, no record


def test_keeping_an_issue_open_commits_the_reason(repo):
    issue = issues.add(repo, "Flaky login")
    kept = issues.keep_open(repo, issue["id"], "more tasks will come from it")
    assert kept["id"] == issue["id"]
    assert message(repo) == f"ralph: issue keep {issue['id']} Flaky login\n\nmore tasks will come from it"


def test_a_note_that_is_not_text_is_refused_before_the_plan_is_touched(repo):
    issue = issues.add(repo, "Flaky login")
    before = (repo / "plan.jsonl").read_bytes(), git(repo, "rev-parse", "HEAD")
    with pytest.raises(InvalidInput, match="the note is not valid UTF-8 text"):
        issues.resolve(repo, issue["id"], note="bad \udcff byte")
    assert ((repo / "plan.jsonl").read_bytes(), git(repo, "rev-parse", "HEAD")) == before
