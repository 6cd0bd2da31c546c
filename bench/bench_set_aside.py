"""How long does ralph take to set aside a large failed build? A repository of 1,500 files, and a
build that changed all of it: 600 files edited, 600 new ones in new folders, 300 deleted. ralph keeps
the work on the task's draft branch and as a patch beside the log, then undoes it
(WorkTree.set_aside_as_draft, as BUILD does for a failed build). The time is printed beside a floor
measured in the same run: one `git status` of the same change (what looking at the change costs
at all). ralph's own time is CPU time, its own and its git children's, so that a busy machine does
not inflate it; the wall time is printed beside. Issue 37: under 2 s of ralph's own time for 1,000+
files.

    python bench/bench_set_aside.py
"""

from __future__ import annotations

import io
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ralph.loop.observe.console import Console  # noqa: E402
from ralph.loop.observe.journal import Journal  # noqa: E402
from ralph.loop.runs.cost import Spending  # noqa: E402
from ralph.loop.tree.plan_access import PlanAccess  # noqa: E402
from ralph.loop.tree.work_tree import WorkTree  # noqa: E402

FILES, EDITED, ADDED, DELETED = 1500, 600, 600, 300
LIMIT_S = 2.0
ENV = {
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@x",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@x",
}


def git(root: Path, *args: str) -> str:
    import os

    done = subprocess.run(
        ["git", *args], cwd=root, env={**os.environ, **ENV}, capture_output=True, check=True
    )
    return done.stdout.decode()


def make_repo(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    for number in range(FILES):
        path = root / "src" / f"pkg{number % 30}" / f"module{number}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def f{number}():\n    return {number}\n" * 20)
    (root / "plan.jsonl").write_text('{"t":"task","id":"t-big","name":"Big change","s":"p"}\n')
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")


def change_everything(root: Path) -> None:
    for number in range(EDITED):
        (root / "src" / f"pkg{number % 30}" / f"module{number}.py").write_text(f"edited {number}\n")
    for number in range(EDITED, EDITED + DELETED):
        (root / "src" / f"pkg{number % 30}" / f"module{number}.py").unlink()
    for number in range(ADDED):
        path = root / "generated" / f"part{number % 40}" / f"new{number}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"NEW = {number}\n")


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (git), user and system."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def set_aside(root: Path) -> tuple[float, float, str | None]:
    journal = Journal(root.parent / "events.jsonl")
    tree = WorkTree(
        PlanAccess(root, "specs/app.md", journal, Spending(None)), journal, Console(io.StringIO(), live=False)
    )
    log = Path("build/ralph-logs/ralph-bench-build-t-big.log")
    (root / log.parent).mkdir(parents=True, exist_ok=True)
    start, cpu = time.perf_counter(), cpu_seconds()
    branch = tree.set_aside_as_draft("t-big", log, record=False)
    return cpu_seconds() - cpu, time.perf_counter() - start, branch


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "repo"
        root.mkdir()
        make_repo(root)
        # A second between: files changed in the second git wrote its index are "racily clean" to
        # git, which then reads every one of them again (0.5-2 CPU-s here; a real build takes longer).
        time.sleep(1.1)
        change_everything(root)
        time.sleep(1.1)
        cpu = cpu_seconds()
        git(root, "status", "--porcelain", "--untracked-files=all")
        floor = cpu_seconds() - cpu
        took, wall, branch = set_aside(root)
        left = git(root, "status", "--porcelain", "--untracked-files=all", "--", "src", "generated")
        kept = len(git(root, "diff", "--name-only", "HEAD", branch or "HEAD").split())
    changed = EDITED + ADDED + DELETED
    print(
        f"set aside {changed} changed files: {took:.2f} CPU-s ({took / floor:.0f}x one git status,"
        f" {floor * 1000:.0f} ms), {wall:.2f} s wall"
    )
    print(f"  kept on {branch}: {kept} files; left in the work tree: {len(left.splitlines())}")
    print(f"  issue 37 limit {LIMIT_S:.0f} s: {'within' if took < LIMIT_S else 'OVER'}")


if __name__ == "__main__":
    main()
