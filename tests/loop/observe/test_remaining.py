"""ralph.loop.observe.remaining: what is left of a spec, told so that a person can act on it."""

from __future__ import annotations

from ralph.loop.observe.remaining import why_left
from ralph.plan.records import TaskView


def test_a_task_set_aside_is_explained_with_its_last_failure_and_log():
    killed = TaskView(
        {
            "id": "t-aaaaaa", "name": "Hard", "s": "p", "attempts": 3, "kill_reason": "doom_loop",
            "reject_reason": "the build kept failing; split it into smaller tasks",
            "kill_log": "build/ralph-logs/b.log",
            "gate_failure": "FAILED: a.txt\nmore\n(full output: build/ralph-logs/g.log)",
        }
    )  # fmt: skip
    assert why_left(killed) == (
        "set aside for DECOMPOSE after 3 attempts: the build kept failing; split it into smaller"
        " tasks; the last failure: FAILED: a.txt; log build/ralph-logs/b.log"
    )
    failed = TaskView(
        {"id": "t-b", "name": "B", "s": "p", "attempts": 1, "gate_failure": "boom\n(full output: g.log)"}
    )
    assert why_left(failed) == "build 1 failed: boom; log g.log"
    pytest_failed = TaskView(
        {
            "id": "t-c", "name": "C", "s": "p", "attempts": 2,
            "gate_failure": "`make verify` exited 2:\n...\nE       assert 0 == 4\n"
            "tests/test_c.py:3: AssertionError\n==== 1 failed in 0.1s ====\n(full output: g.log)",
        }
    )  # fmt: skip
    # what failed and the line that says why, not the gate's first line alone
    assert why_left(pytest_failed) == "build 2 failed: `make verify` exited 2: E assert 0 == 4; log g.log"
