"""Benchmark of parallel BUILD: 8 independent tasks, an agent that takes 2 s per task and writes
one file, no gate. The BUILD stage's wall time at --parallel 4 against the ideal: two rounds of
(2 s + the per-task overhead measured at --parallel 1 in the same run: worktree, merge, commits)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from bench_construct import bench_env, journal, make_repo, ralph, run_construct, warm_bytecode

TASKS, SLEEP_S, PARALLEL = 8, 2.0, 4


def build_stage(parallel: int) -> tuple[float, int]:
    """BUILD's duration and the build commits it made."""
    with tempfile.TemporaryDirectory() as folder:
        root = make_repo(Path(folder), 0, done=False)
        items = [{"id": f"t-par{n:03d}", "name": f"Part {n}"} for n in range(TASKS)]
        ralph(root, "task", "add", json.dumps(items))
        run_construct(root, "--parallel", str(parallel), env=bench_env(BENCH_BUILD_SLEEP=str(SLEEP_S)))
        stage = next(e for e in journal(root) if e["event"] == "stage_end" and e["stage"] == "BUILD")
        commits = [
            subject
            for subject in _subjects(root)
            if subject.startswith("ralph(build): t-par") and not subject.endswith("plan changes")
        ]
    return stage["duration_s"], len(commits)


def _subjects(root: Path) -> list[str]:
    import subprocess

    return subprocess.run(
        ["git", "-C", str(root), "log", "--format=%s"], capture_output=True, text=True, check=True
    ).stdout.splitlines()


def main() -> None:
    serial, serial_commits = build_stage(1)
    overhead = (serial - TASKS * SLEEP_S) / TASKS
    wall, commits = build_stage(PARALLEL)
    rounds = TASKS / PARALLEL
    ideal = rounds * (SLEEP_S + overhead)
    ratio = wall / ideal
    verdict = "met" if ratio <= 1.25 else "NOT met"
    print(f"BUILD of {TASKS} independent tasks, agent {SLEEP_S:g} s each:")
    print(
        f"  --parallel 1: {serial:.2f} s ({overhead * 1000:.0f} ms of ralph per task),"
        f" {serial_commits} build commits"
    )
    print(
        f"  --parallel {PARALLEL}: {wall:.2f} s, ideal {ideal:.2f} s ({rounds:g} rounds),"
        f" ratio {ratio:.2f}x   (target <= 1.25x: {verdict}), {commits} build commits"
    )
    if commits != TASKS or serial_commits != TASKS:
        sys.exit("a build commit is missing")


if __name__ == "__main__":
    warm_bytecode()
    main()
