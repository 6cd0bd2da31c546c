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

from ralph.plan.records import Stage, is_killed, is_pending


def stage_of(tasks: list[dict], issues: list[dict]) -> Stage:
    if any(map(is_killed, tasks)):
        return Stage.DECOMPOSE
    if issues:
        return Stage.INVESTIGATE
    if any(map(is_pending, tasks)):
        return Stage.BUILD
    if tasks:
        return Stage.VERIFY
    return Stage.COMPLETE
