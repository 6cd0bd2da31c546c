"""The read commands: what the plan holds, for people and for scripts. They take no lock: writers
replace plan.jsonl atomically, so a read sees one whole version."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ralph.errors import Problem, Refused
from ralph.plan.document import Document, Record
from ralph.plan.plan import Plan
from ralph.plan.records import Stage, Status, TaskView, awaits_recheck
from ralph.store.reader import PLAN_NAME, read_bytes, read_plan

if TYPE_CHECKING:
    from ralph.usecases.runs import RunStatus


# Typed results, as NamedTuples: `dataclasses` would cost every read command ~1.5 ms to import.
class Waiting(NamedTuple):
    """What the loop gave up on and a person must decide: a blocked task or an issue kept open."""

    id: str
    why: str | None


class Draft(NamedTuple):
    """A task whose unfinished work is kept on a branch of its own (ralph.store.drafts)."""

    task: str
    branch: str


class NextTask(NamedTuple):
    id: str
    name: str


class StageSpending(NamedTuple):
    """What a stage's agent runs spent. cost_usd None: no run's cost is known (unknown, never 0)."""

    runs: int
    tokens: int
    cost_usd: float | None
    unknown_cost_runs: int


class TaskSpending(NamedTuple):
    """What an open task's BUILD attempts spent."""

    tokens: int
    cost_usd: float | None
    unknown_cost_runs: int


class Spending(NamedTuple):
    """Tokens and cost so far, in all, per stage and per open task."""

    runs: int
    tokens: int
    cost_usd: float | None
    unknown_cost_runs: int
    by_stage: dict[str, StageSpending]
    by_task: dict[str, TaskSpending]

    def to_json(self) -> dict[str, Any]:
        return {
            **self._asdict(),
            "by_stage": {stage: row._asdict() for stage, row in self.by_stage.items()},
            "by_task": {task: row._asdict() for task, row in self.by_task.items()},
        }


class StatusSummary(NamedTuple):
    """What `ralph status` says: the run, the stage, the counts, what waits, the next task."""

    run: RunStatus  # a construct running now, or how the last one ended
    stage: Stage
    planned: bool  # any task, issue or accepted task yet
    iteration: int
    spec: str | None
    pending: int
    done: int
    accepted: int
    issues: int
    kept_open: int
    killed: int
    blocked: int
    next: NextTask | None
    waiting: tuple[Waiting, ...]
    questions: int
    drafts: tuple[Draft, ...]
    spent: Spending

    def to_json(self) -> dict[str, Any]:
        return {
            **self._asdict(),
            "run": self.run.to_json(),
            "next": self.next._asdict() if self.next else None,
            "waiting": [item._asdict() for item in self.waiting],
            "drafts": [draft._asdict() for draft in self.drafts],
            "spent": self.spent.to_json(),
        }


def status(root: Path) -> StatusSummary:
    plan = read_plan(root)
    tasks = plan.task_views()
    next_task = plan.next_task()
    issues = plan.issues()
    # What the loop gave up on, each with its reason: a person must decide.
    waiting = [Waiting(task.id, task.why_not_done) for task in tasks if task.blocked] + [
        Waiting(issue["id"], f"kept open: {issue['keep_open']}")
        for issue in issues
        if issue.get("keep_open") and not awaits_recheck(issue)  # that one waits for the spec check
    ]
    from ralph.usecases.runs import run_status  # only status asks about runs

    run = run_status(root)
    stage = current_stage(plan, root)
    if run.active and run.stage == Stage.PLAN:
        stage = Stage.PLAN  # a run planning now
    return StatusSummary(
        run=run,
        stage=stage,
        planned=bool(tasks or issues or plan.accepted()),
        iteration=plan.iteration(),
        spec=plan.state().get("spec"),
        pending=sum(1 for task in tasks if task.status is Status.PENDING),
        done=sum(1 for task in tasks if task.status is Status.DONE),
        accepted=len(plan.accepted()),
        issues=len(issues),
        kept_open=sum(1 for issue in issues if issue.get("keep_open")),
        killed=sum(1 for task in tasks if task.killed),
        blocked=sum(1 for task in tasks if task.blocked),
        next=NextTask(next_task["id"], next_task["name"]) if next_task else None,
        waiting=tuple(waiting),
        questions=len(plan.questions()),
        drafts=tuple(Draft(task.id, task.record["draft"]) for task in tasks if task.record.get("draft")),
        spent=spending(plan.state().get("spent", {}), tasks),
    )


