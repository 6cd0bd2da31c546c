"""Benchmark of the construct loop replaying a project's history: one task per commit, a scripted
agent (replay_agent.py) that applies its commit's diff with `git apply`, the project's own test
suite (`python -m pytest -q`) as the gate, a verifier that accepts. Each mode (serial, --parallel 4,
three runners at --parallel 1 on one bare remote) must end with the real last commit's tree, and
is timed against the floor measured in the same run: the same patches and suite runs in a plain
loop with a commit each (measured before and after each mode: the mean is the floor). Prints agent
runs per accepted task and per commit, and the wasted runs: all runs beyond the one BUILD and one
VERIFY each commit needs and the one spec CHECK that ends the run (failed attempts, merge conflicts,
set-aside work, the DECOMPOSE runs those lead to, and the runs of the second subtask the agent adds
to a decomposition, which needs two). Serially, it also splits the wall time into suite runs,
agent runs and the loop's own work: the floor has no agent in it, so the agents' runs (two a
commit, each a process that calls `ralph task done` or `accept`) are excess over it by design.
The review by aspect before COMPLETE (REVIEW: five agents on the whole change, the replay agent
finding nothing) is on by default: `--review both` (the default) runs each mode with it and again
with `--no-review`, and prints the agent runs and the wall time it added; `on` or `off` runs one.
A mode still running after MODE_TIMEOUT_S (a runner waiting out a claim of a runner that exited)
is stopped and reported. Not a pass/fail test.

The subjects (`--subject`): this machine has no network but the package index, and ralph's own
history is a poor one (its early commits need gitpython, since dropped, and later ones a suite of
one to two minutes a run). "tally" (replay_tally.py, the default) is a small package whose 12
commits are written out, some using others' functions: its suite takes a fraction of a second,
so the timings show the loop's own costs. "more-itertools" (replay_releases.py) is a real
project's history, one commit per release from its published source distributions, with its
real suite of some 1.2-2.2 s a run; its releases each build on the one before, so it is replayed
serially by default. `--deps needed` gives each task the tasks its patch needs (the last earlier
commit to touch each of its files, and the commits whose functions it uses); `--deps none`, the
default, gives none, as a history replayed task by task has none, so parallel modes show runs
wasted beside a neighbour: builds started at the same time as the one whose change they need,
which fail and are built again (not counted as attempts) once it has merged. `--order log` adds
the tasks newest first, as `git log` lists the commits: serially too a task's change may then
need one not yet in, and the scripted agent says so as Claude Code's stream-json does (a result
with is_error, then exit 1), so the loop must move on to other tasks and come back. A run on a stale
base is another thing: a build attempt started where the branch had already moved past its base
(the loop journals each attempt's base in a worktree); the issue's target is that none is.

The patches reach the agent through a folder under build/ (BENCH_REPLAY_PATCHES): ralph's sandbox
gives agents a private /tmp, and a release's patch is too big for an environment variable.

    python bench/bench_replay.py [--subject tally|more-itertools] [--commits N]
                                 [--modes serial,parallel,remote] [--deps none|needed]
                                 [--order history|log] [--review both|on|off]
                                 [--keep]   (keep the repositories and logs, to look at a run)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bench_construct import bench_env, ralph, warm_bytecode
from replay_history import GATE, NO_PLUGINS, History, git
from replay_releases import VERSIONS, releases_history
from replay_tally import HISTORY, tally_history

HERE = Path(__file__).parent
AGENT = f"{shlex.quote(sys.executable)} {shlex.quote(str(HERE / 'replay_agent.py'))}"
MODE_TIMEOUT_S = 300  # a wedged runner waits out its peers' claims (30 minutes): it is stopped
IDLE_S = 30
RUNNERS = 3
# name -> (builds the history, the most commits it has, the modes run by default)
SUBJECTS: dict[str, tuple[Callable[..., History], int, str]] = {
    "tally": (tally_history, len(HISTORY), "serial,parallel,remote"),
    "more-itertools": (releases_history, len(VERSIONS) - 1, "serial"),
}


def tree_without_plan(repo: Path, rev: str) -> str:
    """The tree of `rev` less plan.jsonl (which holds the run's records, not the project)."""
    listing = [line for line in git(repo, "ls-tree", rev).splitlines() if not line.endswith("\tplan.jsonl")]
    command = ["git", "-C", str(repo), "mktree"]
    return subprocess.run(
        command, input="".join(f"{line}\n" for line in listing), capture_output=True, text=True, check=True
    ).stdout.strip()


def bare_origin(folder: Path, history: History) -> Path:
    origin = folder / "origin.git"
    git(folder, "init", "-q", "--bare", str(origin))
    git(history.real, "push", "-q", str(origin), f"{history.base}:refs/heads/main")
    git(origin, "symbolic-ref", "HEAD", "refs/heads/main")
    return origin


def clone(origin: Path, path: Path, user: str) -> Path:
    git(origin.parent, "clone", "-q", str(origin), str(path))
    git(path, "config", "user.name", user)
    git(path, "config", "user.email", "bench@ralph.invalid")
    ralph(path, "init")  # the merge driver's config lives in .git/config, which a clone lacks
    return path


@dataclass
class Floor:
    wall: float
    suites: float  # of which the suite runs
    tree: str


def floor(folder: Path, history: History) -> Floor:
    """The same patches and suite runs in a plain loop, a commit each: wall time and final tree."""
    root = clone(bare_origin(folder, history), folder / "floor", "floor")
    env = replay_env(history)
    started = time.perf_counter()
    suites = 0.0
    for number in range(1, len(history.commits) + 1):
        patch = str(history.patches / f"{number:02d}.patch")
        subprocess.run(["git", "apply", "--whitespace=nowarn", patch], cwd=root, check=True)
        suite_started = time.perf_counter()
        suite = subprocess.run(shlex.split(GATE), cwd=root, capture_output=True, text=True, env=env)
        suites += time.perf_counter() - suite_started
        if suite.returncode != 0:  # the history above is wrong
            sys.exit(f"the suite fails at commit {number}:\n{suite.stdout[-2000:]}")
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        subprocess.run(["git", "commit", "-qm", f"commit {number}"], cwd=root, check=True)
    return Floor(time.perf_counter() - started, suites, tree_without_plan(root, "HEAD"))


def add_tasks(root: Path, history: History, deps: str, order: str) -> None:
    tasks = []
    for number, subject in enumerate(history.subjects, start=1):
        task: dict[str, str | list[str]] = {"id": f"t-replay{number:02d}", "name": subject}
        if deps == "needed" and history.deps[number]:
            task["deps"] = [f"t-replay{n:02d}" for n in history.deps[number]]
        tasks.append(task)
    if order == "log":  # newest first, as `git log` lists them
        tasks.reverse()
    added = ralph(root, "task", "add", json.dumps(tasks))
    if added.returncode != 0:
        sys.exit(f"task add failed: {added.stderr}")


@dataclass
class Outcome:
    wall: float
    tree: str
    exits: list[int]
    events: list[dict]
    accepted: list[str]  # the ids of the tasks accepted
    done: list[str]  # the ids of the tasks built but not (yet) accepted
    notes: list[str]  # the last lines of each construct that failed
    reached_s: float | None  # when the branch first held the real tree, from the start (in seconds)


def replay_env(history: History) -> dict[str, str]:
    """The floor's and the loop's: the subjects of the commits, and where their patches are."""
    subjects = {f"{n:02d}": subject for n, subject in enumerate(history.subjects, start=1)}
    return bench_env(
        BENCH_REPLAY=json.dumps(subjects), BENCH_REPLAY_PATCHES=str(history.patches), **NO_PLUGINS
    )


def run_mode(
    folder: Path, history: History, mode: str, deps: str, order: str, review: bool = True
) -> Outcome:
    origin = bare_origin(folder, history)
    seed = clone(origin, folder / "seed", "seed")
    add_tasks(seed, history, deps, order)
    git(seed, "push", "-q", "origin", "HEAD:main")
    runners = RUNNERS if mode == "remote" else 1
    clones = [clone(origin, folder / f"runner{n}", f"runner {n}") for n in range(runners)]
    flags = ["--agent-cmd", AGENT, "--gate", GATE, "--max-iterations", "40"]
    flags += ["--parallel", "4" if mode == "parallel" else "1"]
    flags += [] if review else ["--no-review"]
    outputs = [folder / f"runner{n}.out" for n in range(runners)]
    handles = [output.open("w") for output in outputs]
    started, started_at = time.perf_counter(), time.time()
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "ralph", "-C", str(root), "construct", "specs/replay.md", *flags]
            + (["--remote", "origin", "--runner", f"runner-{n}"] if mode == "remote" else []),
            env=replay_env(history),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for n, (root, handle) in enumerate(zip(clones, handles, strict=True))
    ]
    stopped = wait_all(runs, clones)
    wall = time.perf_counter() - started
    for handle in handles:
        handle.close()
    ended = [note(run, output, stopped) for run, output in zip(runs, outputs, strict=True)]
    final_repo, final_rev = (origin, "main") if mode == "remote" else (clones[0], "HEAD")
    events = [event for root in clones for event in journal(root)]
    records = [json.loads(line) for line in git(final_repo, "show", f"{final_rev}:plan.jsonl").splitlines()]
    accepted = [record["id"] for record in records if record.get("t") == "accept"]
    done = [record["id"] for record in records if record.get("t") == "task" and record.get("s") == "d"]
    tree = tree_without_plan(final_repo, final_rev)
    reached = reached_after(final_repo, final_rev, tree_without_plan(history.real, history.commits[-1]))
    return Outcome(
        wall,
        tree,
        [code for code, _ in ended],
        events,
        accepted,
        done,
        [note for _, note in ended if note],
        None if reached is None else reached - started_at,
    )


