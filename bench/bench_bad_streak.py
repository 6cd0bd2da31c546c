"""Benchmark of a bad streak: what a task that can never pass costs among good ones, and what a
verifier that never accepts costs before a person is asked. The scripted agent (streak_agent.py)
reports $0.50 a run, as Claude Code's stream-json does (a `result` event with `total_cost_usd`).

- The hopeless family: 12 tasks, one of which (t-hopeless) writes work its gate always fails. Each
  build of it or of a subtask DECOMPOSE makes from it (t-hopeless-1, ...) writes a file named after
  its own id, and the gate prints the same lines for each, naming that file. Run serially and at
  the default --parallel: builds, questions and dollars of the hopeless family and of the other 11
  tasks, how the run ended, and what `ralph status` says waits. (The issue's target: at most 10
  builds of the family, one question, the 11 others accepted.)
- The forever-rejecting verifier: one task, every VERIFY rejects it with the same reason: agent
  runs and dollars until the first question, or until the run ends without one (target: at
  most 6 runs before the question).

Figures measured in this run; not a pass/fail test.

    python bench/bench_bad_streak.py [--keep]   (keep the repositories, to look at a run)
"""

from __future__ import annotations

import argparse
import itertools
import json
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench_construct import SPEC, bench_env, ralph, warm_bytecode

HERE = Path(__file__).parent
AGENT = f"{shlex.quote(sys.executable)} {shlex.quote(str(HERE / 'streak_agent.py'))}"
GOOD_TASKS = 11
FAMILY = "t-hopeless"
REJECTION = "the output must be sorted and it is not: `sort_items([3, 1, 2])` gave [3, 1, 2]"
GATE = """import pathlib, sys
files = sorted(pathlib.Path("work").glob("*.py"))
bad = [path for path in files if "hopeless" in path.read_text()]
for path in bad:
    print(f"FAILED tests/test_work.py::test_answer - AssertionError: {path} gives no answer")
    print("E   assert None == 42")
print(f"{len(bad)} failed, {len(files) - len(bad)} passed in 0.{len(files)}s")
sys.exit(1 if bad else 0)
"""


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def make_repo(folder: Path, tasks: list[dict]) -> Path:
    root = folder / "repo"
    root.mkdir(parents=True)
    git(root, "init", "-q")
    git(root, "config", "user.name", "bench")
    git(root, "config", "user.email", "bench@ralph.invalid")
    (root / "specs").mkdir()
    (root / "specs" / "streak.md").write_text(SPEC.format(name="streak"))
    (root / "gate.py").write_text(GATE)
    ralph(root, "init")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "bench")
    added = ralph(root, "task", "add", json.dumps(tasks))
    if added.returncode != 0:
        sys.exit(f"task add failed: {added.stderr}")
    return root


@dataclass
class Run:
    outcome: str
    runs: list[dict]  # the agent runs' end events, in order
    stale: list[dict]  # the builds given back uncounted as built on a stale base
    questions: int
    accepted: list[str]
    waits: list[str]  # what `ralph status` says waits for a person

    def of(self, family: bool, stage: str | None = None) -> list[dict]:
        return [
            run
            for run in self.runs
            if str(run.get("item") or "").startswith(FAMILY) is family and stage in (None, run["stage"])
        ]


def cost(runs: list[dict]) -> float:
    return sum((run.get("tokens") or {}).get("cost_usd") or 0.0 for run in runs)


def construct(root: Path, *flags: str, env: dict[str, str] | None = None) -> Run:
    done = ralph(
        root,
        "construct",
        "specs/streak.md",
        "--agent-cmd",
        AGENT,
        "--gate",
        f"{shlex.quote(sys.executable)} gate.py",
        *flags,
        env=env or bench_env(),
    )
    from ralph.loop.construct import Outcome

    known = {outcome.value: outcome.name for outcome in Outcome}
    events = [json.loads(line) for line in (root / "build/ralph-logs/events.jsonl").read_text().splitlines()]
    records = [json.loads(line) for line in (root / "plan.jsonl").read_text().splitlines() if line.strip()]
    status = ralph(root, "status").stdout.splitlines()
    waits = []
    if "waiting for a person:" in status:
        after = status[status.index("waiting for a person:") + 1 :]
        waits = [line.strip() for line in itertools.takewhile(lambda line: line.startswith("  "), after)]
    return Run(
        known.get(done.returncode, f"exit {done.returncode}"),
        [event for event in events if event["event"] == "agent_end"],
        [event for event in events if event["event"] == "build_stale_base"],
        sum(1 for r in records if r.get("t") == "issue" and r.get("kind") == "question"),
        [r["id"] for r in records if r.get("t") == "accept"],
        waits,
    )


def hopeless_family(folder: Path, parallel: int | None) -> None:
    tasks = [{"id": FAMILY, "name": "A feature whose gate always fails"}]
    tasks += [{"id": f"t-good{n:02d}", "name": f"Good task {n}"} for n in range(1, GOOD_TASKS + 1)]
    root = make_repo(folder / f"family-{parallel or 'default'}", tasks)
    flags = ["--parallel", str(parallel)] if parallel else []
    run = construct(root, *flags)
    mode = f"--parallel {parallel}" if parallel else "the default --parallel (4)"
    family, others = run.of(True), run.of(False)
    builds = len(run.of(True, "BUILD"))
    stale = sum(1 for event in run.stale if str(event.get("item")).startswith(FAMILY))
    decomposed = len(run.of(True, "DECOMPOSE"))
    good = sum(1 for task in run.accepted if not task.startswith(FAMILY))
    print(f"  {mode}: ended {run.outcome}")
    print(
        f"    the hopeless family: {builds} builds ({stale} given back uncounted, stale base),"
        f" {decomposed} DECOMPOSE runs,"
        f" {len(family)} agent runs, ${cost(family):.2f}; {run.questions} question(s)"
    )
    print(
        f"    the other {GOOD_TASKS}: {good} accepted, {len(others)} agent runs, ${cost(others):.2f};"
        f" the whole run ${cost(run.runs):.2f}"
    )
    say_waits(run)


def say_waits(run: Run) -> None:
    """What `ralph status` says waits for a person: how many, and the first few."""
    if run.waits:
        print(f"    `ralph status`: {len(run.waits)} waiting for a person, the first:")
    for line in run.waits[:3]:
        print(f"      {line[:140]}")


def forever_rejected(folder: Path) -> None:
    root = make_repo(folder / "rejected", [{"id": "t-disputed", "name": "Sort the items"}])
    run = construct(root, "--parallel", "1", env=bench_env(BENCH_REJECT=REJECTION))
    rejections = len(run.of(False, "VERIFY"))
    print(
        f"  ended {run.outcome}: {len(run.runs)} agent runs ({len(run.of(False, 'BUILD'))} builds,"
        f" {rejections} rejections, {len(run.of(False, 'DECOMPOSE'))} DECOMPOSE runs),"
        f" ${cost(run.runs):.2f}; {run.questions} question(s)"
    )
    say_waits(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the repositories")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ralph-bench-streak-"))
    print(f"one hopeless task among {GOOD_TASKS + 1}, $0.50 an agent run:")
    hopeless_family(folder, 1)
    hopeless_family(folder, None)
    print("one task every VERIFY rejects with the same reason, --parallel 1, $0.50 an agent run:")
    forever_rejected(folder)
    if args.keep:
        print(f"(kept in {folder})")
    else:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    warm_bytecode()
    main()
