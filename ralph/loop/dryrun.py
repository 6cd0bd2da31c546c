"""`ralph construct --dry-run`: what the next iteration would run, read from the plan alone: each
stage's items, the agent's argv, each prompt's size and first lines, the gate's argv, and the budget
in force; and every reason the real run would refuse to start (ralph/loop/preflight.py, the checks
the real run makes). It runs no agent or gate and writes nothing (no log, no plan change, no
commit, not even the validation cache in .git), and nothing from the repository: a make gate's
Makefile is read as text, as the real run reads it (ralph.loop.process.makefile), never given to make.
The preview is a typed value (Preview), which the command line prints as text or as JSON (to_json),
as it does `ralph status` and the run's report."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ralph.agents import make_adapter
from ralph.loop import preflight
from ralph.loop.runs import prompts, skills
from ralph.loop.runs.agent_process import LOG_DIR, AgentRunner, ralph_command
from ralph.loop.runs.prompts import one_line
from ralph.loop.stages import modules
from ralph.loop.stages import plan as stage_plan
from ralph.loop.stages.job import Job
from ralph.loop.stages.retries import run_model
from ralph.plan import stage_declarations
from ralph.plan.loader import load
from ralph.plan.plan import Plan
from ralph.plan.records import Stage
from ralph.plan.schedule import only_questions_left
from ralph.plan.stage_declarations import Place
from ralph.store.reader import PLAN_NAME, plan_path, read_bytes
from ralph.text import plural
from ralph.usecases.config_values import MODEL_STAGES
from ralph.usecases.settings import Settings

if TYPE_CHECKING:
    from ralph.agents.base import Adapter

PROMPT_LINES = 5  # of each prompt, shown
ARG_CHARS = 120  # of each argument shown (an adapter may pass the whole prompt as one)


@dataclass(frozen=True)
class FencePreview:
    """The fence the runs would get: --sandbox's mode, whether it is on, what the run would say,
    and bwrap's argv up to the agent's."""

    mode: str
    on: bool
    said: str
    argv: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "on": self.on, "said": self.said, "argv": self.argv}


@dataclass(frozen=True)
class RunPreview:
    """One agent run the iteration would start."""

    stage: str
    item: str | None
    model: str | None
    name: str
    argv: list[str]
    prompt_bytes: int
    prompt_head: list[str]
    gate: list[str] | None = None  # BUILD's: the gate that runs after it

    def to_json(self) -> dict[str, Any]:
        shown = {
            "stage": self.stage,
            "item": self.item,
            "model": self.model,
            "name": self.name,
            "argv": self.argv,
            "prompt_bytes": self.prompt_bytes,
            "prompt_head": self.prompt_head,
        }
        return shown | ({"gate": self.gate} if self.gate is not None else {})


@dataclass(frozen=True)
class Refusal:
    """A reason the real run would refuse to start, as the line it would print, and its exit code."""

    exit_code: int
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"exit_code": self.exit_code, "message": self.message}


@dataclass(frozen=True)
class Budget:
    """The limits in force."""

    max_iterations: int
    max_minutes: float | None
    max_cost_usd: float | None
    max_tokens: int | None
    max_attempts: int
    timeout_s: float
    gate_timeout_s: float
    parallel: int
    max_decompose_depth: int
    max_rebuilds: int
    max_agent_failures: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # the fields in their order


@dataclass(frozen=True)
class Preview:
    """What `construct --dry-run` prints (as JSON with --json; docs/json-output.md); the command
    line renders it."""

    spec: str
    iteration: int
    runs: list[RunPreview]
    notes: list[str]
    gate: list[str]
    sandbox: FencePreview
    models: dict[str, str | None]  # each stage's (None: the agent CLI's default)
    escalations: dict[str, list[str]]  # each stage given more than one model: its models in order
    budget: Budget
    refusals: list[Refusal] = field(default_factory=list)  # added by preview()
    origins: dict[str, str] = field(default_factory=dict)  # added by the command line: each setting's source

    def to_json(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "iteration": self.iteration,
            "runs": [run.to_json() for run in self.runs],
            "notes": self.notes,
            "gate": self.gate,
            "sandbox": self.sandbox.to_json(),
            "models": self.models,
            "escalations": self.escalations,
            "budget": self.budget.to_json(),
            "refusals": [refusal.to_json() for refusal in self.refusals],
            "origins": self.origins,
        }


def preview(root: Path, settings: Settings) -> Preview:
    """The next iteration's runs, and the settings in force, as plain data."""
    plan = Plan(load(read_bytes(root), PLAN_NAME)) if plan_path(root).exists() else None
    runner = AgentRunner(
        root, settings, make_adapter(settings.agent, settings.agent_cmd, settings.model, settings.agent_args),
        None, None, None,  # type: ignore[arg-type]  # a runner that runs nothing: argv and prompts only
    )  # fmt: skip
    result = _preview(root, settings, plan, runner)
    # What the real run would refuse to start for: the checks it makes itself, each listed.
    problems = preflight.all_problems(root, settings, runner, needs_gate=True)
    return replace(result, refusals=[Refusal(problem.exit_code, str(problem)) for problem in problems])