def reached_after(repo: Path, rev: str, real_tree: str) -> int | None:
    """The commit time of the first commit of `rev` with the real tree: when the work was all in,
    whatever the runners did after."""
    for line in git(repo, "log", "--reverse", "--format=%H %ct", rev).splitlines():
        commit, when = line.split()
        if tree_without_plan(repo, commit) == real_tree:
            return int(when)
    return None


LABELS = {
    "serial": "serial (--parallel 1)",
    "parallel": "--parallel 4",
    "remote": f"{RUNNERS} runners at --parallel 1, one bare remote",
}


def wait_all(runs: list[subprocess.Popen], clones: list[Path]) -> str:
    """Waits for every run; returns why the runs still going were stopped, if they were: after
    MODE_TIMEOUT_S, or once a runner has failed and the others' journals have not grown for
    IDLE_S (they wait out the failed runner's claims, 30 minutes)."""
    started = last_change = time.perf_counter()
    sizes: list[int] = []
    while any(run.poll() is None for run in runs):
        time.sleep(0.02)  # the wall time is taken when the last run is seen ended: keep that close
        now = time.perf_counter()
        grown = [journal_size(root) for root in clones]
        if grown != sizes:
            sizes, last_change = grown, now
        if now - started > MODE_TIMEOUT_S:
            why = f"still running after {MODE_TIMEOUT_S} s"
        elif any(run.returncode for run in runs if run.poll() is not None) and now - last_change > IDLE_S:
            why = f"idle for {IDLE_S} s after another runner failed"
        else:
            continue
        for run in runs:
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGTERM)
                run.wait()
        return why
    return ""


