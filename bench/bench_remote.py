"""Benchmark of runners sharing one git remote (`ralph construct --remote`): three runners at
--parallel 1 on this machine against a local bare repository, twelve independent tasks, an agent
that takes 2 s per build. The ideal is four rounds of (2 s + one runner's own overhead per task,
measured here with a 0 s agent); prints the ratio against the target of 1.5x. Not a pass/fail test."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_construct import AGENT, bench_env, make_repo, ralph

TASKS, RUNNERS, BUILD_S = 12, 3, 2.0


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def shared(folder: Path, runners: int) -> list[Path]:
    """A bare origin holding a repository with TASKS tasks, and `runners` clones of it."""
    seed = make_repo(folder, TASKS, done=False)
    origin = folder / "origin.git"
    git(folder, "init", "-q", "--bare", str(origin))
    git(seed, "remote", "add", "origin", str(origin))
    git(seed, "push", "-q", "origin", "HEAD:main")
    git(origin, "symbolic-ref", "HEAD", "refs/heads/main")
    clones = []
    for n in range(runners):
        clone = folder / f"clone{n}"
        git(folder, "clone", "-q", str(origin), str(clone))
        git(clone, "config", "user.name", f"runner {n}")
        git(clone, "config", "user.email", "bench@ralph.invalid")
        ralph(clone, "init")
        clones.append(clone)
    return clones


def run_runners(clones: list[Path], build_s: float) -> float:
    env = bench_env(BENCH_BUILD_SLEEP=str(build_s))
    started = time.perf_counter()
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "ralph", "-C", str(clone), "construct", "specs/bench.md"]
            + ["--agent-cmd", AGENT, "--gate", "", "--parallel", "1", "--max-iterations", "30"]
            + ["--remote", "origin", "--runner", f"runner-{n}"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for n, clone in enumerate(clones)
    ]
    outputs = [run.communicate()[0] for run in runs]
    elapsed = time.perf_counter() - started
    for run, output in zip(runs, outputs, strict=True):
        if run.returncode != 0:
            sys.exit(f"construct --remote failed ({run.returncode}): {output}")
    return elapsed


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        single = run_runners(shared(Path(folder), 1), 0.0)
    per_task = single / TASKS
    with tempfile.TemporaryDirectory() as folder:
        wall = run_runners(shared(Path(folder), RUNNERS), BUILD_S)
    rounds = TASKS / RUNNERS
    ideal = rounds * (BUILD_S + per_task)
    ratio = wall / ideal
    verdict = "met" if ratio <= 1.5 else "NOT met"
    print(f"construct --remote, {TASKS} tasks, {RUNNERS} runners, agent {BUILD_S:g} s per build:")
    print(f"  one runner's overhead per task (0 s agent, all {TASKS} tasks): {per_task:.2f} s")
    print(
        f"  wall {wall:.2f} s, ideal {ideal:.2f} s ({rounds:g} rounds),"
        f" ratio {ratio:.2f}x   (target <= 1.5x: {verdict})"
    )


if __name__ == "__main__":
    ralph(Path.cwd(), "--version")  # fill the bytecode cache before anything is timed
    main()
