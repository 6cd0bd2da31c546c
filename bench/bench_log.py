"""How fast is `ralph log`? A real process over a history of 1,000 plan commits on a 1,000-task plan.

The history is built with `git fast-import` (seconds, not minutes): each commit changes the plan
as ralph's commands do (a task done, rejected, accepted, deleted, added, a build attempt counted,
an issue added or resolved), one or a few lines each. The median wall time of `ralph log` and
`ralph log --json` is printed as a ratio to a floor measured in the same run on the same
repository: the `git log -p -U0 -- plan.jsonl` that ralph log itself runs (what reading the
history costs git alone), and `python -c pass`. Figures, not pass/fail.

    python bench/bench_log.py
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

TASKS, COMMITS, REPS = 1000, 1000, 7
LIMIT_S = 1.0  # issue 11: 1,000 plan commits of a 1,000-task plan in under 1 s


def dump(records: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


def history(plan: bytes, commits: int, rng: random.Random) -> list[tuple[str, bytes]]:
    """`commits` successive versions of the plan, each with the message ralph would give it."""
    records = [json.loads(line) for line in plan.decode().splitlines()]
    versions = []
    serial = 0
    for _ in range(commits):
        tasks = [r for r in records if r["t"] == "task"]
        issues = [r for r in records if r["t"] == "issue"]
        kind = rng.choice(("done", "done", "attempt", "reject", "accept", "add", "add", "issue", "delete"))
        task = rng.choice(tasks)
        if kind == "done" or (kind in ("reject", "accept") and task.get("s") != "d"):
            task["s"], kind = "d", "done"
        elif kind == "attempt":
            task["attempts"] = task.get("attempts", 0) + 1
            task["attempt_tokens"] = [*task.get("attempt_tokens", []), rng.randint(1000, 90000)]
            task["gate_failure"] = "tests failed: test_login"
        elif kind == "reject":
            task["s"], task["reject_reason"] = "p", "the form does not render"
            records.append({"t": "reject", "id": task["id"], "reason": task["reject_reason"]})
        elif kind == "accept":
            records.remove(task)
            records.append({"t": "accept", "id": task["id"], "name": task["name"]})
        elif kind == "add":
            serial += 1
            records.append({"t": "task", "id": f"t-new{serial}", "name": f"Added task {serial}"})
        elif kind == "issue" and issues and rng.random() < 0.5:
            records.remove(issues[0])
            kind = "issue resolve"
        elif kind == "issue":
            serial += 1
            records.append({"t": "issue", "id": f"i-new{serial}", "text": f"Question {serial}?"})
        elif kind == "delete":
            if any(task["id"] in r.get("deps", ()) for r in tasks):
                task["priority"], kind = "high", "hand edit"
            else:
                records.remove(task)
        versions.append((f"ralph: {kind} {task['id']}", dump(records)))
    return versions


def make_history_repo(path: Path, env: dict[str, str], rng: random.Random) -> int:
    """A repository whose plan.jsonl has COMMITS + 1 commits; returns the plan's size in bytes."""
    plan, _ = make_plan(TASKS, rng)
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    stream = bytearray()
    stamp = 1_700_000_000
    for number, (message, data) in enumerate([("ralph: init", plan), *history(plan, COMMITS, rng)]):
        msg = message.encode()
        stream += b"commit refs/heads/main\n"
        stream += b"committer Bench <bench@example.com> %d +0000\n" % (stamp + number * 60)
        stream += b"data %d\n%s\n" % (len(msg), msg)
        stream += b"M 100644 inline plan.jsonl\ndata %d\n%s\n" % (len(data), data)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=path, input=bytes(stream), check=True, env=env)
    subprocess.run(["git", "symbolic-ref", "HEAD", "refs/heads/main"], cwd=path, check=True, env=env)
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=path, check=True, env=env)
    return len(data)


def run(args: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"bench: {' '.join(args)} failed ({done.returncode}): {done.stderr.decode().strip()}")
    return elapsed


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="ralph-bench-log-"))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")  # byte-compiled, as an installed ralph is
    started = time.perf_counter()
    try:
        repo = work / "repo"
        size = make_history_repo(repo, env, random.Random(1))
        # The floor is the very git command ralph log runs: the ratio is what ralph adds to it.
        git_log = ["git", "log", "--reverse", "--first-parent", "-m", "-p", "-U0", "--text", "--no-renames"]
        git_log += ["--format=%x01%H%x00%an%x00%aI%x00%s", "HEAD", "--", "plan.jsonl"]
        commands = {
            "git log -p plan.jsonl (floor)": git_log,
            "python -c pass (floor)": [sys.executable, "-c", "pass"],
            "ralph log": [sys.executable, "-m", "ralph", "log"],
            "ralph log --json": [sys.executable, "-m", "ralph", "log", "--json"],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for rep in range(REPS + 1):  # the first round warms up: byte-compiled files, the page cache
            for name, args in commands.items():
                elapsed = run(args, env, repo)
                if rep:
                    times[name].append(elapsed)
        medians = {name: statistics.median(found) for name, found in times.items()}
        floor = medians["git log -p plan.jsonl (floor)"]
        printed = subprocess.run(commands["ralph log"], env=env, cwd=repo, capture_output=True).stdout
        events = printed.count(b"\n")
        print(f"ralph log (python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
        print(f"history: {COMMITS + 1} commits of plan.jsonl, {TASKS} tasks, {size // 1024} KiB at HEAD")
        for name, seconds in medians.items():
            line = f"{name:32s} median {seconds * 1000:7.1f} ms  ratio {seconds / floor:5.2f}x git log"
            if name == "ralph log":
                verdict = "met" if seconds < LIMIT_S else "NOT met"
                line += f"  ({events} lines)  [{verdict}: < {LIMIT_S:g} s]"
            print(line)
        print(f"(median of {REPS}; benchmark took {time.perf_counter() - started:.0f} s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