def journal_size(root: Path) -> int:
    path = root / "build" / "ralph-logs" / "events.jsonl"
    return path.stat().st_size if path.exists() else 0


def note(run: subprocess.Popen, output: Path, stopped: str) -> tuple[int, str]:
    """Its exit code and, when it failed, a note with its last lines."""
    if run.returncode == 0:
        return 0, ""
    why = (
        f" ({stopped}: stopped)"
        if stopped and run.returncode in (128 + signal.SIGTERM, -signal.SIGTERM)
        else ""
    )
    tail = "\n      ".join(line[:200] for line in output.read_text(errors="replace").splitlines()[-4:])
    return run.returncode, f"a construct exited {run.returncode}{why}; its last lines:\n      {tail}"


def journal(root: Path) -> list[dict]:
    path = root / "build" / "ralph-logs" / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def report(mode: str, outcome: Outcome, floors: list[Floor], real_tree: str, commits: int) -> None:
    """Every commit needs one BUILD and one VERIFY run, and the spec one CHECK that finds nothing
    missing (the construct spec ends a run COMPLETE only after it); every other run is wasted:
    failed or unmerged builds, the DECOMPOSE runs they led to, the runs of the subtasks a
    decomposition adds only to have two, checks that were stopped."""
    runs = Counter(e["stage"] for e in outcome.events if e["event"] == "agent_end")
    total = sum(runs.values())
    # One BUILD and one VERIFY per commit were kept: each accepted task's, and a built task's BUILD.
    built = sum(1 for task_id in outcome.accepted + outcome.done if not task_id.endswith("-check"))
    verified = sum(1 for task_id in outcome.accepted if not task_id.endswith("-check"))
    checked = sum(1 for e in outcome.events if e["event"] == "spec_checked")
    wasted = total - built - verified - checked - runs["REVIEW"]  # the review's: counted apart
    failed = Counter(e.get("verdict", "?") for e in outcome.events if e["event"] == "build_failed")
    gates = sum(1 for e in outcome.events if e["event"] == "gate_end")
    kills = sum(1 for e in outcome.events if e["event"] == "task_killed")
    not_merged = sum(1 for e in outcome.events if e["event"] == "build_not_merged")
    beside = sum(1 for e in outcome.events if e["event"] == "build_stale_base")  # uncounted, rebuilt
    # A run on a stale base: a build attempt that started where the branch had already moved past.
    stale = sum(1 for e in outcome.events if e["event"] == "build_attempt" and e.get("behind"))
    same = outcome.tree == real_tree
    floor_s = sum(f.wall for f in floors) / len(floors)
    ratio = outcome.wall / floor_s
    exits = ",".join(str(code) for code in outcome.exits)
    print(
        f"{LABELS[mode]}: wall {outcome.wall:.2f} s, floor {floor_s:.2f} s"
        f" ({' and '.join(f'{f.wall:.2f}' for f in floors)} before and after): {ratio:.2f}x, exit {exits}"
    )
    print(
        f"  final tree {'equals' if same else 'DIFFERS from'} the real last commit's ({outcome.tree[:12]});"
        f" {len(outcome.accepted)} tasks accepted and {len(outcome.done)} done,"
        f" {built} of them building one of the {commits} commits"
    )
    if outcome.reached_s is not None and outcome.exits != [0] * len(outcome.exits):
        print(f"  the real tree was in after {outcome.reached_s:.0f} s (commit times: whole seconds)")
    for note in outcome.notes:
        print(f"  {note}")
    stages = ", ".join(f"{stage} {n}" for stage, n in sorted(runs.items()))
    per_task = total / len(outcome.accepted) if outcome.accepted else float("nan")
    per_commit = total / commits
    print(
        f"  agent runs {total} ({stages}): {per_task:.2f} per accepted task,"
        f" {per_commit:.2f} per commit (ideal 2, and one CHECK"
        + (", and one REVIEW a default aspect)" if runs["REVIEW"] else ")")
    )
    verdicts = ", ".join(f"{verdict} {n}" for verdict, n in sorted(failed.items())) or "none"
    print(
        f"  wasted runs {wasted} (beyond one BUILD and one VERIFY per commit and one passing CHECK):"
        f" failed builds {sum(failed.values())} ({verdicts}),"
        f" builds that failed beside a neighbour whose change they needed {beside} (built again once it"
        f" merged), builds started on a stale base {stale},"
        f" builds not merged {not_merged}, tasks killed {kills}, DECOMPOSE runs {runs['DECOMPOSE']}"
    )
    print(f"  suite runs {gates} (the floor: {commits}), {gates - commits} extra")
    targets = "  targets: no run wasted on a stale base: " + ("met" if not stale else "NOT met")
    if mode == "serial":
        even = _where_the_time_went(outcome, floors, commits)
        targets += f"; serial wall within 1.15x of the floor: {_met(ratio)} ({ratio:.2f}x)"
        targets += f", with the suite runs' time equal in both: {_met(even)} ({even:.2f}x)"
    print(targets)


