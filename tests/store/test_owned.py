"""The record of what ralph made (ralph.store.owned): written before, read back, forgotten after."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralph.errors import GitError
from ralph.store import owned
from ralph.store.git import Repo
from ralph.store.owned import Owned, OwnedKind
from tests.support.gitrepo import git
from tests.support.present import present


def test_records_are_kept_in_the_common_git_dir_until_forgotten(repo: Path, tmp_path: Path):
    made = Owned(OwnedKind.BRANCH, "ralph/t-a", start="abc")
    tree = Owned(OwnedKind.WORKTREE, str(tmp_path / "w" / "ralph-build-t-a"), folder=str(tmp_path / "w"))
    owned.record(Repo(repo), made)
    owned.record(Repo(repo), tree)
    worktree = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "--detach", str(worktree), "HEAD")
    # seen the same from another worktree of the repository: one ledger per repository
    assert [o.name for o in owned.recorded(Repo(worktree))] == ["ralph/t-a", tree.name]
    assert present(owned.owns_branch(Repo(repo), "ralph/t-a")).start == "abc"
    assert owned.owns_branch(Repo(repo), "ralph/t-b") is None
    assert owned.owns_worktree(Repo(repo), Path(tree.name)) is not None
    owned.forget(Repo(repo), made)
    owned.forget(Repo(repo), made)  # twice: nothing to do
    assert (
        owned.recorded(Repo(repo)) == [owned.recorded(Repo(repo))[0]]
        and owned.owns_branch(Repo(repo), "ralph/t-a") is None
    )


def test_a_torn_record_is_skipped_not_fatal(repo: Path):
    owned.record(Repo(repo), Owned(OwnedKind.BRANCH, "ralph/t-a"))
    (owned.ledger(Repo(repo)) / "broken.json").write_text('{"kind": "bran')
    assert [o.name for o in owned.recorded(Repo(repo))] == ["ralph/t-a"]


def test_a_git_command_in_a_removed_work_tree_says_so(repo: Path, tmp_path: Path):
    worktree = tmp_path / "gone"
    git(repo, "worktree", "add", "-q", "--detach", str(worktree), "HEAD")
    there = Repo(worktree)
    git(repo, "worktree", "remove", "--force", str(worktree))
    with pytest.raises(GitError, match=f"the work tree {worktree} is gone"):
        there.git("status", "--porcelain")


def test_a_build_branch_is_never_made_over_an_existing_one(repo: Path, tmp_path: Path):
    git(repo, "branch", "ralph/t-a")
    with pytest.raises(GitError):
        Repo(repo).worktrees.add_on_branch(tmp_path / "w", "ralph/t-a", "HEAD")


def test_a_record_another_thread_forgets_while_they_are_listed_is_skipped_not_fatal(repo: Path, monkeypatch):
    """Parallel builds forget their worktrees' records while another thread lists them: a record
    gone between the listing and its reading is simply not there."""
    kept = Owned(OwnedKind.BRANCH, "ralph/t-a")
    gone = Owned(OwnedKind.WORKTREE, "/tmp/ralph-build-t-b")
    owned.record(Repo(repo), kept)
    owned.record(Repo(repo), gone)
    folder = owned.ledger(Repo(repo))
    listed = sorted(folder.glob("*.json"))
    owned.forget(Repo(repo), gone)  # after the listing, before the records are read
    monkeypatch.setattr(Path, "glob", lambda self, pattern: iter(listed))
    assert [o.name for o in owned.recorded(Repo(repo))] == ["ralph/t-a"]
