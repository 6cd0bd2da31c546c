"""The compacted context's block, from what ralph knows of a stopped run; a run continued with it
is in tests/loop/stages/test_retries.py (in process) and test_construct.py (BUILD and VERIFY)."""

from __future__ import annotations

from ralph.loop.runs.compaction import Stopped, compacted
from ralph.plan.records import Stage


def stopped(stage: Stage, tail: list[str], changed: list[str]) -> Stopped:
    stat = " src/app.py | 4 ++--\n 1 file changed" if "src/app.py" in changed else ""
    return Stopped(stage, "t-abc123", "Parse input", "Criteria: parses", 0.87, changed, stat, tail)


def test_the_block_has_the_spec_parts_in_order_and_the_fill_it_was_stopped_at():
    tail = ["collected 12 items", "FAILED tests/test_app.py::test_parse - KeyError: 'x'", "ok"]
    block = compacted(stopped(Stage.BUILD, tail, ["plan.jsonl", "src/app.py"]))
    lines = block.text.splitlines()
    assert lines[0] == "=== COMPACTED CONTEXT ===" and lines[-1] == "=== END COMPACTED ==="
    assert lines[1] == "Task: BUILD t-abc123 Parse input"
    parts = ["Progress:", "Current state:", "Key files:", "Blockers:", "Recent output:", "Next step:"]
    starts = [next(n for n, line in enumerate(lines) if line.startswith(part)) for part in parts]
    assert starts == sorted(starts)
    assert "Key files: src/app.py" in lines  # the plan is not a key file of code
    blockers = block.text.split("Blockers:")[1].split("Recent output:")[0]
    assert "FAILED tests/test_app.py::test_parse" in blockers and "collected 12 items" not in blockers
    assert block.fill_before == 0.87 and "87% of its context window" in block.text


def test_a_plan_writing_stage_is_told_its_tasks_are_in_the_plan_and_a_quiet_run_has_no_blockers():
    block = compacted(stopped(Stage.PLAN, ["added t-1", "added t-2"], ["plan.jsonl"])).text
    assert "the tasks it added are in plan.jsonl already: do not add them again" in block
    assert "Blockers: (none seen in its last output)" in block
    assert "(no changes to tracked files yet)" in block and "Key files: (none yet)" in block