def _met(ratio: float) -> str:
    return "met" if ratio <= 1.15 else "NOT met"


def _where_the_time_went(outcome: Outcome, floors: list[Floor], commits: int) -> float:
    """One run at a time, the wall time splits into the suite runs, the agent runs (the scripted
    agent's process and the `ralph task done` or `accept` it calls: a plain loop that ran an agent
    would pay the first part too) and the rest, which is the loop's own work. Returns the ratio
    with the suite runs' time made equal in both (see below)."""
    gates = [e["duration_s"] for e in outcome.events if e["event"] == "gate_end"]
    suites = sum(gates)
    agents = sum(e["duration_s"] for e in outcome.events if e["event"] == "agent_end")
    own = outcome.wall - suites - agents
    floor_suites = sum(f.suites for f in floors) / len(floors)
    floor_rest = sum(f.wall - f.suites for f in floors) / len(floors)
    print(
        f"  time: suite runs {suites:.2f} s (the floor's {floor_suites:.2f} s), agent runs {agents:.2f} s,"
        f" the loop's own {own:.2f} s ({own / commits * 1000:.0f} ms a commit; the floor's git apply"
        f" and commit {floor_rest / commits * 1000:.0f} ms a commit)"
    )
    # The suite runs are the same runs in both, but their time moves with the machine's load (by
    # half from one floor to the next on a busy machine): counted at the mean of all of them in
    # both, the ratio shows what the loop adds. What it adds is about the same a commit whatever
    # the suite costs, so the ratio falls as a suite run takes longer: computed, not measured.
    per_run = (suites + floor_suites) / (len(gates) + commits) if gates else floor_suites / commits
    loop_rest = outcome.wall - suites
    even = (per_run * len(gates) + loop_rest) / (per_run * commits + floor_rest)
    added = (loop_rest - floor_rest) / commits
    enough = max(0.0, added / 0.15 - floor_rest / commits)  # the suite run at which it is 1.15x
    print(
        f"  the loop adds {added * 1000:.0f} ms a commit (agent runs and its own work, beyond the floor's"
        f" git apply and commit); with every suite run counted at their mean ({per_run:.2f} s) in both:"
        f" {even:.2f}x; within 1.15x where a suite run takes {enough:.1f} s or more"
    )
    return even


