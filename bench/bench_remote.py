"""Benchmark of runners sharing one git remote (`ralph construct --remote`): 1, 3, 8 and 16 runners
started at once, each on its own clone of one local bare repository, on 32 independent tasks whose
builds take 1 s, a no-op verifier, the default claim TTL. Prints, per runner count: wall time
against one runner's in the same run, CPU per task (ralph, its agents and git: the children's
rusage), the runners' exit codes, the pushes to the shared branch the remote turned away (lost
races, from the runners' journals), builds per task (BUILD agent runs, from the journals) and the
tasks lost (not accepted on the remote at the end). Targets (issue 37): at 8 and 16 runners wall
at most 0.3x of one runner's, CPU per task at 16 at most 2x one runner's, no task built twice or
lost. Then the floor of each count: as many runners, each alone on a remote of its own with its
share of the tasks (nothing shared, nothing to race for), which sets apart what sharing one branch
costs from what each runner costs anyway. Not a pass/fail test. `bench_remote.py 1 16` runs those
counts only. `--latency 0.3` makes
each fetch and push wait that long on the remote's side first, as a hosted remote's round trip does
(one runner's 32 tasks are then measured with the remote's waits counted: what fewer round trips
per task save)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from bench_construct import AGENT, bench_env, children_cpu, journal, make_repo, ralph, warm_bytecode

TASKS, BUILD_S = 32, 1.0
COUNTS = (1, 3, 8, 16)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


LATENCY_S = 0.0  # --latency: each fetch and push waits this long on the remote's side first

WAITING_PACK = """#!/bin/sh
sleep {latency}
exec {program} "$@"
"""


def with_latency(folder: Path, clone: Path) -> None:
    """The clone's fetches and pushes wait LATENCY_S first: the remote's programs started through
    a script (outside every work tree) that sleeps, then runs them."""
    for key, program in (("uploadpack", "git-upload-pack"), ("receivepack", "git-receive-pack")):
        script = folder / f"waiting-{program}"
        if not script.exists():
            script.write_text(WAITING_PACK.format(latency=LATENCY_S, program=program))
            script.chmod(0o755)
        git(clone, "config", f"remote.origin.{key}", str(script))


def shared(folder: Path, runners: int) -> tuple[Path, list[Path]]:
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
        if LATENCY_S:
            with_latency(folder, clone)
        ralph(clone, "init")
        clones.append(clone)
    return origin, clones


class Figures(NamedTuple):
    runners: int
    wall_s: float
    cpu_s: float
    exits: list[int]
    pushes: int
    lost_races: int
    builds: dict[str, int]  # task -> BUILD agent runs, over every runner
    not_accepted: list[str]  # tasks the remote's plan does not hold as accepted at the end


def runner_argv(clone: Path, n: int) -> list[str]:
    """Runner n's `ralph construct --remote origin` in `clone`."""
    return (
        [sys.executable, "-m", "ralph", "-C", str(clone), "construct", "specs/bench.md"]
        + ["--agent-cmd", AGENT, "--gate", "", "--parallel", "1", "--max-iterations", "60"]
        + ["--remote", "origin", "--runner", f"runner-{n}"]
    )


