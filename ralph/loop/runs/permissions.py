"""What each stage's agent may do, checked after every run from what actually changed: HEAD and
the branch, the work tree, and plan.jsonl's records before and after. The prompt asks; this checks.

What each stage may change is declared with the stage (ralph.plan.stage_declarations: its `may`
and `plan_only`; docs/agent-contract.md's table is generated from them). Besides:

  every stage        never commits, moves HEAD or switches branch, never changes ralph's config
                     (its gate, hooks and agent command run outside the agents' sandbox), never
                     changes a submodule's `.git` link or its git directory
  BUILD              never changes what judges it (the rules files, .ralph/, the spec) unless its
                     task's scope names them (ralph.loop.runs.judged)

A change to code during a plan-only stage's run is its agent's unless the run's fence rules that
out (ralph.loop.process.sandbox.Fence; ralph.loop.stages.retries.AgentRuns._leave_persons_code says why).
"""

from __future__ import annotations

from dataclasses import dataclass

from ralph.plan.plan import Plan
from ralph.plan.records import Stage, status_of
from ralph.plan.stage_declarations import BY_NAME, LOOP_STAGES, Change, stages_that
from ralph.store.gitlinks import Link, changed_links
from ralph.store.reader import PLAN_NAME as PLAN_FILE

# Each set from the stages' declarations (ralph.plan.stage_declarations).
CODE_STAGES = stages_that(Change.CODE)
# Stages whose agents run in the loop's own work tree and change only plan.jsonl there: with the
# sandbox they see that tree read-only but for the plan (ralph.loop.process.sandbox.Fence). VERIFY's agents
# run in checkouts of their own, where any change is theirs (ralph.loop.stages.verify).
PLAN_ONLY_STAGES = frozenset(stage for stage in LOOP_STAGES if BY_NAME[stage].plan_only)
ACCEPT_STAGES = stages_that(Change.VERDICT)  # may accept or reject their own task
STATUS_STAGES = stages_that(Change.OWN_STATUS)  # may change their own task's status
REMOVE_OWN_STAGES = stages_that(Change.REMOVE_OWN)  # may remove their own task line
ADD_TASK_STAGES = stages_that(Change.ADD_TASKS)
ASK_STAGES = stages_that(Change.ASK)  # may ask a person about their own task, which blocks it


@dataclass(frozen=True)
class Snapshot:
    head: str | None
    branch: str | None
    dirty: frozenset[str]  # paths changed against HEAD (the user's excluded)
    beside_at: int = 0  # where a person's changes made from then on are written down (ralph.store.beside)
    listed: frozenset[str] = frozenset()  # every path git listed as changed, the user's too
    # Each submodule's `.git` link as it is (ralph.store.gitlinks): git follows it, and runs the
    # config of the repository it leads to, at the person's next `git status`.
    links: frozenset[Link] = frozenset()
    # Which of those links are the `.git` folders of nested repositories (no submodule's).
    nested: frozenset[str] = frozenset()


def violations(
    stage: Stage,
    own: set[str],
    before: Snapshot,
    after: Snapshot,
    old: Plan,
    new: Plan,
    guarded: tuple[str, ...] = (),
) -> list[str]:
    """Everything the run did that its stage may not do, in words (empty when it kept the rules).
    `own`: the task(s) the run was about (VERIFY's parallel runs are checked together, as a batch).
    `guarded`: the path patterns of what judges the build (ralph.loop.runs.judged), which a BUILD
    changes only where its task's scope names them."""
    found = []
    if after.head != before.head:
        found.append(f"moved HEAD ({_short(before.head)} -> {_short(after.head)}): agents never commit")
    if after.branch != before.branch:
        found.append(f"switched branch ({before.branch} -> {after.branch})")
    moved = changed_links(before.links, after.links)
    linked = [path for path in moved if path not in before.nested]
    if linked:
        found.append(f"changed the git link of submodule {', '.join(linked)}: git's own, never an agent's")
    nested = [path for path in moved if path in before.nested]
    if nested:
        found.append(
            f"changed the git directory of nested repository {', '.join(nested)}: git's own, never an agent's"
        )
    code = sorted((after.dirty ^ before.dirty) - {PLAN_FILE})
    if code and stage not in CODE_STAGES:
        found.append(f"changed code in {stage}: {', '.join(code[:5])}" + (" ..." if len(code) > 5 else ""))
    elif code and guarded:
        found += _judges_changed(stage, own, code, old, guarded)
    return found + _plan_violations(stage, own, old, new)


