"""ralph.store.root: the work tree a command acts on, and its git directory, in real repositories
and a real linked worktree."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralph.errors import RalphError
from ralph.store.root import find_root, git_dir
from tests.support.gitrepo import git


def test_find_root_from_a_subfolder(bare_repo):
    deep = bare_repo / "one" / "two"
    deep.mkdir(parents=True)
    assert find_root(deep) == bare_repo.resolve()
    assert find_root(bare_repo) == bare_repo.resolve()


def test_find_root_outside_any_repository_raises(tmp_path):
    outside = tmp_path / "plain" / "folder"
    outside.mkdir(parents=True)
    if any((folder / ".git").exists() for folder in outside.resolve().parents):
        pytest.skip("the temp directory is itself inside a git repository")
    with pytest.raises(RalphError, match="not inside a git repository"):
        find_root(outside)


def test_git_dir_of_a_repository_is_its_dot_git(bare_repo):
    assert git_dir(bare_repo) == bare_repo / ".git"


def test_git_dir_of_a_linked_worktree_is_where_git_keeps_it(bare_repo, tmp_path):
    git(bare_repo, "commit", "-q", "--allow-empty", "-m", "one")
    linked = tmp_path / "linked"
    git(bare_repo, "worktree", "add", "-q", "--detach", str(linked))
    expected = Path(git(linked, "rev-parse", "--absolute-git-dir").strip())
    assert git_dir(linked).resolve() == expected.resolve()
    assert git_dir(linked) != linked / ".git"


def test_git_dir_follows_a_relative_gitdir_file(tmp_path):
    """A submodule's `.git` file names its git directory relative to the work tree."""
    (tmp_path / "modules" / "sub").mkdir(parents=True)
    work = tmp_path / "work"
    work.mkdir()
    (work / ".git").write_text("gitdir: ../modules/sub\n")
    assert git_dir(work).resolve() == (tmp_path / "modules" / "sub").resolve()