def _preview(root: Path, settings: Settings, plan: Plan | None, runner: AgentRunner) -> Preview:
    """The runs each stage's `jobs` lists for the plan as it is: the same functions the run takes
    its items and prompts from, for each stage declared to show in a dry run, in its place."""
    spec = settings.spec
    iteration = plan.iteration() + 1 if plan else 1
    notes: list[str] = []
    fence = _sandbox(root, settings, runner.adapter)
    if plan is None or stage_plan.needed(plan, spec):
        notes.append(
            "the spec is not planned yet: PLAN runs first" + ("" if plan else " (after `ralph init`)")
        )
        runs = [_run(runner, job, iteration) for job in _jobs(Place.BEFORE, plan, settings, root)]
        return _result(settings, iteration, runs, notes, fence)
    records = [task.record for task in plan.task_views(spec)]
    issues = plan.issues(spec)
    questions = plan.questions(spec)
    if not records and not issues:  # every task accepted: the spec check, unless one found it met as it is
        checks = _jobs(Place.AFTER, plan, settings, root)
        notes.append(_after_note({job.stage for job in checks}))
        return _result(settings, iteration, [_run(runner, job, iteration) for job in checks], notes, fence)
    if only_questions_left(records, issues, questions):
        notes.append(
            f"the run would end WAITING: {plural(len(questions), 'question')} to answer (`ralph questions`)"
        )
    jobs = _jobs(Place.ITERATION, plan, settings, root)
    runs = [_run(runner, job, iteration) for job in jobs]
    if any(job.stage is Stage.BUILD for job in jobs):
        notes.append("BUILD also takes the tasks these builds unblock; VERIFY then checks each task built")
    for question in questions:
        notes.append(f"{question['id']} holds {question.get('task')}: {one_line(question['text'])[:100]}")
    return _result(settings, iteration, runs, notes, fence)


def _jobs(place: Place, plan: Plan | None, settings: Settings, root: Path) -> list[Job]:
    """The jobs of the stages in `place` that a dry run shows, each stage once, in the order they
    first run (an iteration's order for Place.ITERATION)."""
    placed = stage_declarations.iteration() if place is Place.ITERATION else stage_declarations.STAGES
    shown = [declared for declared in placed if declared.place is place and declared.dry_run]
    return [job for declared in dict.fromkeys(shown) for job in modules.jobs(declared, plan, settings, root)]