def _judges_changed(
    stage: Stage, own: set[str], code: list[str], old: Plan, guarded: tuple[str, ...]
) -> list[str]:
    from ralph.loop.runs.judged import guarded_changes

    scopes = [task.get("scope") or [] for task in old.tasks() if task["id"] in own]
    changed = guarded_changes(code, guarded, scopes)
    if not changed:
        return []
    shown = ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
    return [f"changed what judges the build in {stage} (its task's scope does not name it): {shown}"]


def _plan_violations(stage: Stage, own: set[str], old: Plan, new: Plan) -> list[str]:
    found = []
    accepted = sorted(new.accepted() - old.accepted())
    rejected = sorted(_rejects(new) - _rejects(old))
    verdicts = {task_id for task_id, _ in rejected} | set(accepted)
    if verdicts and (stage not in ACCEPT_STAGES or verdicts - own):
        found.append(f"gave a verdict in {stage} on {', '.join(sorted(verdicts))}")
    old_tasks = {task["id"]: task for task in old.tasks()}
    new_tasks = {task["id"]: task for task in new.tasks()}
    for task_id, task in old_tasks.items():
        if task_id not in new_tasks:
            removable = task_id in own and stage in REMOVE_OWN_STAGES
            if task_id not in accepted and not removable:
                found.append(f"removed task {task_id} in {stage}")
        elif status_of(task) != status_of(new_tasks[task_id]) and not (
            task_id in own and stage in STATUS_STAGES
        ):
            found.append(f"changed the status of task {task_id} in {stage}")
    added = sorted(set(new_tasks) - set(old_tasks))
    if added and stage not in ADD_TASK_STAGES:
        found.append(f"added tasks in {stage}: {', '.join(added[:5])}")
    return found + _question_violations(stage, own, old, new) + _config_violations(stage, old, new)


def _config_violations(stage: Stage, old: Plan, new: Plan) -> list[str]:
    """No agent changes the config record: its gate and hooks are commands ralph runs itself, and
    a config an agent wrote would be committed with its work and run on every later build."""
    before, after = [line.record for line in old.of("config")], [line.record for line in new.of("config")]
    if before == after:
        return []
    was, now = (records[0] if records else {} for records in (before, after))
    keys = sorted(key for key in set(was) | set(now) - {"t"} if was.get(key) != now.get(key)) or ["config"]
    return [f"changed ralph's config in {stage}: {', '.join(keys)}"]


def _question_violations(stage: Stage, own: set[str], old: Plan, new: Plan) -> list[str]:
    """BUILD may ask a person about its own task (`ralph ask`); no agent answers a question."""
    found = []
    known = {question["id"] for question in old.questions() + old.questions(answered=True)}
    for question in new.questions():
        if question["id"] not in known and (stage not in ASK_STAGES or question.get("task") not in own):
            found.append(f"asked {question['id']} about {question.get('task')} in {stage}")
    still_open = {question["id"] for question in new.questions()}
    answered = sorted(q["id"] for q in old.questions() if q["id"] not in still_open)
    if answered:
        found.append(
            f"answered or removed {'question' if len(answered) == 1 else 'questions'} in {stage}:"
            f" {', '.join(answered)} (a person answers)"
        )
    return found


def _rejects(plan: Plan) -> set[tuple[str, int]]:
    """Reject records as (task id, occurrence), so a second rejection of one task counts as new."""
    seen: dict[str, int] = {}
    for line in plan.of("reject"):
        seen[line.record["id"]] = seen.get(line.record["id"], 0) + 1
    return {(task_id, n) for task_id, count in seen.items() for n in range(count)}


def _short(sha: str | None) -> str:
    return sha[:8] if sha else "none"
