"""Claims: runners sharing one git remote claim a task, issue or spec before working on it."""

from __future__ import annotations

from collections.abc import Callable

from ralph.errors import InvalidInput, Refused
from ralph.plan.document import Record
from ralph.plan.intake import require_text
from ralph.plan.reading import PlanReader, claim_age_s, drop_claim
from ralph.plan.records import holds, is_blocked

# A claim's age in seconds at a time, None: expired (ralph.plan.reading.claim_age_s for the rule).
Ages = Callable[[Record, str], float | None]


def claim(
    plan: PlanReader,
    task_id: str,
    runner: str,
    now: str,
    ttl_s: float | None = None,
    ages: Ages = claim_age_s,
    host: str | None = None,
) -> Record:
    """`runner` claims the task at `now` (UTC, ISO 8601): it builds it (a pending task),
    verifies it (a done one) or decomposes it (a killed one), no other runner does. An issue
    (to investigate it) or a spec record (to plan it) is claimed the same way. Claiming one's
    own item again renews the claim (`host`: the claimer's, recorded as `claimed_on`, so that a
    namesake on another host is another runner). Another runner's claim is refused unless it is older
    than the claim TTL (by `ages`: runners sharing a remote judge it by the remote's history,
    see ralph.store.claim_clock): then it is taken over, and a takeover record keeps the claim it
    replaced."""
    require_text(runner, "the runner")
    if not runner.strip():
        raise InvalidInput("a claim needs a runner name")
    line = plan.claim_line(task_id)
    task = line.record
    if task["t"] == "task" and is_blocked(task):  # pending: to build it; done: to verify it
        raise Refused(f"task {task_id} is blocked; only a pending or done task is claimed")
    holder = task.get("claimed_by")
    if holder and not holds(task, runner, host):
        ttl = plan.claim_ttl_s() if ttl_s is None else ttl_s
        age = ages(task, now)
        if age is not None and age < ttl:
            raise Refused(f"task {task_id} is claimed by {_who(task)} since {task.get('claimed_at', '?')}")
        takeover = {"t": "takeover", "id": task_id, "by": runner, "at": now, "was_claimed_by": holder}
        if task.get("claimed_at"):
            takeover["was_claimed_at"] = task["claimed_at"]
        plan.doc.append(takeover)
    drop_claim(task)
    task["claimed_by"], task["claimed_at"] = runner, now
    if host:
        task["claimed_on"] = host
    plan.doc.rewrite(line)
    return task


def release(plan: PlanReader, task_id: str, runner: str, host: str | None = None) -> Record | None:
    """Drop `runner`'s claim on the task. None when there is nothing to release (the task is
    gone, accepted, or not claimed); another runner's claim is refused."""
    line = plan.find_claimable_line(task_id)
    if line is None or not line.record.get("claimed_by"):
        return None
    task = line.record
    if not holds(task, runner, host):
        raise Refused(f"{task_id} is claimed by {_who(task)}, not by {runner}{f' on {host}' if host else ''}")
    drop_claim(task)
    plan.doc.rewrite(line)
    return task


def _who(item: Record) -> str:
    host = item.get("claimed_on")
    return f"{item['claimed_by']} on {host}" if host else str(item["claimed_by"])
