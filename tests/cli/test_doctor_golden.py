"""Golden files for what `ralph doctor` prints: each tests/cli/golden/doctor/*.yml names a scenario
made here in a real repository (locks of SIGKILLed processes, worktrees made with `git worktree
add` as the loop names them) and records each step's stdout, stderr and exit code. Paths, pids,
times and commits are replaced by <tmp>, <repo>, <pid>, <time> and <commit>. Regenerate with
`pytest --update-goldens` and read the diff."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from pytest_golden.plugin import GoldenTestFixture

from ralph.cli.main import cli
from tests.support.gitrepo import git
from tests.support.leftovers import half_merged, leftover_branch, leftover_worktree
from tests.support.locks import holder, killed_holder


def leftovers(repo: Path, tmp: Path) -> list:
    killed_holder(repo, "plan")
    killed_holder(repo, "construct")
    (repo / f".plan.jsonl.{killed_holder(repo, 'plan')}.tmp").write_text("half a plan")
    git(repo, "config", "--remove-section", "merge.ralph")
    leftover_worktree(repo, tmp, "verify-t-a")
    build = leftover_worktree(repo, tmp, "build-t-b", branch="ralph/t-b")
    (build / "feature.py").write_text("done\n")
    git(build, "add", "feature.py")
    git(build, "commit", "-qm", "ralph(build): t-b Feature")
    (build / "half.py").write_text("half\n")
    leftover_branch(repo, "ralph/t-old")
    return []


def running(repo: Path, tmp: Path) -> list:
    leftover_worktree(repo, tmp, "build-t-b", branch="ralph/t-b")
    return [holder(repo, "construct")]


def interrupted(repo: Path, tmp: Path) -> list:
    ended = subprocess.Popen(["true"])
    ended.wait()
    half_merged(repo, "t-b", ended.pid)  # a merge whose run was killed half way
    return []


SCENARIOS = {
    "healthy": lambda repo, tmp: [],
    "leftovers": leftovers,
    "running": running,
    "interrupted": interrupted,
}


def clean(text: str, repo: Path, tmp: Path) -> str:
    for path, name in ((repo, "<repo>"), (tmp, "<tmp>")):
        text = text.replace(str(path.resolve()), name).replace(str(path), name)
    text = re.sub(r"\bpid \d+", "pid <pid>", text)
    text = re.sub(r"\.plan\.jsonl\.\d+\.tmp", ".plan.jsonl.<pid>.tmp", text)
    text = re.sub(r"since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "since <time>", text)
    return re.sub(r"\b[0-9a-f]{40}\b|\b[0-9a-f]{12}\b", "<commit>", text)


@pytest.mark.golden_test("golden/doctor/*.yml")
def test_doctor_output(golden: GoldenTestFixture, repo: Path, tmp_path: Path):
    processes = SCENARIOS[golden["scenario"]](repo, tmp_path)
    try:
        results = []
        for step in golden["steps"]:
            result = CliRunner().invoke(cli, ["-C", str(repo), *step], prog_name="ralph")
            results.append(
                {
                    "exit_code": result.exit_code,
                    "stdout": clean(result.stdout, repo, tmp_path),
                    "stderr": clean(result.stderr, repo, tmp_path),
                }
            )
    finally:
        for process in processes:
            process.kill()
            process.wait()
    assert results == golden.out["results"]
