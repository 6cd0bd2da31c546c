"""`ralph check --staged` and the pre-commit hook of .pre-commit-hooks.yaml: the plan checked is
the one git's index holds, which the commit records, not the file on disk."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.gitrepo import git

ROOT = Path(__file__).resolve().parents[2]
BROKEN = b'{"t": "task", "id": "t-aaaaaa", "name": "A", "deps": ["t-nowhere"]}\n'
FINE = b'{"t": "task", "id": "t-aaaaaa", "name": "A"}\n'


def hook() -> dict:
    (found,) = [
        h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()) if h["id"] == "ralph-check"
    ]
    return found


def run_hook_entry(root: Path) -> subprocess.CompletedProcess:
    """The hook's entry as pre-commit runs it: in the repository, no file names passed."""
    program, *args = shlex.split(hook()["entry"])
    ralph = str(Path(sys.executable).with_name(program))
    return subprocess.run([ralph, *args], cwd=root, capture_output=True, text=True, env={**os.environ})


def stage(root: Path, staged: bytes, on_disk: bytes) -> None:
    (root / "plan.jsonl").write_bytes(staged)
    git(root, "add", "plan.jsonl")
    (root / "plan.jsonl").write_bytes(on_disk)


def test_the_hook_runs_check_staged_on_plan_jsonl_alone():
    found = hook()
    assert found["pass_filenames"] is False and found["files"] == r"^plan\.jsonl$"
    assert shlex.split(found["entry"]) == ["ralph", "check", "--staged"]


def test_a_broken_staged_plan_fails_though_the_file_on_disk_is_fine(repo):
    stage(repo, staged=BROKEN, on_disk=FINE)
    done = run_hook_entry(repo)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "plan.jsonl:1: task t-aaaaaa depends on unknown task t-nowhere\n"
    assert (repo / "plan.jsonl").read_bytes() == FINE  # nothing written


def test_a_fine_staged_plan_passes_though_the_file_on_disk_is_broken(repo):
    stage(repo, staged=FINE, on_disk=BROKEN)
    done = run_hook_entry(repo)
    assert (done.returncode, done.stdout, done.stderr) == (0, "plan.jsonl (staged): ok (1 records)\n", "")
    plain = run_hook_entry_without_staged(repo)
    assert plain.returncode == 2  # the file on disk is what plain `ralph check` reads


def run_hook_entry_without_staged(root: Path) -> subprocess.CompletedProcess:
    ralph = str(Path(sys.executable).with_name("ralph"))
    return subprocess.run([ralph, "check"], cwd=root, capture_output=True, text=True)


def test_no_staged_plan_is_a_one_line_refusal(repo):
    git(repo, "rm", "-q", "--cached", "plan.jsonl")
    done = run_hook_entry(repo)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        "ralph: no staged plan.jsonl: git's index has no merged version of it (`git add plan.jsonl`)\n"
    )


@pytest.mark.slow
def test_pre_commit_try_repo_runs_the_hook_on_the_staged_plan(repo, tmp_path):
    """pre-commit installs ralph from this repository into its own environment and runs the hook."""
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "ralph-check"]
    stage(repo, staged=BROKEN, on_disk=BROKEN)
    failed = subprocess.run(command, cwd=repo, capture_output=True, text=True, env=env)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "plan.jsonl:1: task t-aaaaaa depends on unknown task t-nowhere" in failed.stdout
    stage(repo, staged=FINE, on_disk=BROKEN)  # pre-commit sets the unstaged change aside meanwhile
    passed = subprocess.run(command, cwd=repo, capture_output=True, text=True, env=env)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "ralph check (staged plan.jsonl)" in passed.stdout and "Passed" in passed.stdout
    assert (repo / "plan.jsonl").read_bytes() == BROKEN  # and puts it back


def test_check_reports_a_plan_git_lists_as_unmerged_though_its_text_is_valid(repo):
    """A conflict resolved by hand but not yet `git add`ed: git would refuse to commit it, so it is
    not ok (before, `ralph check` said ok)."""
    from tests.support.cli import ralph_in_process

    git(repo, "rm", "-q", ".gitattributes")  # git merges the plan line by line
    git(repo, "commit", "-qm", "no merge driver")
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "plan.jsonl").write_bytes(FINE)
    git(repo, "commit", "-qam", "other's task")
    git(repo, "checkout", "-q", "main")
    (repo / "plan.jsonl").write_bytes(FINE.replace(b'"A"', b'"B"'))
    git(repo, "commit", "-qam", "main's task")
    assert subprocess.run(["git", "merge", "-q", "other"], cwd=repo, capture_output=True).returncode == 1
    (repo / "plan.jsonl").write_bytes(FINE)  # the markers taken out by hand: valid text
    assert git(repo, "ls-files", "-u", "plan.jsonl") != ""

    done = ralph_in_process(repo, "check")

    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "plan.jsonl: git lists plan.jsonl as unmerged (a merge conflict not yet resolved): once it is"
        " right, `git add plan.jsonl`"
    ]
    git(repo, "add", "plan.jsonl")
    assert ralph_in_process(repo, "check").stdout == "plan.jsonl: ok (1 records)\n"
