"""ralph.store.git.worktrees against real git repositories: a worktree made, and removed with
whatever was changed in it."""

from __future__ import annotations

from ralph.store.git import Repo
from tests.support.gitfiles import head
from tests.support.gitrepo import git


def test_a_worktree_is_a_detached_checkout_of_the_commit_and_goes_with_its_changes(work, tmp_path):
    hook = work / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path / 'hook-ran'}\n")
    hook.chmod(0o755)
    main = Repo(work)
    commit = head(work)
    other = main.worktrees.add(tmp_path / "checkout", commit)
    assert other.root == tmp_path / "checkout" and other.head() == commit and other.branch() is None
    assert (other.root / "sub" / "e.txt").read_text() == "e\n" and other.changes.paths() == set()
    assert not (tmp_path / "hook-ran").exists()  # the user's hook is for the user's checkouts
    (other.root / "a.txt").write_text("changed in the worktree\n")
    (other.root / "new.txt").write_text("added\n")
    assert other.changes.paths() == {"a.txt", "new.txt"} and main.changes.paths() == set()
    main.worktrees.remove(other.root)
    assert not other.root.exists() and len(git(work, "worktree", "list").splitlines()) == 1
    assert main.changes.paths() == set() and head(work) == commit


def test_removing_a_worktree_whose_folder_is_gone_forgets_it(work, tmp_path):
    import shutil

    main = Repo(work)
    other = main.worktrees.add(tmp_path / "checkout", head(work))
    shutil.rmtree(other.root)
    main.worktrees.remove(other.root)
    assert len(git(work, "worktree", "list").splitlines()) == 1
