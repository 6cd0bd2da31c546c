"""DECOMPOSE's own pieces; the stage through the real loop is in test_construct.py and
test_stage_runs.py."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_kill_log_sample_reads_only_head_and_tail(tmp_path):
    from ralph.loop.stages.decompose import log_sample

    log = tmp_path / "big.log"
    log.write_text("".join(f"line {n}\n" for n in range(100_000)))
    head, tail = log_sample(log)
    assert head.splitlines()[0] == "line 0" and len(head.splitlines()) == 50
    assert tail.splitlines()[-1] == "line 99999" and len(tail.splitlines()) == 100
    assert log_sample(Path(tmp_path / "missing.log")) == ("(no log)", "(no log)")


CYCLING_AGENT = r"""
import json, os, pathlib, shlex, subprocess, sys
ralph = shlex.split(os.environ["RALPH_BIN"])
def run(*args):
    return subprocess.run([*ralph, *args], capture_output=True, text=True)
stage, task = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID", "")
if stage == "BUILD" and task == "t-aaaaaa":
    print("not this time")  # never done: the same failure twice sends it to DECOMPOSE
elif stage == "BUILD":
    pathlib.Path("work").mkdir(exist_ok=True)
    pathlib.Path(f"work/{task}.txt").write_text(f"ok {task}\n")
    run("task", "done")
elif stage == "DECOMPOSE":  # a part that needs the task that needs its parent: a cycle once moved
    parts = [{"id": "t-aaaaaa-1", "name": "A part 1", "parent": task, "deps": ["t-cccccc"]},
             {"id": "t-aaaaaa-2", "name": "A part 2", "parent": task}]
    run("task", "add", json.dumps(parts))
    run("task", "delete", task)  # refused: it would close the cycle
elif stage == "VERIFY":
    run("task", "accept")
"""


@pytest.mark.slow
def test_a_decomposition_that_would_close_a_dependency_cycle_is_refused_not_the_runs_end(project, tmp_path):
    """C needs A; A's DECOMPOSE makes a part that needs C. Deleting A moves C onto A's parts, a
    cycle: the decomposition is refused and undone, as one with too few parts is, and the run
    goes on to its end with a valid plan instead of ending in an error at every start."""
    import shlex
    import sys

    from ralph.usecases import tasks
    from tests.support.construct import assert_clean, construct, events, plan_records

    tasks.add(project, [{"id": "t-aaaaaa", "name": "A", "accept": "ok"}])
    tasks.add(project, [{"id": "t-cccccc", "name": "C", "accept": "ok", "deps": ["t-aaaaaa"]}])
    agent = tmp_path / "cycling_agent.py"
    agent.write_text(CYCLING_AGENT)

    done = construct(project, "--max-iterations", "6", agent=f"{shlex.quote(sys.executable)} {agent}")

    assert done.returncode not in (2, 70), done.stdout + done.stderr  # no error end
    failed = [e for e in events(project) if e["event"] == "decompose_failed"]
    assert failed and "close a dependency cycle" in failed[0]["why"], failed
    ids = {r.get("id") for r in plan_records(project, "HEAD") if r["t"] == "task"}
    assert "t-aaaaaa-1" not in ids and {"t-aaaaaa", "t-cccccc"} <= ids  # undone whole
    assert_clean(project)  # committed, and `ralph check` passes
