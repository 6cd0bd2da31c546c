"""The pre-commit hook as ralph runs it for run_hooks (ralph.loop.process.commit_hook): from the
commit the run started on where core.hooksPath puts it in the work tree. The hostile builds it
stops: tests/loop/process/test_sandbox.py's
test_a_pre_commit_hook_in_the_work_tree_runs_as_the_run_started_with_it."""

from __future__ import annotations

import os
from pathlib import Path

from ralph.loop.process.commit_hook import hook_argv, start_refusal
from ralph.store.git import Repo
from tests.support.gitrepo import git

HOOK = "#!/bin/sh\necho the person's hook\n"


def husky(repo: Path) -> tuple[Path, str]:
    hook = repo / ".husky" / "pre-commit"
    hook.parent.mkdir()
    hook.write_text(HOOK)
    hook.chmod(0o755)
    git(repo, "add", ".husky")
    git(repo, "commit", "-qm", "hook", "--no-verify")
    git(repo, "config", "core.hooksPath", ".husky")
    return hook, git(repo, "rev-parse", "HEAD").strip()


def test_a_hook_in_the_git_directory_runs_as_it_is(repo, tmp_path):
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(HOOK)
    hook.chmod(0o755)
    start = git(repo, "rev-parse", "HEAD").strip()
    assert hook_argv(Repo(repo), start, tmp_path) == [str(hook)]


def test_a_hook_in_the_work_tree_runs_in_place_while_it_is_as_the_start_has_it(repo, tmp_path):
    hook, start = husky(repo)
    assert hook_argv(Repo(repo), start, tmp_path) == [str(hook)]
    assert start_refusal(Repo(repo), run_hooks=True) is None


def test_a_rewritten_removed_or_fifo_hook_runs_as_a_copy_of_the_start_commits(repo, tmp_path):
    hook, start = husky(repo)
    for change in ("rewrite", "remove", "fifo"):
        hook.unlink(missing_ok=True)
        if change == "rewrite":
            hook.write_text("#!/bin/sh\nexit 0\n")
            hook.chmod(0o755)
        elif change == "fifo":
            os.mkfifo(hook)  # never read: it would block ralph
        (argv,) = [hook_argv(Repo(repo), start, tmp_path / change)]
        assert argv == [str(tmp_path / change / ".husky" / "pre-commit")], change
        copy = Path(argv[0])
        assert copy.read_text() == HOOK and os.access(copy, os.X_OK)


def test_a_hook_made_during_the_run_is_no_hook_of_its_start(repo, tmp_path):
    start = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "config", "core.hooksPath", ".husky")
    (repo / ".husky").mkdir()
    (repo / ".husky" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (repo / ".husky" / "pre-commit").chmod(0o755)
    assert hook_argv(Repo(repo), start, tmp_path) is None


def test_a_hook_in_the_work_tree_that_head_lacks_is_refused_only_with_run_hooks(repo):
    git(repo, "config", "core.hooksPath", ".husky/_")
    (repo / ".husky" / "_").mkdir(parents=True)
    (repo / ".husky" / "_" / "pre-commit").write_text(HOOK)
    (repo / ".husky" / "_" / "pre-commit").chmod(0o755)
    assert start_refusal(Repo(repo), run_hooks=False) is None
    said = start_refusal(Repo(repo), run_hooks=True)
    assert said is not None and said.startswith("run_hooks: the pre-commit hook .husky/_/pre-commit lies in")
