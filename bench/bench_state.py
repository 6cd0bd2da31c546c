"""How fast are ralph's state commands? Real processes against plans of 1,000 and 10,000 tasks.

Each command's median wall time is printed as a ratio to floors measured in the same run: the
time `python -c "import click"` takes with this interpreter (what any click CLI pays before doing
anything), and for commands that commit, that plus a bare `git commit` of a one-line change.
Figures, not pass/fail: the target lines say which targets this run met.

    python bench/bench_state.py               # the benchmark (a minute or two)
    python bench/bench_state.py --importtime  # also: the slowest imports of `ralph query next`
"""

from __future__ import annotations

import argparse
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

# The README tells users to run the `ralph` console script; use the one beside this interpreter.
RALPH = str(Path(sys.executable).with_name("ralph"))
SIZES = {1000: 15, 10000: 7}  # tasks -> repetitions
QUERY_TARGET = 1.5  # x click floor, at 1,000 tasks
MUTATE_TARGET = 2.5  # x (click floor + git-commit floor), at 1,000 tasks
LIMIT_10K_S = 0.5
GROWTH_TARGET = 12.0  # ralph's own work, 10k / 1k
# "query edited": `query next` as the first command after a person's edit of plan.jsonl (a task added
# by hand and committed, untimed): the plan is not known valid then, and is checked whole.
COMMANDS = ("query next", "query edited", "task add", "task done", "task accept", "task prioritize")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}
_WORD_TEXT = (
    "login form session cookie password reset email token cache index search page report export "
    "import settings profile upload avatar billing invoice webhook retry queue worker schema "
    "migration api endpoint button layout theme audit log metrics alert"
)
WORDS = _WORD_TEXT.split()
VERBS = ("Add", "Fix", "Refactor", "Rename", "Document", "Test", "Validate", "Support", "Remove", "Cache")


