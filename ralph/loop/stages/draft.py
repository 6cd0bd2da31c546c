"""DRAFT: one agent run that turns a person's idea into a spec draft (`ralph spec draft`).

It runs as PLAN's agent does: through the stage's adapter, under the supervisor (a signal stops it
and every child it started), its log and transcript under build/ralph-logs/, and inside the
sandbox of a plan-only stage: the work tree read-only but for plan.jsonl (its `ralph ask`
questions) and, here, the draft's own folder. What it leaves is checked by ralph.loop.spec_drafts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ralph.agents.base import Adapter
from ralph.loop.observe.console import Console
from ralph.loop.observe.journal import Journal
from ralph.loop.process.sandbox import Sandbox
from ralph.loop.process.supervisor import Supervisor
from ralph.loop.runs.agent_process import LOG_DIR, AgentResult, AgentRunner
from ralph.loop.runs.prompts import data_block
from ralph.plan.document import Record
from ralph.usecases.settings import Settings

STAGE = "DRAFT"  # its prompt is templates/draft.md, overridable in .ralph/prompts/draft.md


@dataclass(frozen=True)
class DraftRequest:
    """What one drafting run is given: the draft's name and file, the person's idea, the
    questions answered so far, and (a revision) the person's feedback on the draft in the file."""

    name: str
    draft_file: Path  # absolute
    idea: str
    answered: Sequence[Record] = ()
    feedback: str | None = None
    revising: bool = False


class DraftRunner(AgentRunner):
    """An AgentRunner whose agent knows its draft: `ralph ask` from it asks about the draft."""

    def __init__(
        self, root: Path, settings: Settings, adapter: Adapter, console: Console, request: DraftRequest
    ):
        journal = Journal(root / LOG_DIR / "events.jsonl")
        super().__init__(root, settings, adapter, journal, console, Supervisor(settings.grace_s))
        self.request = request

    def env(
        self,
        stage: str,
        iteration: int,
        item: str | None,
        prompt_file: Path,
        cwd: Path | None = None,
        model: str | None = None,
    ) -> dict[str, str]:
        env = super().env(stage, iteration, item, prompt_file, cwd, model)
        env.update(RALPH_DRAFT=self.request.name, RALPH_DRAFT_FILE=str(self.request.draft_file))
        return env


def prompt_values(request: DraftRequest) -> dict[str, object]:
    """The template's values; what the person and the agent wrote is fenced as data."""
    answered = "\n\n".join(f"Q ({q['id']}): {q['text']}\nA: {q.get('answer', '')}" for q in request.answered)
    return {
        "draft_file": request.draft_file,
        "idea": data_block("the person's idea", request.idea),
        "answers": data_block("your questions, with the person's answers", answered) + "\n\n"
        if answered
        else "",
        "feedback": data_block("the person's feedback on the draft: revise it accordingly", request.feedback)
        + "\n\n"
        if request.feedback
        else "",
        "current": "The draft file holds the current draft: revise it in place.\n"
        if request.revising
        else "",
    }


def run_draft(root: Path, settings: Settings, request: DraftRequest, console: Console) -> AgentResult:
    """One drafting run to its end. A signal (Ctrl-C, SIGTERM, SIGHUP) stops the agent and every
    child it started, then comes out as KeyboardInterrupt for the caller to put the plan back."""
    from ralph.agents import make_adapter
    from ralph.loop.process.signals import deferred_signals, stop_signals_interrupt

    adapter = make_adapter(settings.agent, settings.agent_cmd, settings.model, settings.agent_args)
    runner = DraftRunner(root, settings, adapter, console, request)
    runner.require_program()
    runner.sandbox = _fence(root, settings, adapter, request.draft_file.parent, console)
    supervisor = runner.supervisor
    try:
        with stop_signals_interrupt(), supervisor.adopting_orphans():
            try:
                return runner.run(STAGE, 1, None, prompt_values(request), model=settings.model_for("PLAN"))
            except KeyboardInterrupt:
                with deferred_signals():
                    supervisor.stop_all()
                raise
    finally:
        if runner.sandbox is not None:
            runner.sandbox.close()


class _DraftSandbox(Sandbox):
    """The plan-only fence, whatever the stage's name: a drafting run may write its draft alone."""

    def wrap(
        self,
        argv: list[str],
        work_tree: Path,
        env: dict[str, str],
        cwd: Path | None = None,
        fresh: bool = False,
        plan_only: bool = False,
    ) -> list[str]:
        return super().wrap(argv, work_tree, env, cwd, fresh, plan_only=True)


def _fence(
    root: Path, settings: Settings, adapter: Adapter, draft_dir: Path, console: Console
) -> Sandbox | None:
    """The sandbox --sandbox asks for (as the loop makes it), with the draft's folder writable;
    None, said once, where there is none and it is not required."""
    from ralph.loop.process import sandbox

    logs = (root / LOG_DIR,)  # ralph writes the logs; the run may only read them
    made, said = sandbox.make(settings.sandbox, root, adapter.state_paths, settings.sandbox_hide, logs)
    if made is None:
        if settings.sandbox == "auto":
            console.event(said)
        return None
    made.close()  # its empty stand-in file: the draft's own sandbox makes another
    fence = _DraftSandbox(made.program, root, adapter.state_paths, settings.sandbox_hide, logs)
    fence.writable_last = (draft_dir.resolve(),)
    fence.make_state_folders(Path.home())
    return fence