def spending(by_stage: dict[str, Any], tasks: list[TaskView]) -> Spending:
    """Tokens and cost so far: per stage from the state record (every agent run the loop made,
    accepted tasks' included), per task from the open tasks' own records (BUILD attempts). A cost
    is None where no run's cost is known: unknown, never 0."""
    stages = {
        stage: StageSpending(
            runs=row.get("runs", 0),
            tokens=row.get("tokens", 0),
            cost_usd=_known(row.get("cost_usd", 0.0), row.get("runs", 0) - row.get("unknown_runs", 0)),
            unknown_cost_runs=row.get("unknown_runs", 0),
        )
        for stage, row in by_stage.items()
    }
    by_task = {
        task.id: TaskSpending(
            tokens=task.record.get("tokens", 0),
            cost_usd=task.record.get("cost_usd"),
            unknown_cost_runs=task.record.get("unknown_cost_runs", 0),
        )
        for task in tasks
        if task.record.get("tokens") or "cost_usd" in task.record or task.record.get("unknown_cost_runs")
    }
    known = [row.cost_usd for row in stages.values() if row.cost_usd is not None]
    return Spending(
        runs=sum(row.runs for row in stages.values()),
        tokens=sum(row.tokens for row in stages.values()),
        cost_usd=round(sum(known), 6) if known or not stages else None,
        unknown_cost_runs=sum(row.unknown_cost_runs for row in stages.values()),
        by_stage=stages,
        by_task=by_task,
    )


def _known(cost_usd: float, known_runs: int) -> float | None:
    return round(cost_usd, 6) if known_runs > 0 else None


def tasks(root: Path, status: Status | None = None) -> list[Record]:
    return [task.record for task in read_plan(root).task_views() if status in (None, task.status)]


def task(root: Path, task_id: str) -> Record:
    return read_plan(root).task_line(task_id).record


def issues(root: Path) -> list[Record]:
    return read_plan(root).issues()


def next_task(root: Path) -> Record:
    """The next task to build; when none is ready, the refusal says what happens next instead."""
    plan = read_plan(root)
    found = plan.next_task()
    if found is None:
        stage, said = next_action(plan, root)
        raise Refused(f"no pending task is ready; next: {stage}: {said}")
    return found


def next_action(plan: Plan, root: Path) -> tuple[str, str]:
    """What the loop (or a person) does next when no task is ready to build, by the plan's stage:
    the stage, and the step in words naming its item."""
    tasks, issues = plan.task_views(), plan.issues()
    stage = current_stage(plan, root)
    if stage is Stage.PLAN:
        return str(Stage.PLAN), "`ralph construct SPEC` turns a spec into tasks"
    if stage is Stage.DECOMPOSE:
        task = next(task for task in tasks if task.killed)
        return str(stage), f"split {task.id} ({task.name}), set aside: {task.kill_reason}"
    if stage is Stage.INVESTIGATE:
        issue = next(issue for issue in issues if not issue.get("keep_open"))
        return str(stage), f"turn issue {issue['id']} into tasks, or resolve it ({_short(issue['text'])})"
    if stage is Stage.WAITING:
        question = plan.questions()[0]
        return "a person", f"answers question {question['id']} (`ralph answer {question['id']} TEXT`)"
    done = [task for task in tasks if task.done]
    if done:  # VERIFY, or BUILD whose pending tasks wait for a done one's verdict
        more = f" (and {len(done) - 1} more done)" if len(done) > 1 else ""
        return str(Stage.VERIFY), f"accept or reject {done[0].id} ({done[0].name}){more}"
    if stage is Stage.CHECK:
        return str(stage), "every task is accepted: `ralph construct` checks the spec, then ends COMPLETE"
    if stage is Stage.COMPLETE and not plan.state().get("spec"):
        return str(stage), "every task is accepted; `ralph construct SPEC` checks a spec against the code"
    if stage is Stage.COMPLETE:
        return str(stage), (
            "every task is accepted and a spec check found nothing missing in this spec and code:"
            " `ralph construct` ends COMPLETE without another run"
        )
    held = [task.id for task in tasks if task.blocked]
    held += [issue["id"] for issue in issues if issue.get("keep_open") and not awaits_recheck(issue)]
    return "a person", f"decides on {', '.join(held[:5])}: blocked or kept open (`ralph status` says why)"


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 60 else line[:57] + "..."


