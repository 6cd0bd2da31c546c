"""A runner's unpublished plan changes made again on the remote's head, one operation at a time
(ralph.plan.ops), each one's precondition checked again on the plan as it is now: an operation on
a task another runner decomposed meanwhile is dropped, a dependency on it moves to its subtasks, a
claim another runner published first stands, and whatever a transition itself refuses there (a
task done twice, a question answered twice) is dropped with its reason. Pure: bytes in, bytes out."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ralph.errors import PlanInvalid, RalphError
from ralph.plan.loader import load, touched_problems
from ralph.plan.ops import Op, handing_out
from ralph.plan.plan import TRANSITIONS, Plan
from ralph.plan.records import Replayed, holds

# The transitions whose first argument names the task they act on.
ON_A_TASK = frozenset(
    name for name in TRANSITIONS if getattr(Plan, name).__wrapped__.__code__.co_varnames[1:2] == ("task_id",)
)


@dataclass(frozen=True)
class Outcome:
    op: str
    kind: Replayed
    why: str = ""

    def line(self) -> str:
        return f"{self.kind} {self.op}" + (f": {self.why}" if self.why else "")


def replay(data: bytes, ops: list[Op], name: str = "plan.jsonl") -> tuple[bytes, list[Outcome]]:
    """The plan `data` with `ops` made on it in order, and what became of each. The plan is
    loaded once; an operation refused half way is undone by loading the bytes it started from
    again (known valid, so only parsed)."""
    plan = Plan(load(data, name))
    outcomes = []
    for op in ops:
        before = plan.doc.raws()  # its lines, not joined: most operations apply
        outcome = _replay_one(plan, copy.deepcopy(op))
        if outcome.kind == Replayed.DROPPED and plan.doc.raws() != before:
            plan = Plan(load(b"".join(before), name, trusted=True))
        plan.doc.touched = []  # what the next operation writes is checked alone
        outcomes.append(outcome)
    return plan.doc.to_bytes(), outcomes


def _replay_one(plan: Plan, op: Op) -> Outcome:
    transition = op["op"]
    if transition not in TRANSITIONS:  # a message names it: only a transition is ever called
        return Outcome(transition, Replayed.DROPPED, "not a transition of the plan")
    args, kw = list(op.get("args", [])), dict(op.get("kw", {}))
    why = _no_longer_applies(plan, transition, args, kw)
    if why:
        return Outcome(transition, Replayed.DROPPED, why)
    moved = _deps_moved_off_decomposed(plan, transition, args, kw)
    try:
        with handing_out(op.get("ids", [])):
            getattr(plan, transition)(*args, **kw)
        problems = touched_problems(plan.doc)
        if problems:
            raise PlanInvalid(problems)
    except (RalphError, AttributeError, KeyError, TypeError, ValueError) as exc:  # refused on this plan
        return Outcome(transition, Replayed.DROPPED, _first_line(exc))
    return Outcome(transition, Replayed.MOVED if moved else Replayed.APPLIED, moved)


def decomposed_into(plan: Plan, task_id: str) -> list[str]:
    """The subtasks that replaced `task_id`, those still in the plan; none when the task is in
    the plan, or went another way (deleted, accepted). A subtask decomposed in turn is not
    followed to its own: theirs name it as parent, and nothing records its parent once it goes."""
    if plan.find_task(task_id) is not None:
        return []
    return [task["id"] for task in plan.tasks() if task.get("parent") == task_id]


def _no_longer_applies(plan: Plan, transition: str, args: list[Any], kw: dict[str, Any]) -> str:
    """Why the operation's precondition fails on this plan ("" when it holds, as far as the
    transition itself does not check it)."""
    task_id = kw.get("task_id", args[0] if args else None) if transition in ON_A_TASK else None
    if isinstance(task_id, str):
        parts = decomposed_into(plan, task_id)
        if parts:
            return f"{task_id} was decomposed into {', '.join(parts)}"
    if transition == "claim" and isinstance(task_id, str):
        runner = kw.get("runner", args[1] if len(args) > 1 else None)
        host = kw.get("host", args[6] if len(args) > 6 else None)
        item = plan.find_claimable(task_id)
        holder = item.get("claimed_by") if item else None
        if item and holder and not holds(item, str(runner), host):
            return f"{task_id} is claimed by {holder}, published first"
    if transition == "add_tasks":
        items = kw.get("items", args[0] if args else [])
        batch = {item.get("id") for item in items if isinstance(item, dict)}
        for item in items if isinstance(items, list) else []:
            parent = item.get("parent") if isinstance(item, dict) else None
            others = [part for part in decomposed_into(plan, parent) if part not in batch] if parent else []
            if others:
                return f"{parent} was decomposed into {', '.join(others)}"
    return ""


def _deps_moved_off_decomposed(plan: Plan, transition: str, args: list[Any], kw: dict[str, Any]) -> str:
    """New tasks' dependencies on a task decomposed meanwhile move to its subtasks (in place);
    says which moved ("" when none)."""
    if transition != "add_tasks":
        return ""
    items = kw.get("items", args[0] if args else [])
    moved = []
    for item in items if isinstance(items, list) else []:
        deps = item.get("deps") if isinstance(item, dict) else None
        if not isinstance(deps, list):
            continue
        new: list[str] = []
        for dep in deps:
            parts = decomposed_into(plan, dep) if isinstance(dep, str) else []
            if parts:
                moved.append(f"{dep} -> {', '.join(parts)}")
            new.extend(part for part in (parts or [dep]) if part not in new)
        item["deps"] = new
    return "dependencies moved to the subtasks: " + "; ".join(moved) if moved else ""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
