"""What `ralph construct` refuses to start for, checked in one place: the real run raises the first
problem where it meets it, and `--dry-run` lists them all, so the two cannot drift apart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ralph.agents.base import Adapter
from ralph.errors import Busy, InvalidInput, RalphError, Refused, RemoteOffline
from ralph.loop.process.gate import gate_problem
from ralph.loop.runs.agent_process import AgentRunner, AgentUnavailable
from ralph.loop.tree.plan_access import PLAN_FILE
from ralph.loop.tree.work_tree import BUILD_BRANCH_PREFIX
from ralph.store.drafts import DRAFT_PREFIX
from ralph.store.git import Repo
from ralph.store.lock import RALPH_FILES
from ralph.store.remote import configured
from ralph.usecases.config_values import MODEL_STAGES
from ralph.usecases.sandbox_hide import hide_problem
from ralph.usecases.settings import Settings


def agent_problem(runner: AgentRunner) -> AgentUnavailable | None:
    """The agent's program is missing (checked first: the run ends AGENT_UNAVAILABLE, exit 6)."""
    try:
        runner.require_program()
    except AgentUnavailable as exc:
        return exc
    return None


def start_problems(
    root: Path, settings: Settings, needs_gate: bool, adapter: Adapter
) -> Iterator[RalphError]:
    """What stops the run before it changes anything, in the order the run checks it. A generator:
    the real run stops at the first, before the later checks (the gate's Makefile read) run."""
    if not (root / settings.spec).is_file():
        yield InvalidInput(f"no spec file {settings.spec}")
    elif settings.spec_check:  # before PLAN turns an unfinished spec into paid work
        from ralph.usecases.spec_lint import spec_refusal

        unready = spec_refusal(root, settings.spec)
        if unready:
            yield unready
    unbounded = budget_problem(settings, adapter)
    if unbounded:
        yield unbounded
    hidden = hide_problem(settings.sandbox_hide, root)
    if hidden:  # every run would see an empty folder where it needs one (its program, its tree)
        yield InvalidInput(hidden)
    repo = Repo(root)
    operation = repo.state.operation_in_progress()
    if operation:
        yield Refused(f"{operation}: finish or abort it before running ralph construct")
    delegated = repo.config.files_in_work_tree()
    if delegated:
        yield Refused(
            f"git's config reads {', '.join(delegated)}, a file in the work tree, which agents write"
            " (an include): its settings could make git run an agent's program; move it out of the"
            " repository (or drop the include.path that names it) before running ralph construct"
        )
    from ralph.store.drivers import drivers_in_work_tree

    drivers = drivers_in_work_tree(repo)
    if drivers:
        yield Refused(
            f"git's config names a driver that runs a file of the work tree, which agents write:"
            f" {'; '.join(drivers)}; ralph's own git calls (add, status, checkout, merges) would run"
            " an agent's rewrite outside the fence: name a program outside the repository (python:"
            " add -P before -m), or remove the driver, before running ralph construct"
        )
    from ralph.loop.process.commit_hook import start_refusal

    unpinned = start_refusal(repo, settings.run_hooks)
    if unpinned:
        yield Refused(unpinned)
    if repo.head() is not None and repo.branch() is None:
        yield Refused("HEAD is detached: check out a branch for ralph construct to commit on")
    blocking = blocking_branch(repo)
    if blocking:
        yield Refused(
            f"a branch named '{blocking}' blocks the branches ralph makes under {blocking}/ (git cannot"
            f" have both); rename yours: git branch -m {blocking} {blocking.replace('/', '-')}-mine"
        )
    if settings.remote and not configured(repo, settings.remote):  # before the run's first commit
        yield RemoteOffline(
            f"no git remote named {settings.remote!r} in this clone ('git remote -v' lists them):"
            f" add it with 'git remote add {settings.remote} URL', or name another with --remote"
        )
    problem = gate_problem(settings.gate, root) if needs_gate else None
    if problem:
        yield Refused(f"{problem}; set --gate (or the config's gate), or --gate '' for none")


