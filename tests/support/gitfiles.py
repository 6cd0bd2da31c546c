"""What the tests of ralph.store.git read of a repository (a commit's files, the status) and the
commits they make in it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.gitrepo import git


def git_bytes(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True).stdout


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def files_of(root: Path, commit: str = "HEAD") -> list[str]:
    """The paths a commit changed."""
    return git(root, "show", "--name-only", "--format=", commit).split()


def status(root: Path) -> str:
    return git(root, "status", "--porcelain=v1", "--untracked-files=all")


def commit_all(root: Path, files: dict[str, str], message: str = "files") -> str:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "add", "--", *files)
    git(root, "commit", "-qm", message)
    return head(root)
