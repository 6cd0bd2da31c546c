"""What is left of a spec, a line each, for the report that ends a construct run: each task not
accepted and each open issue, with why, in words a person acts on, and the log to read."""

from __future__ import annotations

import re

from ralph.failures import gist
from ralph.plan.plan import Plan
from ralph.plan.records import IssueView, KillReason, TaskView


def remaining_lines(plan: Plan, spec: str) -> list[str]:
    return [_remaining_line(task) for task in plan.task_views(spec)] + [
        _issue_line(IssueView(issue)) for issue in plan.issues(spec)
    ]


def _issue_line(issue: IssueView) -> str:
    why = issue.why_open
    return f"{issue.id} issue: {issue.text[:100]}" + (f" ({why.splitlines()[0][:160]})" if why else "")


def _remaining_line(task: TaskView) -> str:
    why = why_left(task)
    state = str(task.status.name).lower()
    return f"{task.id} {state}: {task.name}" + (f" ({why})" if why else "")


_FULL_OUTPUT = re.compile(r"\(full output: ([^)\s]+)\)")


def why_left(task: TaskView) -> str:
    """Why a task is left, in words a person acts on, with the log to read: not only a kill code
    such as `doom_loop`."""
    record = task.record
    if record.get("blocked_reason"):
        return _first(record["blocked_reason"], 200)
    failure = record.get("gate_failure") or ""
    found = _FULL_OUTPUT.search(failure)
    failure_log = found.group(1) if found else None
    last = gist(_FULL_OUTPUT.sub("", failure), 160)  # what failed and its telling line
    if task.kill_reason:
        words = _first(record.get("reject_reason") or str(task.kill_reason), 120)
        doom = task.kill_reason in (KillReason.DOOM_LOOP, KillReason.REPEATED_FAILURE)  # kept failing
        attempts = f" after {task.attempts} attempts" if doom and task.attempts else ""
        said = f"; the last failure: {last}" if last and doom else ""
        log = task.kill_log or failure_log
        return f"set aside for DECOMPOSE{attempts}: {words}{said}" + (f"; log {log}" if log else "")
    if record.get("reject_reason"):
        return f"VERIFY rejected it: {_first(record['reject_reason'], 160)}"
    if failure:
        tried = f"build {task.attempts} failed" if task.attempts else "the last build failed"
        return f"{tried}: {last}" + (f"; log {failure_log}" if failure_log else "")
    return _first(task.why_not_done, 200)


def _first(text: str, limit: int) -> str:
    """The first non-empty line of `text`, at most `limit` characters."""
    line = next((line.strip() for line in str(text).splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."
