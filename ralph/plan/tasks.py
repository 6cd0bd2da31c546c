"""Tasks as people and agents change them: add, done, accept, reject, delete, prioritize."""

from __future__ import annotations

from ralph.errors import InvalidInput, Refused
from ralph.plan import schedule
from ralph.plan.document import Record
from ralph.plan.families import family_of, fingerprint, note_repeat
from ralph.plan.intake import new_task_record, refuse_cycle, require_text
from ralph.plan.reading import PlanReader, drop_claim, is_question
from ralph.plan.records import (
    KillReason,
    Status,
    Verdict,
    blocking_question,
    is_done,
    is_pending,
)


def add_tasks(plan: PlanReader, items: list[object], issue_id: str | None = None) -> list[Record]:
    """Append new pending tasks; ids are generated unless given. All or nothing. `issue_id`:
    the issue being investigated, which the tasks come from (and take their priority from)."""
    if not items:
        raise InvalidInput("no task given")
    taken = plan.taken_ids()
    known = {task["id"] for task in plan.tasks()} | plan.accepted()
    default_spec = plan.state().get("spec")
    records = []
    for number, item in enumerate(items, start=1):
        label = f"task {number}" if len(items) > 1 else "task"
        record = new_task_record(item, label, taken, default_spec)
        if issue_id and "issue" not in record:
            record["issue"] = issue_id
        _inherit_priority(plan, record)
        _inherit_draft(plan, record)
        taken.add(record["id"])
        records.append(record)
    batch = {record["id"] for record in records}
    for record in records:
        unknown = [dep for dep in record.get("deps", []) if dep not in known | batch]
        if unknown:
            raise Refused(f"task '{record['name']}' depends on unknown task {', '.join(unknown)}")
        if record["id"] in record.get("deps", []):
            raise InvalidInput(f"task '{record['name']}' depends on itself")
    refuse_cycle(records, batch)  # only new tasks can close a cycle: no old task needs them
    for record in records:
        plan.doc.append(record)
    return records  # the store checks the whole change before it writes


def _inherit_priority(plan: PlanReader, record: Record) -> None:
    """A subtask takes its parent's priority, a task made from an issue the issue's, unless given."""
    if record.get("priority"):
        return
    source = plan.find_task(record["parent"]) if record.get("parent") else None
    if source is None and record.get("issue"):
        source = next((issue for issue in plan.issues() if issue["id"] == record["issue"]), None)
    if source and source.get("priority"):
        record["priority"] = source["priority"]
        if source.get("auto_priority"):  # set by `task prioritize`, not a person: it stays recomputable
            record["auto_priority"] = True


def _inherit_draft(plan: PlanReader, record: Record) -> None:
    """A subtask is offered its parent's draft (the work of the build that was stopped), unless
    given one: what was right in it need not be written again."""
    parent = plan.find_task(record["parent"]) if record.get("parent") and not record.get("draft") else None
    if parent and parent.get("draft"):
        record["draft"] = parent["draft"]


def done(plan: PlanReader, task_id: str | None, unchanged: str | None = None) -> Record:
    """Mark the task built. `unchanged`: the builder's argument that the work VERIFY rejected is
    correct as it is, resubmitted without a change for a fresh verifier to judge."""
    if task_id is None:
        task = plan.next_task()
        if task is None:
            raise Refused("no pending task is ready to be marked done")
        task_id = task["id"]
    line = plan.task_line(task_id)
    task = line.record
    if is_done(task):
        raise Refused(f"task {task_id} is already done")
    question = blocking_question(task)
    if question:
        reason = task.get("blocked_reason") or f"waiting for the answer to question {question}"
        raise Refused(f"task {task_id} is {reason[:120]}")
    waiting = schedule.blockers(task, plan.tasks(), plan.accepted())
    if waiting:
        raise Refused(f"task {task_id} is blocked by {', '.join(waiting)} (not done yet)")
    if unchanged is not None:
        _check_resubmission(task, unchanged)
        task["resubmitted"] = unchanged.strip()
    task["s"] = Status.DONE
    drop_claim(task)  # built: the commit that says so frees it (VERIFY claims it anew)
    plan.doc.rewrite(line)
    return task


