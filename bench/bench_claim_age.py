"""Benchmark of judging a claim's age (ralph.store.claim_clock): the first look at a claim searches
the remote's history for the commit that made it (`git log -S`, newest first, stopping there);
later looks read what was kept in .git/ralph/claims-seen.json. A synthetic history: a plan of 400
tasks, 2,000 plan commits (each changes one line), one claim made 20 commits before the head, one
halfway. The floor is what every round pays anyway: reading plan.jsonl at the remote head (one
`git cat-file`). Prints each as a ratio of the floor. Not a pass/fail test."""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ralph.plan.document import Record
from ralph.store.claim_clock import ClaimClock
from ralph.store.git import Repo

TASKS, COMMITS = 400, 2000
CLAIM = {"claimed_by": "runner-1", "claimed_at": "2026-01-01T00:00:00+00:00"}


RECENT, OLD = COMMITS - 20, COMMITS // 2  # where each claim is made: its task is t-<that number>


def plan(iteration: int) -> bytes:
    lines = [{"t": "state", "iteration": iteration}]
    for n in range(TASKS):
        task: Record = {"t": "task", "id": f"t-{n:06d}", "name": f"Task {n} " + "x" * 60, "s": "p"}
        claimed = (n == RECENT % TASKS and iteration >= RECENT) or (n == OLD % TASKS and iteration >= OLD)
        lines.append({**task, **CLAIM} if claimed else task)
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def history(root: Path) -> None:
    """COMMITS commits of plan.jsonl on main, through one `git fast-import`."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    stream = bytearray()
    for n in range(COMMITS):
        data = plan(n)
        stamp = 1_700_000_000 + n * 60
        stream += b"commit refs/heads/main\n"
        stream += b"committer bench <bench@ralph.invalid> %d +0000\n" % stamp
        stream += b"data 6\nround\n"  # each commit goes on the branch's last: no `from`
        stream += b"M 100644 inline plan.jsonl\ndata %d\n%s\n" % (len(data), data)
    subprocess.run(["git", "-C", str(root), "fast-import", "--quiet"], input=bytes(stream), check=True)
    subprocess.run(["git", "-C", str(root), "reset", "-q", "--hard", "main"], check=True)


def median_s(action: Callable[[], object], times: int) -> float:
    took = []
    for _ in range(times):
        started = time.perf_counter()
        action()
        took.append(time.perf_counter() - started)
    return statistics.median(took)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "repo"
        history(root)
        repo = Repo(root)
        now = "2026-06-01T00:00:00+00:00"
        floor = median_s(lambda: repo.objects.file_at("main", "plan.jsonl"), 21)
        fresh = iter(range(100))
        first: dict[int, float] = {}
        for made in (RECENT, OLD):
            item: Record = {"t": "task", "id": f"t-{made % TASKS:06d}", **CLAIM}
            path = Path(folder) / f"seen-{next(fresh)}.json"
            found = ClaimClock(repo, ("main",), path).judge(item, now).committed_at
            assert found is not None, "the claim's commit was not found"

            def fresh_judge(item: Record = item) -> object:
                return ClaimClock(repo, ("main",), Path(folder) / f"seen-{next(fresh)}.json").judge(item, now)

            first[made] = median_s(fresh_judge, 5)
        restarted = median_s(lambda: ClaimClock(repo, ("main",), path).judge(item, now), 21)
        warm = ClaimClock(repo, ("main",), path)
        in_round = median_s(lambda: warm.judge(item, now), 101)
    print(f"a claim's age, {COMMITS} plan commits of {TASKS} tasks:")
    print(f"  floor (plan.jsonl at the head, read every round): {floor * 1000:.2f} ms")
    for made, took in first.items():
        print(
            f"  first look at a claim made {COMMITS - made} commits ago (history searched):"
            f" {took * 1000:.1f} ms ({took / floor:.1f}x the floor)"
        )
    print(
        f"  a restarted runner's look (kept file read): {restarted * 1000:.2f} ms ({restarted / floor:.2f}x)"
    )
    print(f"  later looks in one run: {in_round * 1e6:.0f} us ({in_round / floor:.3f}x)")


if __name__ == "__main__":
    main()