def _after_note(stages: set[Stage]) -> str:
    """What the preview says of the stages after the iterations it lists."""
    if Stage.CHECK in stages:
        review = " and the review by aspect (REVIEW, one run per aspect, after it) finds nothing"
        return (
            "every task is accepted: the spec check (CHECK) runs; the run ends COMPLETE if it adds nothing"
            + (review if Stage.REVIEW in stages else "")
        )
    if Stage.REVIEW in stages:
        return (
            "every task is accepted and the spec was checked: what the review found is reviewed once more"
            " (REVIEW, one run per aspect); the run ends COMPLETE if it finds nothing"
        )
    return "nothing to do, and a spec check found this spec and code met: the run would end COMPLETE"


def _sandbox(root: Path, settings: Settings, adapter: Adapter) -> FencePreview:
    """What fence the runs would get: its mode, whether it is on, the line the run would say, and
    the bwrap argv an agent in the repository's work tree would be started with (up to `--`)."""
    from ralph.loop.process import sandbox

    try:
        logs = (root / LOG_DIR,)
        fence, said = sandbox.make(settings.sandbox, root, adapter.state_paths, settings.sandbox_hide, logs)
    except sandbox.SandboxUnavailable as exc:
        return FencePreview(settings.sandbox, False, f"the run would refuse to start: {exc}", [])
    if fence is None:
        return FencePreview(settings.sandbox, False, said, [])
    try:
        import os

        argv = fence.wrap([], root, dict(os.environ))
    finally:
        fence.close()
    return FencePreview(settings.sandbox, True, said, argv)


def _run(runner: AgentRunner, job: Job, iteration: int) -> RunPreview:
    root = runner.root
    values = {
        "root": root,
        "spec": runner.settings.spec,
        "ralph": ralph_command(),
        "project_rules": prompts.project_rules(root),
        "skills": skills.prompt_section(skills.in_work_tree(root)[0], prompts.task_type_of(job.values)),
        "type_guidance": prompts.type_section(root, str(job.stage), prompts.task_type_of(job.values)),
        **job.values,
    }
    prompt = prompts.render(root, str(job.stage), values)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"ralph-{stamp}-{str(job.stage).lower()}" + (f"-{job.item}" if job.item else "") + ".prompt.md"
    prompt_file = root / LOG_DIR / name
    model = run_model(runner.settings, job.stage, job.record or None)  # a rebuild's: a step further
    env = runner.env(str(job.stage), iteration, job.item, prompt_file, model=model)
    argv = runner.adapter.invocation(prompt, str(prompt_file), env, model).argv
    return RunPreview(
        stage=str(job.stage),
        item=job.item,
        model=model,
        name=one_line(job.label)[:100],
        argv=[arg if len(arg) <= ARG_CHARS else arg[:ARG_CHARS] + "..." for arg in argv],
        prompt_bytes=len(prompt.encode("utf-8")),
        prompt_head=prompt.splitlines()[:PROMPT_LINES],
        gate=job.gate,
    )


def _result(
    settings: Settings, iteration: int, runs: list[RunPreview], notes: list[str], fence: FencePreview
) -> Preview:
    return Preview(
        spec=settings.spec,
        iteration=iteration,
        runs=runs,
        notes=notes,
        gate=list(settings.gate),
        sandbox=fence,
        # Each stage's model (--stage-model, else --model; None: the agent CLI's default), and the
        # stages given an escalation, its models in order (a task's BUILD after failures).
        models={stage: settings.model_for(stage) for stage in MODEL_STAGES},
        escalations={
            stage: list(models) for stage, models in (settings.stage_models or {}).items() if len(models) > 1
        },
        budget=Budget(
            max_iterations=settings.max_iterations,
            max_minutes=settings.max_minutes,
            max_cost_usd=settings.max_cost_usd,
            max_tokens=settings.max_tokens,
            max_attempts=settings.max_attempts,
            timeout_s=settings.timeout_s,
            gate_timeout_s=settings.gate_timeout_s,
            parallel=settings.parallel,
            max_decompose_depth=settings.max_decompose_depth,
            max_rebuilds=settings.max_rebuilds,
            max_agent_failures=settings.max_agent_failures,
        ),
    )
