"""`ralph init` as a function (ralph/usecases/initialize.py): what it creates and commits, in one
commit, the first time, nothing the second, and a .gitignore with the user's uncommitted edits
appended to but never committed. What it prints is in the init goldens; the merge driver in
test_mergedriver.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralph.usecases import initialize
from tests.support.gitrepo import git


@pytest.fixture
def project(bare_repo: Path) -> Path:
    (bare_repo / "README").write_text("a project\n")
    git(bare_repo, "add", "README")
    git(bare_repo, "commit", "-qm", "initial")
    return bare_repo


def subjects(root: Path) -> list[str]:
    return git(root, "log", "--format=%s").splitlines()


def committed(root: Path) -> list[str]:
    """The files the last commit changed."""
    return sorted(git(root, "show", "--name-only", "--format=", "HEAD").split())


def test_the_first_init_creates_and_commits_what_ralph_needs_and_the_second_does_nothing(project):
    created = initialize.init(project)
    assert created[:3] == [
        "specs/",
        "build/ralph-logs/",
        ".gitignore entries: " + " ".join(initialize.GITIGNORE_LINES),
    ]
    assert created[-1] == "plan.jsonl" and any(item.startswith(".gitattributes entry: ") for item in created)
    assert (project / "plan.jsonl").read_bytes() == b"" and (project / "build" / "ralph-logs").is_dir()
    assert subjects(project) == ["ralph: init", "initial"]  # all of it in one commit
    assert committed(project) == [".gitattributes", ".gitignore", "plan.jsonl"]
    assert git(project, "log", "-1", "--format=%b").strip() == (
        "Ignore ralph's files; merge plan.jsonl by record (ralph's merge driver)."
    )
    assert git(project, "status", "--porcelain") == ""
    head = git(project, "rev-parse", "HEAD")
    assert initialize.init(project) == [] and git(project, "rev-parse", "HEAD") == head


def test_an_older_build_line_already_ignores_the_logs(project):
    (project / ".gitignore").write_text("/build/\n")
    git(project, "add", ".gitignore")
    git(project, "commit", "-qm", "ignore build")
    initialize.init(project)
    lines = (project / ".gitignore").read_text().splitlines()
    assert lines[0] == "/build/" and initialize.LOGS_LINE not in lines and "/plan.jsonl.lock" in lines


def test_a_gitignore_with_the_users_uncommitted_edit_gets_the_lines_but_no_commit(project):
    (project / ".gitignore").write_text("*.pyc")  # the user's, uncommitted, without a final newline
    initialize.init(project, commit=True)
    assert (project / ".gitignore").read_text() == "*.pyc\n" + "\n".join(initialize.GITIGNORE_LINES) + "\n"
    assert committed(project) == [".gitattributes", "plan.jsonl"]  # not the user's .gitignore
    assert "?? .gitignore" in git(project, "status", "--porcelain").splitlines()


def test_without_commit_nothing_is_committed(project):
    head = git(project, "rev-parse", "HEAD")
    assert "plan.jsonl" in initialize.init(project, commit=False)
    assert git(project, "rev-parse", "HEAD") == head
