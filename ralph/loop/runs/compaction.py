"""Context compaction, for every stage: a run the context monitor stops at the compact tier
(ralph/loop/runs/pressure.py) goes on in a fresh run that opens with a compacted-context block in the
construct spec's form (task, progress, current state, key files, blockers, next step). ralph
writes the block from what it knows (the item, the work tree, the run's last output), not from
the agent's conversation, which it never sees."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ralph.plan.records import Stage

MAX_COMPACTIONS = 3  # per agent run; after that the item is killed for its context

# Lines of a run's last output that read as a blocker: an error, a failed test, a traceback.
_BLOCKER = re.compile(r"error|fail|traceback|exception|refused|denied|not found", re.IGNORECASE)
_BLOCKER_LINES = 5
_RECENT_LINES = 20
_LINE_CHARS = 200

# What each stage's continuation is told its earlier run's work is, beyond changed code.
_PLAN_WORK = {
    Stage.PLAN: "the tasks it added are in plan.jsonl already: do not add them again",
    Stage.INVESTIGATE: "the tasks it added are in plan.jsonl already: do not add them again",
    Stage.DECOMPOSE: "the subtasks it added are in plan.jsonl already: do not add them again",
    Stage.VERIFY: "it gave no verdict yet",
}


@dataclass(frozen=True)
class Compacted:
    """The block a continuation run opens with, and how full the stopped run's context was."""

    text: str
    fill_before: float


@dataclass(frozen=True)
class Stopped:
    """What ralph knows of the run the monitor stopped."""

    stage: Stage
    item: str | None
    name: str | None  # the task's name, the text
    details: str  # the item's details as its prompt gave them
    fill: float
    changed: list[str]  # files changed in the run's work tree (plan.jsonl included)
    stat: str  # `git diff --stat` of the changed tracked files
    tail: list[str]  # the run's last output lines


def compacted(run: Stopped) -> Compacted:
    recent = [line[:_LINE_CHARS] for line in run.tail[-_RECENT_LINES:]]
    blockers = [line for line in recent if _BLOCKER.search(line)][-_BLOCKER_LINES:]
    code = [path for path in run.changed if path != "plan.jsonl"]
    state = [run.stat.rstrip() or "(no changes to tracked files yet)"]
    if run.stage in _PLAN_WORK:
        state.append(f"Its plan work: {_PLAN_WORK[run.stage]}.")
    lines = [
        "=== COMPACTED CONTEXT ===",
        f"Task: {run.stage} {run.item or ''} {run.name or ''}".rstrip(),
        run.details.strip(),
        f"Progress: an earlier run of this {run.stage} was stopped at {run.fill:.0%} of its context window;"
        " what it changed is still in the work tree.",
        "Current state:",
        *state,
        "Key files: " + (", ".join(sorted(code)) or "(none yet)"),
        "Blockers: " + ("\n" + "\n".join(blockers) if blockers else "(none seen in its last output)"),
        "Recent output:",
        "\n".join(recent) or "(none)",
        "Next step: continue from the current state of the files; do not start over, and keep command"
        " output short.",
        "=== END COMPACTED ===",
    ]
    return Compacted("\n".join(line for line in lines if line), run.fill)
