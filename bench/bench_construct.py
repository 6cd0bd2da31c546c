"""Benchmark of the construct loop: ralph's own overhead per agent run, whether a long history
(100 against 10,000 finished tasks beside the work) makes each run cost more CPU, and how well
VERIFY's fork/join overlaps slow verifiers. Prints figures against targets; it is not a pass/fail
test."""

from __future__ import annotations

import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
AGENT = f"{shlex.quote(sys.executable)} {shlex.quote(str(HERE / 'noop_agent.py'))}"


# Not under /tmp, ~/.cache or ~/.npm: a sandboxed run has private ones, empty, and would compile
# ralph again in every run. Compiled here first, as an install does: the sandbox reads it. One
# folder for every run, kept: python checks each module's bytecode against its source (a folder of
# its own per run left some 6 MB behind each time).
STATE_HOME = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
PYCACHE = str(STATE_HOME / "ralph-bench-pycache")
Path(PYCACHE).mkdir(parents=True, exist_ok=True)


# A spec as `ralph spec check` wants one (construct refuses one with no checkable requirement).
SPEC = "# {name}\n\n## Requirements\n- [ ] every task of the plan is built — verify: the gate passes\n"


def bench_env(**extra: str) -> dict[str, str]:
    """As an installed ralph runs: byte-compiled modules (this sandbox sets PYTHONDONTWRITEBYTECODE,
    which would recompile ralph from source in every agent's `ralph` call)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": PYCACHE, **extra}


def warm_bytecode() -> None:
    """Every module of ralph byte-compiled before anything is timed, as an install does, and the
    standard library's and the dependencies' modules the CLI and the loop import: under the bench's
    own PYTHONPYCACHEPREFIX a module first imported in a timed run (the loop's, an agent's `ralph`
    commands) was compiled from source there, by each of sixteen runners started at once."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(HERE.parent / "ralph")], env=bench_env(), check=True
    )
    subprocess.run(
        [sys.executable, "-c", "import ralph.cli.main, ralph.loop.construct"], env=bench_env(), check=True
    )


def ralph(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ralph", "-C", str(root), *args],
        capture_output=True,
        text=True,
        env=env or bench_env(),
        check=False,
    )


def make_repo(folder: Path, tasks: int, done: bool, history: int = 0) -> Path:
    root = folder / "repo"
    root.mkdir()
    for args in (
        ["init", "-q"],
        ["config", "user.name", "bench"],
        ["config", "user.email", "bench@ralph.invalid"],
    ):
        subprocess.run(["git", "-C", str(root), *args], check=True)
    (root / "specs").mkdir()
    (root / "specs" / "bench.md").write_text(SPEC.format(name="bench"))
    ralph(root, "init")
    if history:
        add_history(root, history)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "bench"], check=True)
    # The noop agent changes no file: its tasks say they need none.
    items = [{"id": f"t-bench{n:02d}", "name": f"Task {n}", "no_code": True} for n in range(tasks)]
    ralph(root, "task", "add", json.dumps(items))
    if done:
        for item in items:
            ralph(root, "task", "done", str(item["id"]))
    return root


def add_history(root: Path, finished: int) -> None:
    """`finished` accepted tasks, as a long-lived project's plan holds them: one tombstone each."""
    lines = (
        json.dumps({"t": "accept", "id": f"t-old{n:05d}", "name": f"Finished task {n} of the project's past"})
        for n in range(finished)
    )
    with (root / "plan.jsonl").open("a") as plan:
        plan.writelines(line + "\n" for line in lines)


def children_cpu() -> float:
    """CPU-seconds (user + system) of every waited-for descendant: ralph, its agents and their
    `ralph` commands. CPU, not wall: the machine may be shared."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_per_run(finished: int, tasks: int = 10) -> float:
    """CPU of the ralph process tree per agent run, with `finished` accepted tasks beside the work."""
    with tempfile.TemporaryDirectory() as folder:
        root = make_repo(Path(folder), tasks, done=False, history=finished)
        before = children_cpu()
        run_construct(root, "--parallel", "1", "--sandbox=off")
        cpu = children_cpu() - before
        runs = [e for e in journal(root) if e["event"] == "agent_end"]
    return cpu / len(runs)


def history_cost(small: int = 100, large: int = 10_000, target: float = 1.3, pairs: int = 5) -> None:
    """Does a long history slow the loop? The same 10 new tasks beside `small` and `large`
    finished ones, in `pairs` runs of each taken in turn; CPU of ralph, the no-op agent and its
    `ralph` commands. Medians: one pair's ratio moves by 0.1 either way on a 2-core machine."""
    print(f"construct, 10 tasks, no-op agent, beside {small:,} and {large:,} finished tasks (CPU):")
    few, many = [], []
    for _ in range(pairs):
        few.append(cpu_per_run(small))
        many.append(cpu_per_run(large))
    for finished, cpus in ((small, few), (large, many)):
        median, shown = statistics.median(cpus) * 1000, " ".join(f"{cpu * 1000:.0f}" for cpu in cpus)
        print(f"  {finished:6,} finished tasks: {median:5.0f} ms CPU per agent run (runs: {shown})")
    ratio = statistics.median(many) / statistics.median(few)
    pair_ratios = " ".join(f"{b / a:.2f}" for a, b in zip(few, many, strict=True))
    verdict = "met" if ratio <= target else "NOT met"
    print(
        f"  ratio of the medians {ratio:.2f}x   (target <= {target}x: {verdict}); each pair's: {pair_ratios}"
    )