def stage(root: Path) -> str:
    return str(current_stage(read_plan(root), root))


def current_stage(plan: Plan, root: Path) -> Stage:
    """The plan's stage as a person or a script reads it, as `ralph construct` would go on: PLAN
    where nothing of the spec the last run named (of any spec, when none is named) was planned
    yet; with every task accepted, CHECK until a spec check found that spec met with this code
    (ralph.usecases.spec_checks), then COMPLETE. The plan's own stage says COMPLETE for a plan with
    nothing in it, as for one with everything accepted."""
    stage = plan.stage()
    if stage is not Stage.COMPLETE:
        return stage
    spec = plan.state().get("spec")
    if not (plan.planned(spec) if spec else plan.accepted()):
        return Stage.PLAN
    from ralph.usecases import spec_checks  # git is asked only here: a plan with everything accepted

    if spec and not spec_checks.met(root, plan, spec):
        return Stage.CHECK
    return stage


def iteration(root: Path) -> int:
    return read_plan(root).iteration()


class CheckResult:
    """What `ralph check` found. A plain class: importing dataclasses costs a read command ~1.5 ms."""

    __slots__ = ("records", "problems", "lines")

    def __init__(self, records: int, problems: list[Problem], lines: list[bytes] | None = None):
        self.records, self.problems, self.lines = records, problems, lines or []

    def problem_objects(self) -> list[dict[str, Any]]:
        """Each problem as {file, line, message, record_id}, record_id when its line names one."""
        return [
            {
                "file": p.path,
                "line": p.line or None,
                "message": p.message,
                "record_id": self._record_id(p.line),
            }
            for p in self.problems
        ]

    def _record_id(self, line: int) -> str | None:
        import json

        if not 0 < line <= len(self.lines):
            return None
        try:
            record = json.loads(self.lines[line - 1])
        except (ValueError, RecursionError):
            return None
        found = record.get("id") if isinstance(record, dict) else None
        return found if isinstance(found, str) else None


def check(root: Path, staged: bool = False) -> CheckResult:
    """Every problem in plan.jsonl, not only the first (the strict loader stops at one). `staged`:
    in the version git's index holds, which a commit would record, not the file on disk."""
    from ralph.plan.loader import parse

    data = _staged_plan(root) if staged else read_bytes(root)
    doc, problems = parse(data, PLAN_NAME)
    problems += _config_problems(doc, root)
    if not staged and _unmerged(root):  # its text may be valid (conflict markers taken out by hand)
        problems.append(Problem(PLAN_NAME, 0, UNMERGED))
    return CheckResult(len(doc.records()), problems, data.split(b"\n") if problems else None)


def _config_problems(doc: Document, root: Path) -> list[Problem]:
    """What the config record sets that no run could take, though its form is valid: a
    `sandbox_hide` that would hide `/`, $HOME or the work tree (a hand edit `ralph config set`
    would have refused)."""
    from ralph.usecases.sandbox_hide import hide_problem

    found = []
    for line in doc.records():
        patterns = line.record.get("sandbox_hide") if line.record.get("t") == "config" else None
        if isinstance(patterns, list) and all(isinstance(p, str) for p in patterns):
            problem = hide_problem(patterns, root)
            if problem:
                found.append(Problem(PLAN_NAME, line.number, problem))
    return found


UNMERGED = (
    f"git lists {PLAN_NAME} as unmerged (a merge conflict not yet resolved): once it is right,"
    f" `git add {PLAN_NAME}`"
)


def _unmerged(root: Path) -> bool:
    from ralph.errors import GitError
    from ralph.store.git import Repo

    try:
        return Repo(root).changes.unmerged(PLAN_NAME)
    except GitError:  # no index to ask (not a git work tree): nothing is unmerged
        return False


def _staged_plan(root: Path) -> bytes:
    from ralph.store.git import Repo

    data = Repo(root).changes.staged_file(PLAN_NAME)
    if data is None:
        raise Refused(
            f"no staged {PLAN_NAME}: git's index has no merged version of it (`git add {PLAN_NAME}`)"
        )
    return data