def _check_resubmission(task: Record, argument: str) -> None:
    require_text(argument, "the argument")
    if not argument.strip():
        raise InvalidInput("--unchanged needs the argument why the work is already correct")
    if task.get("verdict") != Verdict.REJECTED:
        raise Refused(
            f"task {task['id']} was not rejected by VERIFY: --unchanged resubmits rejected work as it is"
        )


def accept(plan: PlanReader, task_id: str | None) -> list[Record]:
    if task_id is None:
        lines = [line for line in plan.task_lines() if is_done(line.record)]
        if not lines:
            raise Refused("nothing to accept: no task is done")
    else:
        lines = [plan.task_line(task_id)]
        if not is_done(lines[0].record):
            raise Refused(f"task {task_id} is pending; only a done task can be accepted")
    for line in lines:
        plan.doc.remove(line)
        plan.doc.append(accepted_on(line.record))
    drop_served_answers(plan)
    return [line.record for line in lines]


def accepted_on(task: Record) -> Record:
    """The accept record of the done task, whose line goes: its id and name, which spec it served,
    which commit built it, which review found it."""
    tombstone = {"t": "accept", "id": task["id"], "name": task["name"]}
    for kept in ("spec", "commit", "aspect"):
        if task.get(kept):
            tombstone[kept] = task[kept]
    return tombstone


def drop_served_answers(plan: PlanReader) -> None:
    """Answered questions no task left asks or inherits have served (git history keeps them)."""
    tasks = plan.tasks()
    wanted = {task["id"] for task in tasks} | {q for task in tasks for q in task.get("questions", [])}
    families = {family_of(task) for task in tasks}
    for line in plan.of("issue"):
        question = line.record
        served = question.get("task") not in wanted and question["id"] not in wanted
        served = served and question.get("family") not in families
        if is_question(question) and question.get("answer") and served:
            plan.doc.remove(line)


def reject(
    plan: PlanReader,
    task_id: str | None,
    reason: str,
    kill_reason: KillReason | None = None,
    kill_log: str | None = None,
) -> Record:
    """Send a done task back to pending with the reason; the loop also rejects running
    (pending) tasks it had to kill, with a kill_reason."""
    _require_reason(reason)
    line = plan.task_line(task_id or _only_done_task(plan))
    tombstone = send_back(plan, line.record, reason, kill_reason, kill_log)
    plan.doc.rewrite(line)
    plan.doc.append(tombstone)
    return line.record


def rejected_on(plan: PlanReader, task: Record, reason: str) -> Record:
    """`reject` of the done task by its verifier, on its record, in place: the reject record to
    append after its line is rewritten."""
    _require_reason(reason)
    return send_back(plan, task, reason, None, None)


def _require_reason(reason: str) -> None:
    require_text(reason, "the reason")
    if not reason.strip():
        raise InvalidInput("a rejection needs a reason")


def send_back(
    plan: PlanReader, task: Record, reason: str, kill_reason: KillReason | None, kill_log: str | None
) -> Record:
    """`reject` on the task's record, in place: the reject record to append after its line is
    rewritten (the caller writes both: a transition that rejects rewrites the line once). With a
    `kill_reason`, the loop's own set-aside (set_aside_on)."""
    if kill_reason:
        return set_aside_on(task, reason, kill_reason, kill_log)
    if not is_done(task):
        raise Refused(f"task {task['id']} is pending; only a done task can be rejected")
    task["s"] = Status.PENDING
    drop_claim(task)  # back in the pool for whichever runner comes next
    if task.pop("resubmitted", None) is not None:
        task["rebuilds"] = task.get("rebuilds", 0) + 1  # its unchanged resubmission was rejected too
    _fingerprint_rejection(plan, task, reason)
    task["reject_reason"] = reason
    task["verdict"] = Verdict.REJECTED
    return {"t": "reject", "id": task["id"], "reason": reason}


