"""Which stage the plan is in, read from its state alone.

When several hold, the first wins:
  DECOMPOSE    a pending task carries a kill_reason: failed work is split before anything else,
               so the loop never retries a task that already blew its time or context budget;
  INVESTIGATE  open issues: they may add or change the tasks BUILD would pick;
  BUILD        pending tasks;
  VERIFY       done tasks and nothing pending;
  COMPLETE     no pending or done task and no issue.
"""

from __future__ import annotations

STAGES = ("INVESTIGATE", "BUILD", "VERIFY", "DECOMPOSE", "COMPLETE")


def stage_of(tasks: list[dict], issues: list[dict]) -> str:
    if any(task.get("kill_reason") and task.get("s", "p") == "p" for task in tasks):
        return "DECOMPOSE"
    if issues:
        return "INVESTIGATE"
    if any(task.get("s", "p") == "p" for task in tasks):
        return "BUILD"
    if tasks:
        return "VERIFY"
    return "COMPLETE"
