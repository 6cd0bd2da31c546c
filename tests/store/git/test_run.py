"""ralph.store.git.run against real git repositories: how git is run (its environment, its
options, its timeout) and how a failure is named."""

from __future__ import annotations

import pytest

from ralph.errors import GitError
from ralph.store.git import Repo
from tests.support.gitfiles import head
from tests.support.gitrepo import git


def test_the_git_environment_of_a_hook_does_not_redirect_repo(work, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(elsewhere / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(elsewhere))
    (work / "a.txt").write_text("changed\n")
    assert Repo(work).changes.paths() == {"a.txt"}


def test_a_failure_names_the_git_command_past_its_settings(work, tmp_path):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "file").write_text("in the way\n")
    with pytest.raises(
        GitError, match="^git worktree failed: "
    ):  # run as `git -c core.hooksPath=... worktree`
        Repo(work).worktrees.add(taken, head(work))


def test_a_git_call_that_outlives_its_timeout_is_stopped_and_fails(work, monkeypatch):
    from ralph.store.git import run as run_module

    monkeypatch.setattr(run_module, "GIT_TIMEOUT_S", 0.2)
    monkeypatch.setattr(run_module, "git_argv", lambda args: ["sleep", "60"])  # a git that hangs
    repo_ = Repo(work)
    with pytest.raises(GitError, match=r"git status did not finish in 0.2s"):
        repo_.git("status")
    with pytest.raises(GitError, match=r"git log did not finish in 0.2s"):
        list(repo_.lines("log"))


def test_the_options_every_diff_gets_go_before_its_end_of_options_and_its_paths():
    """After `--end-of-options` git reads every word as a revision, after `--` as a path: the
    options ralph always gives a command (here diff's) go before both."""
    from ralph.store.git.run import git_argv

    argv = git_argv(("diff", "--name-only", "--end-of-options", "a...b", "--", "x"))
    assert argv[argv.index("--end-of-options") :] == ["--end-of-options", "a...b", "--", "x"]
    assert "--no-ext-diff" in argv[: argv.index("--end-of-options")]
    argv = git_argv(("diff", "--name-only", "a", "--", "x"))
    assert argv[argv.index("--") :] == ["--", "x"] and "--no-ext-diff" in argv
