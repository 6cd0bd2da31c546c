"""ralph.store.gitlog: a file's history, commit by commit, from one `git log -p` process."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from ralph.errors import GitError
from ralph.store.git import Repo
from ralph.store.gitlog import file_history
from tests.support.gitrepo import git


def commit_plan(root, text: str, message: str) -> str:
    (root / "plan.jsonl").write_text(text)
    git(root, "add", "plan.jsonl")
    git(root, "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD").strip()


def test_each_change_oldest_first_with_the_lines_it_removed_and_added(bare_repo):
    first = commit_plan(bare_repo, "a\nb\n", "first")
    (bare_repo / "other.txt").write_text("not the plan\n")
    git(bare_repo, "add", "other.txt")
    git(bare_repo, "commit", "-qm", "another file only")
    second = commit_plan(bare_repo, "a\nB\nc\r\n", "second")
    changes = list(file_history(Repo(bare_repo), "plan.jsonl"))
    assert [(c.commit, c.subject, c.removed, c.added) for c in changes] == [
        (first, "first", [], ["a", "b"]),
        (second, "second", ["b"], ["B", "c"]),  # a CRLF line ending is not part of the line
    ]
    assert changes[0].author == "Test Author" and changes[0].time[:4].isdigit()


def test_a_merge_counts_as_what_it_changed_on_the_first_parent(bare_repo):
    commit_plan(bare_repo, "a\n", "base")
    git(bare_repo, "checkout", "-qb", "side")
    commit_plan(bare_repo, "a\nside\n", "on the side")
    git(bare_repo, "checkout", "-q", "main")
    (bare_repo / "x.txt").write_text("x\n")
    git(bare_repo, "add", "x.txt")
    git(bare_repo, "commit", "-qm", "main moves on")
    git(bare_repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    changes = list(file_history(Repo(bare_repo), "plan.jsonl"))
    assert [(c.subject, c.added) for c in changes] == [("base", ["a"]), ("merge side", ["side"])]


def test_no_commit_yet_is_no_history(bare_repo):
    assert list(file_history(Repo(bare_repo), "plan.jsonl")) == []


def test_a_caller_that_stops_early_stops_git_and_a_failure_names_git_log(bare_repo):
    for n in range(3):
        commit_plan(bare_repo, f"{n}\n", f"commit {n}")
    history = file_history(Repo(bare_repo), "plan.jsonl")
    assert isinstance(history, Generator)  # declared an Iterator; this test closes it early
    assert next(history).subject == "commit 0"
    history.close()  # git is killed and reaped, no error for that
    with pytest.raises(GitError, match="^git log failed: .*no-such-rev"):
        list(file_history(Repo(bare_repo), "plan.jsonl", rev="no-such-rev"))