def journal(root: Path) -> list[dict]:
    path = root / "build" / "ralph-logs" / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def run_construct(root: Path, *flags: str, env: dict | None = None) -> float:
    started = time.perf_counter()
    done = ralph(root, "construct", "specs/bench.md", "--agent-cmd", AGENT, "--gate", "", *flags, env=env)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"construct failed ({done.returncode}): {done.stdout}{done.stderr}")
    return elapsed


def overhead_per_run(tasks: int = 10, sandbox: str = "off") -> float:
    """ralph's overhead per agent run, and the wall time per run (returned)."""
    with tempfile.TemporaryDirectory() as folder:
        root = make_repo(Path(folder), tasks, done=False)
        wall = run_construct(root, "--parallel", "1", f"--sandbox={sandbox}")
        runs = [e for e in journal(root) if e["event"] == "agent_end"]
        agent_time = sum(e["duration_s"] for e in runs)
    overhead = (wall - agent_time) / len(runs)
    verdict = "met" if overhead < 0.3 else "NOT met"
    print(
        f"construct, {tasks} tasks, no-op agent, --sandbox={sandbox}: {len(runs)} agent runs,"
        f" wall {wall:.2f} s, agents {agent_time:.2f} s"
    )
    print(f"  ralph's overhead per agent run  {overhead * 1000:6.0f} ms   (target < 300 ms: {verdict})")
    return wall / len(runs)


def sandbox_start(repeat: int = 40) -> bool:
    """What the fence adds to starting one run: `true` in the sandbox a run gets (the same bwrap
    argv, secrets scan and git lookups included) against `true` alone. False where there is none."""
    from ralph.loop.process import sandbox

    with tempfile.TemporaryDirectory() as folder:
        root = make_repo(Path(folder), 0, done=False)
        try:
            made, said = sandbox.make("required", root, (".claude/", ".claude.json"), ())
        except sandbox.SandboxUnavailable as exc:
            print(f"sandbox start: {exc}")
            return False
        assert made is not None  # required: made, or make raised
        fence = made
        try:
            timings = {}
            for label, argv in (
                ("true", lambda: ["true"]),
                ("sandbox", lambda: fence.wrap(["true"], root, bench_env())),
            ):
                started = time.perf_counter()
                for _ in range(repeat):
                    subprocess.run(argv(), check=True, env=bench_env())
                timings[label] = (time.perf_counter() - started) / repeat
        finally:
            fence.close()
    added = timings["sandbox"] - timings["true"]
    print(
        f"sandbox start ({repeat} runs): `true` {timings['true'] * 1000:.1f} ms, in the sandbox"
        f" {timings['sandbox'] * 1000:.1f} ms: {added * 1000:.1f} ms more per agent or gate run"
        f" (target < 50 ms: {'met' if added < 0.05 else 'NOT met'})"
    )
    return True


def parallel_verify(tasks: int = 8, sleep_s: float = 2.0, parallel: int = 4) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = make_repo(Path(folder), tasks, done=True)
        env = bench_env(BENCH_VERIFY_SLEEP=str(sleep_s))
        run_construct(root, "--parallel", str(parallel), env=env)
        events = journal(root)
        stage = next(e for e in events if e["event"] == "stage_end" and e["stage"] == "VERIFY")
        verifiers = [e["duration_s"] for e in events if e["event"] == "agent_end" and e["stage"] == "VERIFY"]
    ideal = tasks / parallel * sleep_s
    ratio = stage["duration_s"] / ideal
    verdict = "met" if ratio <= 1.2 else "NOT met"
    print(f"VERIFY of {tasks} done tasks, verifier {sleep_s:g} s each, --parallel {parallel}:")
    print(
        f"  stage took {stage['duration_s']:.2f} s, ideal {ideal:.2f} s,"
        f" ratio {ratio:.2f}x   (target <= 1.2x: {verdict})"
    )
    mean = sum(verifiers) / len(verifiers)
    rounds = tasks / parallel * mean
    print(
        f"  each verifier run took {mean:.2f} s on average (its sleep plus its own `ralph task accept`);"
        f" against {tasks // parallel} rounds of that ({rounds:.2f} s)"
        f" the stage ratio is {stage['duration_s'] / rounds:.2f}x"
    )


if __name__ == "__main__":
    warm_bytecode()
    history_cost()
    unfenced = overhead_per_run()
    if sandbox_start():
        fenced = overhead_per_run(sandbox="required")
        print(f"  the sandbox adds {(fenced - unfenced) * 1000:.0f} ms to each run of the loop above")
    parallel_verify()
