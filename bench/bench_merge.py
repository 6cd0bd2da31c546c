"""How fast is `ralph merge-driver`? Real processes, as git runs it, on two sides of one plan.

Each side changes its own share of the base's tasks (done, renamed, an attempt counted, a task
accepted) and adds new ones, so that the merge does real work on every kind of record. The median
wall time is printed as a ratio to a floor measured in the same run: `python -c pass` with this
interpreter (what starting any Python program costs). Figures, not pass/fail.

    python bench/bench_merge.py
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_state import make_plan  # the same realistic plans as the state commands' benchmark

# tasks in the base -> (changes per side, repetitions)
SIZES = {1000: (100, 15), 10000: (1000, 7)}
LIMIT_10K_S = 1.0  # issue 8: two 10,000-task plans with 1,000 changes on each side, under 1 s


def side(base: bytes, changes: int, label: str, rng: random.Random, skip: set[str]) -> bytes:
    """The base with `changes` of its live tasks changed (none of `skip`'s) and `changes // 4` added."""
    records = [json.loads(line) for line in base.decode().splitlines()]
    live = [r for r in records if r["t"] == "task" and r["id"] not in skip]
    chosen = rng.sample(live, changes)
    skip.update(r["id"] for r in chosen)
    accepted = []
    for number, task in enumerate(chosen):
        kind = number % 4
        if kind == 0:
            task["s"] = "d"
        elif kind == 1:
            task["name"] += f" (renamed on {label})"
        elif kind == 2:
            task["attempts"] = task.get("attempts", 0) + 1
        elif task.get("s") == "d" and not any(task["id"] in r.get("deps", ()) for r in live):
            accepted.append(task)
    gone = {task["id"] for task in accepted}
    records = [r for r in records if not (r["t"] == "task" and r["id"] in gone)]
    records += [{"t": "accept", "id": task["id"], "name": task["name"]} for task in accepted]
    records += [
        {"t": "task", "id": f"t-{label}{n}", "name": f"Added on {label} {n}"} for n in range(changes // 4)
    ]
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


def run(args: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> float:
    start = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in ok:
        sys.exit(f"bench: {' '.join(args)} failed ({done.returncode}): {done.stderr.decode().strip()}")
    return elapsed


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="ralph-bench-merge-"))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")  # byte-compiled, as an installed ralph is
    started = time.perf_counter()
    try:
        rng = random.Random(1)
        floor_times: list[float] = []
        results = {}
        for size, (changes, reps) in SIZES.items():
            base, _ = make_plan(size, rng)
            taken: set[str] = set()
            ours, theirs = side(base, changes, "ours", rng, taken), side(base, changes, "theirs", rng, taken)
            for name, data in (("base", base), ("ours.orig", ours), ("theirs", theirs)):
                (work / name).write_bytes(data)
            args = [
                sys.executable,
                "-m",
                "ralph",
                "merge-driver",
                *(str(work / n) for n in ("base", "ours", "theirs")),
            ]
            times = []
            for rep in range(reps + 1):  # the first run warms up: byte-compiled files, the page cache
                shutil.copyfile(work / "ours.orig", work / "ours")
                floor = run([sys.executable, "-c", "pass"], env)
                elapsed = run(args, env)
                if rep:
                    floor_times.append(floor)
                    times.append(elapsed)
            merged = (work / "ours").read_bytes()
            assert merged.count(b"\n") > base.count(b"\n"), "the merge lost lines"
            results[size] = (changes, statistics.median(times), merged.count(b"\n"))
        floor = statistics.median(floor_times)
        print(f"ralph merge-driver (python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
        print(f"floor: python -c pass  {floor * 1000:6.1f} ms  (median of {len(floor_times)})")
        for size, (changes, seconds, lines) in results.items():
            line = (
                f"{size:5d} tasks, {changes:4d} changes a side: median {seconds * 1000:6.1f} ms"
                f"  ratio {seconds / floor:5.2f}x floor  ({lines} lines merged)"
            )
            if size == 10000:
                verdict = "met" if seconds < LIMIT_10K_S else "NOT met"
                line += f"  [{verdict}: < {LIMIT_10K_S:g} s]"
            print(line)
        print(f"(benchmark took {time.perf_counter() - started:.0f} s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
