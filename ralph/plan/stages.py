"""Which stage the plan is in, read from its state alone.

When several hold, the first wins:
  DECOMPOSE    a pending task carries a kill_reason: failed work is split before anything else,
               so the loop never retries a task that already blew its time or context budget;
  INVESTIGATE  open issues: they may add or change the tasks BUILD would pick;
  WAITING      open questions hold every task left (directly or through a dependency), with no
               issue, no done and no killed task: only a person's answers move it on (a
               pending task that depends on a question's task is held too, so this comes first);
  BUILD        pending tasks;
  VERIFY       done tasks and nothing pending;
  BLOCKED      only blocked tasks and issues kept open remain: a person must decide;
  COMPLETE     no task and no issue (an issue awaiting the next spec check aside: it is that
               check's, which COMPLETE comes after).
"""

from __future__ import annotations

from collections.abc import Sequence

from ralph.plan.document import Record
from ralph.plan.records import Stage, awaits_recheck, is_done, is_killed, is_pending
from ralph.plan.schedule import only_questions_left


def stage_of(tasks: list[Record], issues: list[Record], questions: Sequence[Record] = ()) -> Stage:
    """The plan's stage; `questions` are the open questions (without them, never WAITING)."""
    issues = [issue for issue in issues if not awaits_recheck(issue)]
    if any(map(is_killed, tasks)):
        return Stage.DECOMPOSE
    if any(not issue.get("keep_open") for issue in issues):
        return Stage.INVESTIGATE
    if tasks and only_questions_left(tasks, issues, list(questions)):
        return Stage.WAITING
    if any(map(is_pending, tasks)):
        return Stage.BUILD
    if any(map(is_done, tasks)):
        return Stage.VERIFY
    if tasks or issues:
        return Stage.BLOCKED
    return Stage.COMPLETE