def run_runners(origin: Path, clones: list[Path]) -> Figures:
    env = bench_env(BENCH_BUILD_SLEEP=str(BUILD_S))
    cpu, started = children_cpu(), time.perf_counter()
    runs = [
        subprocess.Popen(
            runner_argv(clone, n),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for n, clone in enumerate(clones)
    ]
    outputs = [run.communicate()[0] for run in runs]
    wall, cpu = time.perf_counter() - started, children_cpu() - cpu
    for run, output in zip(runs, outputs, strict=True):
        if run.returncode != 0:
            print(f"  a runner ended {run.returncode}: {output.strip().splitlines()[-3:]}")
    events = [event for clone in clones for event in journal(clone)]
    builds: dict[str, int] = {}
    for event in events:
        if event["event"] == "agent_begin" and event.get("stage") == "BUILD":
            builds[event["item"]] = builds.get(event["item"], 0) + 1
    pushed = [event for event in events if event["event"] == "remote_pushes"]
    plan = [json.loads(line) for line in git(origin, "show", "main:plan.jsonl").splitlines() if line.strip()]
    accepted = {record["id"] for record in plan if record["t"] == "accept"}
    wanted = [f"t-bench{n:02d}" for n in range(TASKS)]
    return Figures(
        runners=len(clones),
        wall_s=wall,
        cpu_s=cpu,
        exits=[run.returncode for run in runs],
        pushes=sum(event["won"] + event["lost"] for event in pushed),
        lost_races=sum(event["lost"] for event in pushed),
        builds=builds,
        not_accepted=[task for task in wanted if task not in accepted],
    )


def measure(runners: int) -> Figures:
    with tempfile.TemporaryDirectory() as folder:
        origin, clones = shared(Path(folder), runners)
        return run_runners(origin, clones)


class Floor(NamedTuple):
    runners: int
    wall_s: float
    cpu_s: float
    exits: list[int]


def measure_alone(runners: int) -> Floor:
    """`runners` runners started at once, each alone on a remote of its own with its share of the
    tasks (one of them reviews; each checks its own spec): what the runners cost with nothing
    shared, so nothing to race for. Against the shared figures, it tells the cost of sharing one
    branch from what each runner costs anyway (its start, its end, its agents)."""
    global TASKS
    total, TASKS = TASKS, TASKS // runners
    try:
        with tempfile.TemporaryDirectory() as folder:
            clones = []
            for n in range(runners):
                (Path(folder) / f"alone{n}").mkdir()
                clones.append(shared(Path(folder) / f"alone{n}", 1)[1][0])
            env = bench_env(BENCH_BUILD_SLEEP=str(BUILD_S))
            cpu, started = children_cpu(), time.perf_counter()
            runs = [
                subprocess.Popen(
                    runner_argv(clone, n) + (["--no-review"] if n else []),
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for n, clone in enumerate(clones)
            ]
            exits = [run.wait() for run in runs]
            return Floor(runners, time.perf_counter() - started, children_cpu() - cpu, exits)
    finally:
        TASKS = total


def show(figures: Figures, one: Figures) -> None:
    twice = sorted(task for task, count in figures.builds.items() if count > 1)
    rejected = figures.lost_races / figures.pushes if figures.pushes else 0.0
    exits = ", ".join(f"{code} x{figures.exits.count(code)}" for code in sorted(set(figures.exits)))
    print(
        f"  {figures.runners:2} runners: wall {figures.wall_s:6.1f} s = {figures.wall_s / one.wall_s:4.2f}x,"
        f" CPU per task {figures.cpu_s / TASKS:5.2f} s = {figures.cpu_s / one.cpu_s:4.2f}x,"
        f" exits {exits}, pushes {figures.pushes} ({figures.pushes / TASKS:.1f} per task),"
        f" rejected {figures.lost_races} ({rejected:.0%}),"
        f" builds per task {sum(figures.builds.values()) / TASKS:.2f} ({len(twice)} built twice),"
        f" lost {len(figures.not_accepted)}"
    )


def main(counts: tuple[int, ...]) -> None:
    print(
        f"construct --remote, {TASKS} independent tasks, builds {BUILD_S:g} s, no-op verifier,"
        " default claim TTL, runners on clones of one local bare remote"
        + (f" whose fetches and pushes wait {LATENCY_S:g} s first:" if LATENCY_S else ":")
    )
    one = measure(1)
    show(one, one)
    results = [one] + [measure(runners) for runners in counts if runners != 1]
    for figures in results[1:]:
        show(figures, one)
    for runners in counts:
        if runners != 1:
            floor = measure_alone(runners)
            print(
                f"  {runners:2} runners alone, each on a remote of its own with {TASKS // runners} tasks (the"
                f" floor: nothing shared): wall {floor.wall_s:6.1f} s = {floor.wall_s / one.wall_s:4.2f}x,"
                f" CPU per task {floor.cpu_s / TASKS:5.2f} s = {floor.cpu_s / one.cpu_s:4.2f}x,"
                f" exits {sorted(set(floor.exits))}"
            )
    for figures in results:
        if figures.runners in (8, 16):
            ratio = figures.wall_s / one.wall_s
            print(f"  target at {figures.runners}: wall <= 0.3x: {'met' if ratio <= 0.3 else 'NOT met'}")
        if figures.runners == 16:
            ratio = figures.cpu_s / one.cpu_s
            print(f"  target at 16: CPU per task <= 2x: {'met' if ratio <= 2 else 'NOT met'}")
    clean = all(not f.not_accepted and all(c == 1 for c in f.builds.values()) for f in results)
    print(f"  target: no task built twice or lost: {'met' if clean else 'NOT met'}")


if __name__ == "__main__":
    warm_bytecode()
    arguments = sys.argv[1:]
    if arguments[:1] == ["--latency"]:
        LATENCY_S, arguments = float(arguments[1]), arguments[2:]
    main(tuple(int(arg) for arg in arguments) or COUNTS)
