"""A pull request at the end of a run: `construct --pr` and `ralph pr` push the branch to a real
(bare, local) remote and open the request through the forge's CLI, here a stand-in `gh` or `glab`
on PATH that records its arguments and stdin."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.support.construct import add_tasks, construct, in_process
from tests.support.gitrepo import git

STAND_IN = """#!{python}
import json, pathlib, sys
out = pathlib.Path({record!r})
out.write_text(json.dumps({{"argv": sys.argv, "stdin": sys.stdin.read()}}))
print("Creating pull request...")
print("https://forge.example/o/r/pull/7")
"""


def stand_in(tmp_path: Path, name: str) -> Path:
    """A `name` program in a folder of its own; returns the file its call is recorded in."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    record = tmp_path / f"{name}-call.json"
    script = folder / name
    script.write_text(STAND_IN.format(python=sys.executable, record=str(record)))
    script.chmod(0o755)
    return record


@pytest.fixture
def remote(project: Path, tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(project, "remote", "add", "origin", str(bare))
    git(project, "checkout", "-q", "-b", "app")  # the work goes on a branch of its own
    return bare


def env_with(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}


def test_construct_pr_pushes_the_branch_and_opens_the_request_with_the_report(project, remote, tmp_path):
    add_tasks(project, "Parse input")
    record = stand_in(tmp_path, "gh")
    done = construct(project, "--pr", env=env_with(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.endswith("pull request: https://forge.example/o/r/pull/7\n")
    branch = "app"
    assert git(remote, "rev-parse", branch) == git(project, "rev-parse", "HEAD")
    call = json.loads(record.read_text())
    assert call["argv"] == [
        str(tmp_path / "bin" / "gh"), "pr", "create", f"--head={branch}",
        "--title=App (ralph construct: COMPLETE)", "--body-file=-",
    ]  # fmt: skip
    report = done.stdout.split("pull request:")[0].rstrip("\n")
    assert (
        call["stdin"] == f"Built by `ralph construct specs/app.md`; its report:\n\n```text\n{report}\n```\n"
    )
    assert report.startswith("ralph: COMPLETE: ")


@pytest.mark.slow
def test_ralph_pr_opens_a_gitlab_merge_request_as_a_draft_after_a_run_that_did_not_complete(
    project,
    remote,
    tmp_path,
):
    git(project, "remote", "set-url", "origin", "https://gitlab.example.com/o/r.git")
    git(project, "config", "remote.origin.pushurl", str(remote))  # the push goes to the bare one
    (task,) = add_tasks(project, "Undecided [no-verdict]")
    assert construct(project, env=env_with(tmp_path)).returncode == 5  # STUCK
    record = stand_in(tmp_path, "glab")
    done = in_process(["-C", str(project), "pr", "--base", "main", "--json"], env_with(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    branch = "app"
    printed = json.loads(done.stdout)
    assert printed["schema_version"] == 1 and list(printed["pull_request"]) == [
        "forge", "remote", "branch", "commit", "url",
    ]  # fmt: skip
    opened = printed["pull_request"]
    assert opened["forge"] == "glab" and opened["url"] == "https://forge.example/o/r/pull/7"
    assert opened["branch"] == branch and git(remote, "rev-parse", branch).strip() == opened["commit"]
    argv = json.loads(record.read_text())["argv"]
    assert argv[1:5] == ["mr", "create", f"--source-branch={branch}", "--title=App (ralph construct: STUCK)"]
    assert argv[5].startswith("--description=Built by `ralph construct specs/app.md`; its report:")
    assert f"{task} done: Undecided [no-verdict]" in argv[5]
    assert argv[6:] == ["--yes", "--target-branch=main", "--draft"]


def test_a_missing_cli_or_report_is_one_line_and_nothing_is_pushed(project, remote, tmp_path):
    refused = in_process(["-C", str(project), "pr"], dict(os.environ))
    assert refused.returncode == 1
    assert refused.stderr == (
        "ralph: no report of a run here (build/ralph-logs/last-report.json): run ralph construct first\n"
    )
    add_tasks(project, "Parse input")
    only_git = tmp_path / "only-git"  # a PATH with git and nothing else: no gh, wherever it runs
    only_git.mkdir()
    (only_git / "git").symlink_to(shutil.which("git"))
    done = construct(project, "--pr", env={**os.environ, "PATH": str(only_git)})
    assert done.returncode == 1 and done.stdout.startswith("ralph: COMPLETE: ")
    assert done.stderr.splitlines()[-1] == (
        "ralph: no pull request: gh is not installed (GitHub's CLI, https://cli.github.com):"
        " install it and log in, or push and open the request by hand"
    )
    assert git(remote, "for-each-ref") == ""  # nothing pushed
