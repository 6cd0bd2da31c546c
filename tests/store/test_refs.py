"""ralph.store.refs: HEAD's commit and branch read from git's files say what git says, and every
layout the files do not settle is left to git."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ralph.store import refs
from ralph.store.git import Repo
from tests.support.gitrepo import git


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def commit_all(root: Path, files: dict[str, str], message: str = "files") -> None:
    for name, text in files.items():
        (root / name).write_text(text)
    git(root, "add", "--", *files)
    git(root, "commit", "-qm", message)


@pytest.fixture
def work(repo: Path) -> Path:
    commit_all(repo, {"a.txt": "a\n", "b.txt": "b\n"})
    return repo


def gits_answer(root: Path) -> tuple[str | None, str | None]:
    """What git itself says HEAD's commit and branch are."""
    commit = subprocess.run(
        ["git", "rev-parse", "-q", "--verify", "HEAD^{commit}"], cwd=root, capture_output=True, text=True
    ).stdout.strip()
    branch = subprocess.run(
        ["git", "symbolic-ref", "-q", "--short", "HEAD"], cwd=root, capture_output=True, text=True
    ).stdout.strip()
    return commit or None, branch or None


def test_head_and_branch_from_the_files_say_what_git_says_in_every_layout(work, tmp_path):
    repo_ = Repo(work)
    commit_all(work, {"a.txt": "second\n"}, "second")
    git(work, "pack-refs", "--all")  # the branch now lives in packed-refs alone
    assert not (work / ".git" / "refs" / "heads" / "main").exists()
    assert repo_.head() == gits_answer(work)[0] and repo_.branch() == "main"
    commit_all(work, {"a.txt": "third\n"}, "third")  # a loose ref again, newer than the packed one
    assert repo_.head() == head(work) != git(work, "rev-parse", "HEAD~1").strip()

    git(work, "checkout", "-q", "-b", "feature/nested")
    assert (repo_.head(), repo_.branch()) == gits_answer(work) == (head(work), "feature/nested")
    git(work, "checkout", "-q", "--detach", "HEAD~1")
    assert (repo_.head(), repo_.branch()) == gits_answer(work) == (head(work), None)
    git(work, "checkout", "-q", "--orphan", "unborn")
    assert (repo_.head(), repo_.branch()) == gits_answer(work) == (None, "unborn")

    git(work, "checkout", "-q", "-f", "main")
    linked = tmp_path / "linked"
    git(work, "worktree", "add", "-q", "-b", "side", str(linked))
    assert (Repo(linked).head(), Repo(linked).branch()) == gits_answer(linked) == (head(work), "side")
    commit_all(linked, {"b.txt": "on side\n"}, "side")  # the worktree's branch moves, main's does not
    assert Repo(linked).head() == head(linked) != repo_.head() == head(work)


def test_head_asks_git_where_the_files_are_not_the_usual_layout(work):
    repo_ = Repo(work)
    real = head(work)
    # HEAD naming a symbolic ref that names the branch: git follows both, the file reader does not.
    git(work, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
    git(work, "symbolic-ref", "HEAD", "refs/heads/alias")
    assert repo_.head() == real and repo_.branch() == "alias"


def test_what_the_files_do_not_settle_is_asked_of_git(tmp_path):
    git_dir = tmp_path / "g"
    git_dir.mkdir()
    (git_dir / "HEAD").write_text("ref: refs/heads/.invalid\n")  # a reftable repository's HEAD
    assert refs.head_commit(git_dir) == refs.ASK_GIT and refs.head_branch(git_dir) == refs.ASK_GIT
    (git_dir / "HEAD").write_text("ref: refs/remotes/origin/main\n")  # not a branch of refs/heads
    assert refs.head_commit(git_dir) == refs.ASK_GIT and refs.head_branch(git_dir) == refs.ASK_GIT
    (git_dir / "HEAD").write_text("ref: refs/heads/main\n")
    (git_dir / "refs" / "heads").mkdir(parents=True)
    (git_dir / "refs" / "heads" / "main").write_text("ref: refs/heads/other\n")  # symbolic again
    assert refs.head_commit(git_dir) == refs.ASK_GIT and refs.head_branch(git_dir) == "main"
    (git_dir / "HEAD").write_bytes(b"\xff\xfe")  # not text
    assert refs.head_commit(git_dir) == refs.ASK_GIT and refs.head_branch(git_dir) == refs.ASK_GIT
    assert refs.head_commit(tmp_path / "none") == refs.ASK_GIT  # no HEAD file at all
    (git_dir / "HEAD").unlink()
    (git_dir / "HEAD").symlink_to(git_dir / "refs" / "heads" / "main")  # as git made it long ago
    assert refs.head_commit(git_dir) == refs.ASK_GIT and refs.head_branch(git_dir) == refs.ASK_GIT
