"""Finding the work tree a command acts on, and its git directory. A module of its own: every
command needs it, and most of them never run git (ralph.store.git)."""

from __future__ import annotations

from pathlib import Path

from ralph.errors import RalphError

PLAN_NAME = "plan.jsonl"  # the plan's file, at the top of the work tree


def find_root(start: Path) -> Path:
    """The top of the git work tree containing `start` (a `.git` directory or file marks it)."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    raise RalphError(f"not inside a git repository: {start} (run 'git init' first)")


def git_dir(root: Path) -> Path:
    """The git directory of the work tree at `root`: `.git`, or where the `.git` file of a
    worktree or submodule points."""
    dot_git = root / ".git"
    if dot_git.is_file():
        text = dot_git.read_text(encoding="utf-8", errors="replace")
        if text.startswith("gitdir: "):
            target = Path(text[len("gitdir: ") :].strip())
            return target if target.is_absolute() else root / target
    return dot_git


def common_git_dir(git_dir: Path) -> Path:
    """The git directory every worktree of the repository shares: where a linked worktree's
    `commondir` file points (relative to its own git directory, as git reads it), else `git_dir`
    itself. OSError when that file is there but unreadable."""
    try:
        pointer = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return git_dir
    return git_dir / pointer  # an absolute pointer replaces git_dir, as Path joins it