@contextlib.contextmanager
def scratch_folder(prefix: str, parent: str | None, keep: bool) -> Iterator[str]:
    if keep:
        yield tempfile.mkdtemp(prefix=prefix, dir=parent)
    else:
        with tempfile.TemporaryDirectory(prefix=prefix, dir=parent) as folder:
            yield folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subject", choices=sorted(SUBJECTS), default="tally")
    parser.add_argument("--commits", type=int, help="how many of the subject's (all of them)")
    parser.add_argument("--modes", help="serial,parallel,remote (tally: all three; more-itertools: serial)")
    parser.add_argument("--deps", choices=("none", "needed"), default="none")
    parser.add_argument(
        "--order", choices=("history", "log"), default="history", help="tasks oldest first, or newest first"
    )
    parser.add_argument("--keep", action="store_true", help="keep the repositories and print where")
    parser.add_argument(
        "--review",
        choices=("both", "on", "off"),
        default="both",
        help="each mode with the review before COMPLETE and without it, and what it added (both)",
    )
    args = parser.parse_args()
    make_history, most, default_modes = SUBJECTS[args.subject]
    commits = args.commits or most
    modes = [mode for mode in (args.modes or default_modes).split(",") if mode]
    if not 1 <= commits <= most or set(modes) - {"serial", "parallel", "remote"}:
        parser.error(f"--commits is 1 to {most}; --modes is a list of serial, parallel, remote")
    warm_bytecode()
    # The patches go where an agent in ralph's sandbox can read them (it gets a /tmp of its own).
    patches = Path(tempfile.mkdtemp(prefix="patches-", dir=_build_folder()))
    try:
        with scratch_folder("ralph-bench-replay-", None, args.keep) as folder:
            if args.keep:
                print(f"repositories kept in {folder}, patches in {patches}")
            history = make_history(Path(folder), patches, commits)
            replay(history, modes, args.deps, args.order, folder, args.keep, args.review)
    finally:
        if not args.keep:
            shutil.rmtree(patches, ignore_errors=True)