def run(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Run one process; its wall time in seconds. A failure stops the benchmark."""
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"bench: {' '.join(args)} failed ({done.returncode}): {done.stderr.decode().strip()}")
    return elapsed


def git(cwd: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def make_plan(n: int, rng: random.Random) -> tuple[bytes, list[str]]:
    """A realistic plan of n tasks: 30% accepted (tombstones), 10% done, the rest pending, each
    depending on 0-3 recent earlier tasks. Returns the bytes and the done tasks' ids."""
    ids = [f"t-{rng.getrandbits(40):x}"[:8] + f"{i:x}" for i in range(n)]
    accepted_until, done_until = int(n * 0.3), int(n * 0.4)
    lines: list[dict] = [
        {"t": "config", "gate": ["make test"], "max_attempts": 3},
        {"t": "state", "iteration": n // 10, "stage": "BUILD", "spec": "specs/app.md"},
        {"t": "spec", "path": "specs/app.md"},
    ]
    tombstones = []
    for i, task_id in enumerate(ids):
        name = f"{rng.choice(VERBS)} {' '.join(rng.sample(WORDS, rng.randint(1, 4)))} ({i})"
        record: dict[str, object] = {
            "t": "task",
            "id": task_id,
            "name": name,
            "s": "d" if i < done_until else "p",
        }
        record["spec"] = "specs/app.md"
        record["accept"] = "; ".join(
            f"{' '.join(rng.sample(WORDS, 3))} works" for _ in range(rng.randint(1, 3))
        )
        window = ids[max(0, i - 50) : i]
        deps = rng.sample(window, min(len(window), rng.randint(0, 3)))
        if deps:
            record["deps"] = deps
        if rng.random() < 0.3:
            record["notes"] = " ".join(rng.choices(WORDS, k=rng.randint(5, 25)))
        if i < accepted_until:
            tombstones.append({"t": "accept", "id": task_id, "name": name})
        else:
            lines.append(record)
    lines.extend(tombstones)
    data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
    return data, ids[accepted_until:done_until]


def make_repo(path: Path, plan: bytes, env: dict[str, str]) -> None:
    path.mkdir()
    git(path, env, "init", "-q")
    (path / ".gitignore").write_text("/build/\n/plan.jsonl.lock\n/.plan.jsonl.*.tmp\n")
    (path / "plan.jsonl").write_bytes(plan)
    (path / "specs").mkdir()
    (path / "specs" / "app.md").write_text("# App\n")
    git(path, env, "add", ".")
    git(path, env, "commit", "-q", "-m", "plan")


class Command:
    """One ralph command, run in its own copy of the plan's repository."""

    def __init__(self, name: str, repo: Path, env: dict[str, str], plan: bytes, done_ids: list[str]):
        self.name, self.repo, self.env, self.plan = name, repo, env, plan
        self.done_ids = list(done_ids)
        self.count = 0
        self.times: list[float] = []

    def args(self) -> list[str]:
        self.count += 1
        if self.name == "task add":
            task = {
                "name": f"Bench task {self.count}: add export button",
                "accept": "button renders; export downloads a CSV",
                "notes": "see the report page",
                "deps": [self.done_ids[0]],
            }
            return [RALPH, "task", "add", json.dumps(task)]
        if self.name == "task accept":
            return [RALPH, "task", "accept", self.done_ids.pop()]  # a different done task each time
        if self.name == "task prioritize":
            # Start from the unprioritized plan each time (committed, untimed), so every run
            # really sets priorities and commits.
            (self.repo / "plan.jsonl").write_bytes(self.plan)
            git(self.repo, self.env, "commit", "-q", "-a", "--allow-empty", "-m", "reset priorities")
        if self.name == "query edited":
            added = {"t": "task", "id": f"t-hand{self.count:04d}", "name": "by hand"}
            with open(self.repo / "plan.jsonl", "a") as plan:
                plan.write(json.dumps(added) + "\n")
            git(self.repo, self.env, "commit", "-q", "-a", "-m", "a task added by hand")
            return [RALPH, "query", "next"]
        # query next; task done takes the task `query next` gives: a different one each time
        return [RALPH, *self.name.split()]

    def measure(self) -> None:
        self.times.append(run(self.args(), self.repo, self.env))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--importtime", action="store_true", help="show the slowest imports of query next")
    options = parser.parse_args()
    if not Path(RALPH).exists():
        sys.exit(f"bench: no console script {RALPH}; install ralph into this interpreter's environment")

    work = Path(tempfile.mkdtemp(prefix="ralph-bench-"))
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(GIT_ENV)
    gitconfig = work / "gitconfig"
    gitconfig.write_text("[init]\n\tdefaultBranch = main\n")
    env["GIT_CONFIG_GLOBAL"] = str(gitconfig)
    # Byte-compiled modules, as any installed package has them: without this, a sandbox that sets
    # PYTHONDONTWRITEBYTECODE would compile ralph from source on every run (click is compiled).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    try:
        report(work, env, options.importtime)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(work: Path, env: dict[str, str], importtime: bool) -> None:
    started = time.perf_counter()
    floor_repo = work / "floor"
    make_repo(floor_repo, b"", env)
    (floor_repo / "notes.txt").write_text("notes\n")
    git(floor_repo, env, "add", "notes.txt")
    click_times: list[float] = []
    commit_times: list[float] = []

    def measure_floors() -> None:
        click_times.append(run([sys.executable, "-c", "import click"], work, env))
        with open(floor_repo / "notes.txt", "a") as handle:
            handle.write(f"line {len(commit_times)}\n")
        commit_times.append(run(["git", "commit", "-q", "-a", "-m", "one line"], floor_repo, env))

    rng = random.Random(1)
    imports = ""
    results: dict[int, dict[str, float]] = {}
    for size, reps in SIZES.items():
        plan, done_ids = make_plan(size, rng)
        template = work / f"plan-{size}"
        make_repo(template, plan, env)
        commands = []
        for name in COMMANDS:
            copy = work / f"{size}-{name.replace(' ', '-')}"
            shutil.copytree(template, copy)
            commands.append(Command(name, copy, env, plan, done_ids))
        for command in commands:  # warm up: byte-compiled files, the page cache
            command.measure()
            command.times.clear()
        measure_floors()  # warm up too
        del click_times[-1], commit_times[-1]
        # Round-robin, so a slow moment of the machine spreads over every command.
        for _ in range(reps):
            measure_floors()
            for command in commands:
                command.measure()
        results[size] = {command.name: statistics.median(command.times) for command in commands}
        if importtime and size == 1000:
            imports = importtime_report(commands[0].repo, env)

    click_floor = statistics.median(click_times) * 1000
    commit_floor = statistics.median(commit_times) * 1000
    print(f"ralph state commands: {RALPH} (python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    samples = len(click_times)
    print(f'floor: click import  {click_floor:6.1f} ms  (python -c "import click", median of {samples})')
    print(f"floor: git commit    {commit_floor:6.1f} ms  (a one-line change, median of {len(commit_times)})")
    print(f"floor: click + commit {click_floor + commit_floor:5.1f} ms")
    print("(every process runs with byte-compiled modules, cached under a temporary PYTHONPYCACHEPREFIX)")
    print()
    verdicts: list[tuple[bool, str]] = []
    for size, medians in results.items():
        for name, seconds in medians.items():
            ms = seconds * 1000
            query = name.startswith("query")
            floor = click_floor if query else click_floor + commit_floor
            floor_name = "click floor" if query else "click+commit floor"
            ratio = ms / floor
            target = QUERY_TARGET if query else MUTATE_TARGET
            line = f"{size:5d} tasks  {name:16s} median {ms:6.1f} ms  ratio {ratio:4.2f}x {floor_name:18s}"
            if size == 1000:
                print(f"{line}  (target <= {target}x)")
                text = f"{size} tasks {name}: {ratio:.2f}x <= {target}x {floor_name}"
                verdicts.append((ratio <= target, text))
            else:
                print(f"{line}  (target < {LIMIT_10K_S * 1000:.0f} ms)")
                verdicts.append((ms < LIMIT_10K_S * 1000, f"{size} tasks {name}: {ms:.0f} ms < 500 ms"))
        print()
    small, large = results[1000], results[10000]
    for name in COMMANDS:
        own_small = small[name] * 1000 - click_floor
        own_large = large[name] * 1000 - click_floor
        growth = own_large / own_small if own_small > 0 else float("inf")
        print(
            f"10k/1k  {name:16s} own work (minus click floor) {own_small:6.1f} ms -> {own_large:6.1f} ms"
            f"  = {growth:5.1f}x  (target <= {GROWTH_TARGET:g}x)"
        )
        verdicts.append((growth <= GROWTH_TARGET, f"10k/1k {name}: own work grows {growth:.1f}x <= 12x"))
    print()
    for met, text in verdicts:
        print(f"{'met    ' if met else 'NOT met'}  {text}")
    if imports:
        print("\n" + imports, end="")
    print(f"\n(benchmark took {time.perf_counter() - started:.0f} s)")


def importtime_report(repo: Path, env: dict[str, str], top: int = 25) -> str:
    """The imports `ralph query next` spends most time in, by cumulative time."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", RALPH, "query", "next"], cwd=repo, env=env, capture_output=True
    )
    rows = []
    for line in done.stderr.decode().splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        own, cumulative, name = line.removeprefix("import time:").split("|", 2)
        rows.append((int(cumulative), int(own), name.rstrip()))
    rows.sort(reverse=True)
    lines = [f"python -X importtime: ralph query next (1000 tasks), top {top} cumulative imports"]
    lines.append(f"{'cumulative':>12} {'self':>8}  module")
    for cumulative_us, own_us, module in rows[:top]:
        lines.append(f"{cumulative_us / 1000:9.1f} ms {own_us / 1000:5.1f} ms  {module}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