def _every_model(settings: Settings) -> dict[str, str | None]:
    """Each stage's model, and each later step of a stage's escalation (`BUILD step 2`): a run of
    any of them may come."""
    models: dict[str, str | None] = {}
    for stage in MODEL_STAGES:
        steps = len((settings.stage_models or {}).get(str(stage)) or [None])
        for step in range(steps):
            models[f"{stage} step {step + 1}" if step else str(stage)] = settings.model_for(stage, step)
    return models


def budget_problem(settings: Settings, adapter: Adapter) -> Refused | None:
    """--max-cost that ralph can tell cannot be held: an agent CLI that never reports a cost, and a
    stage's model with no known price (or none named: the CLI's default, which ralph cannot price).
    A token budget bounds the run instead; a command of yours may report a cost (judged per run)."""
    if settings.max_cost_usd is None or settings.max_tokens is not None or adapter.reports_cost is not False:
        return None
    from ralph.loop.runs.cost import unpriced_models

    unpriced = unpriced_models(_every_model(settings), settings.prices)
    if not unpriced:
        return None
    shown = ", ".join(_model_and_stages(model, stages) for model, stages in unpriced.items())
    fixes = []
    named = [model for model in unpriced if model]
    if named:
        example = f'{{"{named[0]}": {{"input": USD, "output": USD}}}}'
        fixes.append(f"give its price (per million tokens): ralph config set prices '{example}'")
    if None in unpriced:
        fixes.append("name a model ralph knows the price of (--model, --stage-model)")
    return Refused(
        f"--max-cost cannot be held: {adapter.name} reports no cost and ralph knows no price for {shown};"
        f" {', '.join(fixes)}, or bound the run with --max-tokens"
    )


def _model_and_stages(model: str | None, stages: list[str]) -> str:
    """ "model gpt-x (BUILD, VERIFY)", or "the CLI's default model" for stages that name none;
    without the stages when it is every stage's."""
    what = f"model {model}" if model else "the CLI's default model (none named)"
    return what if len(stages) == len(MODEL_STAGES) else f"{what} ({', '.join(stages)})"


def blocking_branch(repo: Repo) -> str | None:
    """A branch named like a folder of ralph's branches (`ralph`, `ralph/draft`): git keeps a
    branch as a file where those need a folder, so every build branch or draft would fail."""
    folders = (BUILD_BRANCH_PREFIX.rstrip("/"), DRAFT_PREFIX.rstrip("/"))
    listed = repo.git("for-each-ref", "--format=%(refname)", *(f"refs/heads/{f}" for f in folders))
    branches = {line.removeprefix("refs/heads/") for line in listed.splitlines()}
    return next((folder for folder in folders if folder in branches), None)


def dirty_paths(root: Path) -> set[str]:
    """The user's uncommitted changes: what a run without --allow-dirty refuses to start with.
    Read only: a dry run leaves .git/index byte for byte as it was."""
    changed = Repo(root).changes.paths(read_only=True) - {PLAN_FILE}
    return {path for path in changed if not RALPH_FILES.fullmatch(path)}


def dirty_problem(dirty: set[str], settings: Settings) -> Refused | None:
    if not dirty or settings.allow_dirty:
        return None
    shown = ", ".join(sorted(dirty)[:5]) + (f" (+{len(dirty) - 5} more)" if len(dirty) > 5 else "")
    return Refused(f"uncommitted changes: {shown}; commit or stash them, or pass --allow-dirty")


def running_problem(root: Path) -> Busy | None:
    """Another construct holds this repository (the real run finds out when it takes the lock)."""
    from ralph.usecases.runs import holder

    found = holder(root)
    if found is None:
        return None
    since = f", since {found['since']}" if found.get("since") else ""
    return Busy(f"another ralph construct is running in this repository (pid {found['pid']}{since})")


def all_problems(root: Path, settings: Settings, runner: AgentRunner, needs_gate: bool) -> list[RalphError]:
    """Every reason the real run would refuse to start, for --dry-run."""
    found: list[RalphError | None] = [agent_problem(runner), running_problem(root)]
    found += start_problems(root, settings, needs_gate, runner.adapter)
    found.append(dirty_problem(dirty_paths(root), settings))
    return [problem for problem in found if problem is not None]