def set_aside_on(task: Record, reason: str, kill_reason: KillReason, kill_log: str | None) -> Record:
    """The loop gives up building the task as it is (killed, failed or rejected too often), on its
    record, in place: no rejection to fingerprint. The reject record to append after its line."""
    task["s"] = Status.PENDING
    drop_claim(task)  # back in the pool for whichever runner comes next
    task.pop("resubmitted", None)
    task["reject_reason"] = reason
    task["verdict"] = Verdict.KILLED
    tombstone = {"t": "reject", "id": task["id"], "reason": reason}
    task["kill_reason"] = tombstone["kill_reason"] = str(kill_reason)
    if kill_log:
        task["kill_log"] = kill_log
    return tombstone


def blocked_on(task: Record, reason: str) -> None:
    """The loop gives up on the task (attempts.block), on its record, in place: a person must
    split or rethink it."""
    task["s"] = Status.BLOCKED
    task["blocked_reason"] = reason
    task.pop("blocked_by", None)  # the loop's own block: no answer unblocks it
    drop_claim(task)


def _fingerprint_rejection(plan: PlanReader, task: Record, reason: str) -> None:
    """A rejection fingerprinted like a build failure (its reason with the task's id and its
    files' names taken out, numbers and the like too): the same as its last rejection, or as a
    failure of its ancestors, repeats it (families.note_repeat), and the loop asks a person
    instead of building it again."""
    earlier = plan.verify_reasons(task["id"])
    print_ = fingerprint(Verdict.REJECTED, reason, [task["id"], *(task.get("files") or [])])
    note_repeat(task, print_, task.get("rejection_fingerprint"), earlier[-1] if earlier else None, reason)
    task["rejection_fingerprint"] = print_


def _only_done_task(plan: PlanReader) -> str:
    done: list[str] = [task["id"] for task in plan.tasks() if is_done(task)]
    if not done:
        raise Refused("nothing to reject: no task is done")
    if len(done) > 1:
        raise InvalidInput(f"name the task to reject: {len(done)} tasks are done ({', '.join(done[:5])})")
    return done[0]


def delete(plan: PlanReader, task_id: str, force: bool = False) -> tuple[Record, list[str]]:
    """Remove a task. Tasks that depend on it inherit its children (tasks naming it as parent);
    with no children they are refused, unless `force` drops the dependency."""
    line = plan.task_line(task_id)
    children = [task["id"] for task in plan.tasks() if task.get("parent") == task_id]
    dependents = [other for other in plan.task_lines() if task_id in other.record.get("deps", [])]
    if dependents and not children and not force:
        names = ", ".join(other.record["id"] for other in dependents)
        raise Refused(
            f"{names} {'depends' if len(dependents) == 1 else 'depend'} on {task_id};"
            " decompose it first or use --force"
        )
    for other in dependents:
        deps = [dep for dep in other.record["deps"] if dep != task_id]
        other.record["deps"] = deps + [
            child for child in children if child not in deps and child != other.record["id"]
        ]
        plan.doc.rewrite(other)
    plan.doc.remove(line)
    return line.record, [other.record["id"] for other in dependents]


def prioritize(plan: PlanReader, spec: str | None = None) -> Record:
    in_scope = [
        line
        for line in plan.task_lines()
        if is_pending(line.record) and (spec is None or line.record.get("spec") in (spec, None))
    ]
    priorities = schedule.compute_priorities([line.record for line in in_scope])
    counts = {"prioritized": len(in_scope), "high": 0, "medium": 0, "low": 0, "changed": 0}
    for line in in_scope:
        task, priority = line.record, priorities[line.record["id"]]
        counts[priority] += 1
        if task.get("priority") != priority:
            task["priority"], task["auto_priority"] = priority, True
            plan.doc.rewrite(line)
            counts["changed"] += 1
    return counts