def _build_folder() -> Path:
    folder = HERE.parent / "build" / "bench-replay"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def replay(
    history: History, modes: list[str], deps: str, order: str, folder: str, keep: bool, review: str = "both"
) -> None:
    real_tree = tree_without_plan(history.real, history.commits[-1])
    needs = sum(1 for n in history.deps.values() if n)
    print(
        f"replay of {history.name} ({needs} of them build on an earlier one), gate `pytest -q`,"
        f" deps {deps}, tasks in {order} order; the floor (git apply + suite + commit per commit, in a"
        " plain loop) is measured before and after each mode, the machine's load being what it is:"
    )
    floors = [floor_once(folder, history, real_tree, keep)]
    for mode in modes:
        outcomes = {}
        for reviewed in {"both": (True, False), "on": (True,), "off": (False,)}[review]:
            with scratch_folder(f"{mode}-", folder, keep) as scratch:
                outcome = run_mode(Path(scratch), history, mode, deps, order, reviewed)
            floors.append(floor_once(folder, history, real_tree, keep))
            print("with the review (default aspects):" if reviewed else "with --no-review:")
            report(mode, outcome, floors[-2:], real_tree, len(history.commits))
            outcomes[reviewed] = outcome
        review_cost(outcomes)


def review_cost(outcomes: dict[bool, Outcome]) -> None:
    """What the review before COMPLETE added to a run: its agent runs and its wall time, as its
    own spans measured it and, with both runs made, as the difference of the two runs' walls."""
    on = outcomes.get(True)
    if on is None:
        return
    runs = sum(1 for e in on.events if e["event"] == "agent_end" and e.get("stage") == "REVIEW")
    spans = [e for e in on.events if e["event"] == "stage_end" and e.get("stage") == "REVIEW"]
    took = sum(e["duration_s"] for e in spans)
    said = f"  the review added {runs} agent runs in {len(spans)} rounds, {took:.2f} s of the run's wall"
    off = outcomes.get(False)
    if off is not None:
        said += f"; wall {on.wall:.2f} s with it, {off.wall:.2f} s without: {on.wall - off.wall:+.2f} s"
    print(said)


def floor_once(folder: str, history: History, real_tree: str, keep: bool) -> Floor:
    with scratch_folder("floor-", folder, keep) as scratch:
        measured = floor(Path(scratch), history)
    if measured.tree != real_tree:
        sys.exit(f"the floor's tree {measured.tree} is not the real one {real_tree}")
    return measured


if __name__ == "__main__":
    main()
