"""One agent run: render the stage prompt, start the agent with ralph's environment, stream its
log, read its events, and record begin and end in the journal."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ralph.agents.base import Adapter, Invocation, RunTracker
from ralph.agents.events import ResultEvent, UsageEvent
from ralph.agents.transcript import Transcript, transcript_path
from ralph.errors import RalphError
from ralph.loop.observe.console import Console
from ralph.loop.observe.journal import Journal, Span
from ralph.loop.observe.live import USAGE_EVERY_S
from ralph.loop.observe.log_folder import LogFolder
from ralph.loop.process.sandbox import Sandbox
from ralph.loop.process.supervisor import BudgetSpent, ChildNotFound, RunResult, Supervisor
from ralph.loop.runs import prompts, skills
from ralph.loop.runs.compaction import Compacted
from ralph.loop.runs.cost import Spending, run_cost
from ralph.loop.runs.judged import JUDGES, JudgedInputs
from ralph.loop.runs.permissions import PLAN_ONLY_STAGES
from ralph.loop.runs.pressure import Pressure
from ralph.plan.plan import Plan
from ralph.plan.records import Stage, StopReason, Verdict
from ralph.store import programs
from ralph.usecases.settings import Settings

LOG_DIR = Path("build") / "ralph-logs"


class PlanProblem(NamedTuple):
    """What an agent run did to plan.jsonl that ralph undid: the attempt's verdict, and its words."""

    verdict: Verdict
    text: str


class AgentUnavailable(RalphError):
    """The agent program cannot be started at all; the loop cannot go on."""

    exit_code = 6  # the construct outcome AGENT_UNAVAILABLE


class SandboxFailed(AgentUnavailable):
    """The fence itself cannot start the agent (bwrap fails to set a run up, or cannot see the
    agent's program): every run would fail the same way, so none is run again; said once, as the
    sandbox's, with the fix (ralph.loop.process.sandbox.unseen_program, failed_setup)."""


class _Watched(NamedTuple):
    """What is told of a run that ends early: its stage and item, console line, span and usage."""

    stage: str
    item: str | None
    run_id: str
    span: Span
    streamed: UsageStream


@dataclass
class AgentResult:
    run: RunResult
    tracker: RunTracker
    log_path: Path  # relative to the repository root
    pressure: Pressure | None = None
    plan_problem: PlanProblem | None = None  # what the agent did to plan.jsonl (ralph restored it)
    violation: str | None = None  # what the agent did that its stage may not (ralph undid it)
    changed: frozenset[str] = frozenset()  # the paths it left changed (ralph's own files aside)
    # plan.jsonl as the run left it (or as ralph put it back), read once after the run and passed
    # on to what the stage does next; None: not read yet.
    plan: Plan | None = None
    # The plan the run started from, with what a person changed in it meanwhile with ralph's own
    # commands (ralph.loop.tree.beside_changes); None when nobody did. What the run's new work is
    # counted against, and what undoing the run puts back: the person's changes are never its.
    with_persons: Plan | None = None
    model: str | None = None  # the model it was run with (None: the agent CLI's default)

    @property
    def ok(self) -> bool:
        return self.run.ok and not self.tracker.reported_error

    def describe(self) -> str:
        if self.run.stop_reason:
            return f"stopped: {self.run.stop_reason}"
        if self.tracker.reported_error:
            subtype = self.tracker.result.subtype if self.tracker.result else None
            said = f" ({subtype})" if subtype else ""  # a result event need not name its kind
            return f"reported an error{said}"  # after "agent" (console) or "the agent ended (...)"
        code = self.run.exit_code
        if code is not None and code < 0:
            return f"killed by {_signal_name(-code)}"
        return f"exit {code}"


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def ralph_command() -> str:
    """How an agent's shell should call this ralph: an absolute path, since an agent's login
    shell may reset PATH."""
    script = Path(sys.executable).with_name("ralph")
    return str(script) if script.exists() else f"{sys.executable} -m ralph"


class AgentRunner:
    def __init__(
        self,
        root: Path,
        settings: Settings,
        adapter: Adapter,
        journal: Journal,
        console: Console,
        supervisor: Supervisor,
    ):
        self.root, self.settings, self.adapter = root, settings, adapter
        programs.fence(root)  # its agents' PATH has no entry inside it
        self.journal, self.console, self.supervisor = journal, console, supervisor
        self.log_dir = root / LOG_DIR
        self._names = threading.Lock()
        self.sandbox: Sandbox | None = None  # the fence around each run, once the loop has made it
        self.judged: JudgedInputs | None = None  # what judges read, from the run's first commit
        self.started: str | None = None  # that commit: a pre-commit hook in the work tree runs from it
        self.logs: LogFolder | None = None  # the log folder as opened at the start
        # The budgets: the monitor of each run streams its tokens and cost here, and stops it
        # when they pass one (the workspace admits and counts the runs).
        self.spending = Spending(settings.max_cost_usd, settings.max_tokens)

    def require_program(self) -> None:
        """Fail before touching anything when the agent's program does not exist."""
        import shutil

        program = self.adapter.invocation("", "", {}).argv[0]
        found = (
            shutil.which(program, path=programs.trusted_path())
            if os.sep not in program
            else (program if os.access(program, os.X_OK) else None)
        )
        if not found:
            hint = self.adapter.install_hint
            how = f"install it with `{hint}`" if hint else "check --agent-cmd"
            if hint and program != type(self.adapter).program:  # --agent-cmd named another path
                how = f"check --agent-cmd, or {how}"
            raise AgentUnavailable(f"the agent program {program!r} is not installed or not executable: {how}")

    def new_log(self, stage: str, item: str | None = None) -> Path:
        """build/ralph-logs/ralph-<YYYYmmdd-HHMMSS>-<stage>[-<item>].log, created empty."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        stem = f"ralph-{stamp}-{stage.lower()}" + (f"-{item}" if item else "")
        if self.logs is not None and self.logs.replaced():  # a gate's doing: never written through
            kept = self.logs.restore()
            self.journal.event("log_folder_restored", kept=kept or None)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with self._names:
            for n in range(1, 1000):
                path = self.log_dir / (stem + (f"-{n}" if n > 1 else "") + ".log")
                try:
                    path.open("x").close()
                    return path
                except FileExistsError:
                    continue
        raise RalphError(f"too many logs named {stem}")

    def env(
        self,
        stage: str,
        iteration: int,
        item: str | None,
        prompt_file: Path,
        cwd: Path | None = None,
        model: str | None = None,
    ) -> dict[str, str]:
        """`cwd`: the checkout the run works in, when not the repository itself (a verifier's
        worktree, which holds its own copy of plan.jsonl)."""
        where = str(cwd or self.root)
        env = dict(os.environ)
        for key in ("RALPH_TASK_ID", "RALPH_ISSUE_ID", "RALPH_MODEL", "RALPH_DRAFT", "RALPH_DRAFT_FILE"):
            env.pop(key, None)
        # ralph's own bin first (its `ralph`), then the person's PATH less what an agent could have
        # written (entries inside the work tree, relative and empty ones: ralph.store.programs).
        bin_dir = str(Path(sys.executable).parent)
        env["PATH"] = bin_dir + os.pathsep + programs.trusted_path(env.get("PATH", ""))
        env.update(
            RALPH_STAGE=stage,
            RALPH_ITERATION=str(iteration),
            RALPH_SPEC=self.settings.spec,
            RALPH_PROMPT_FILE=str(prompt_file),
            RALPH_ROOT=where,
            # opencode takes its project folder from $PWD before its working directory, and
            # ralph's own $PWD is wherever ralph was started.
            PWD=where,
            RALPH_BIN=ralph_command(),
            RALPH_COMMIT="0",  # the loop commits the agent's plan changes with its code
        )
        if model:  # the stage's model (--stage-model, else --model): a command agent's to pass on
            env["RALPH_MODEL"] = model
        if item and item.startswith("t-"):
            env["RALPH_TASK_ID"] = item
        elif item and item.startswith("i-"):
            env["RALPH_ISSUE_ID"] = item
        return env

    def run(
        self,
        stage: str,
        iteration: int,
        item: str | None,
        values: dict[str, object],
        compacted: Compacted | None = None,
        cwd: Path | None = None,
        worker: int | None = None,
        name: str | None = None,
        model: str | None = None,
        starting: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> AgentResult:
        """One agent run, in the repository or in the checkout `cwd`. `compacted` (a compacted
        context) makes this run a continuation of one the context monitor stopped, opening with it.
        `name` (the task's name, the issue's text) is for people watching. `model`: the one it runs
        with (None: the agent CLI's default). `starting`: entered as the run begins (its journal
        event), for a caller that may refuse it there (AgentFailures, once the loop has ended)."""
        log_path = self.new_log(stage, item)
        root = cwd or self.root
        prompt, prompt_file = self._write_prompt(stage, values, root, log_path, compacted)
        env = self.env(stage, iteration, item, prompt_file, cwd, model)
        invocation = self.adapter.invocation(prompt, str(prompt_file), env, model)
        relative_log = log_path.relative_to(self.root)
        run_id = str(relative_log)  # unique per run: several run at once
        tracker = RunTracker()
        pressure = self._pressure(
            stage, item, iteration, log_path, compacted.fill_before if compacted else None
        )
        transcript = Transcript(
            transcript_path(log_path), f"{stage} {item or self.settings.spec}: {relative_log.name}"
        )
        streamed = UsageStream(self, run_id, stage, item, tracker, model)
        with starting() if starting is not None else nullcontext():
            span = self.journal.span(
                "agent",
                stage=stage,
                item=item,
                name=name,
                iteration=iteration,
                log=str(relative_log),
                worker=worker,
                model=model,
            )
        self.console.start_run(run_id, stage, item, name, str(relative_log), model)
        argv = invocation.argv
        if self.sandbox is not None:
            # A verifier's or reviewer's checkout is made or cleaned for its run (ralph.loop.tree.checkouts).
            fresh = stage in (Stage.VERIFY, Stage.REVIEW) and root != self.root
            plan_only = stage in PLAN_ONLY_STAGES  # its work tree read-only but for plan.jsonl
            argv = self.sandbox.wrap(argv, root, invocation.env, fresh=fresh, plan_only=plan_only)
        try:
            result = self._supervise(
                argv,
                root,
                invocation,
                log_path,
                self._monitor(tracker, pressure, transcript, streamed),
                _Watched(stage, item, run_id, span, streamed),
            )
        finally:
            transcript.close()
        if tracker.ignored:
            self.journal.event("usage_ignored", stage=stage, item=item, values=tracker.ignored[:20])
        span.end(
            exit_code=result.exit_code,
            stop_reason=result.stop_reason,
            is_error=tracker.reported_error or None,
            tokens=tracker.usage.to_dict() if tracker.usage.total else None,
        )
        done = AgentResult(result, tracker, relative_log, pressure, model=model)
        self.console.end_run(run_id, done.describe())
        return done

    def _write_prompt(
        self, stage: str, values: dict[str, object], root: Path, log_path: Path, compacted: Compacted | None
    ) -> tuple[str, Path]:
        """The stage's prompt for this run (after the compacted context it continues, if any),
        written beside its log; the prompt and where it is."""
        values = {
            "root": root,
            "spec": self.settings.spec,
            "ralph": ralph_command(),
            "project_rules": prompts.project_rules(self.root),
            "skills": skills.prompt_section(skills.in_work_tree(root)[0], prompts.task_type_of(values)),
            "type_guidance": prompts.type_section(self.root, stage, prompts.task_type_of(values)),
            **values,
        }
        template = None
        if self.judged is not None and stage in JUDGES:  # never what a build may have just written
            values.update(self.judged.values(self.settings.spec, prompts.task_type_of(values), stage))
            template = self.judged.template(stage)
            template = template if template is not None else prompts.package_template(stage)
        prompt = prompts.render(self.root, stage, values, template)
        if compacted:
            prompt = f"{compacted.text}\n\n{prompt}"
        prompt_file = log_path.with_suffix(".prompt.md")
        prompt_file.write_text(prompt, encoding="utf-8")
        return prompt, prompt_file

    def _monitor(
        self, tracker: RunTracker, pressure: Pressure, transcript: Transcript, streamed: UsageStream
    ) -> Callable[[str], StopReason | None]:
        """What reads each line the agent prints: its events tracked and kept in the transcript,
        and the reason to stop it, if any (its context pressure, the budget its usage spends)."""

        def monitor(line: str) -> StopReason | None:
            events = self.adapter.parse_line(line)
            transcript.add(line, events)
            for event in events:
                tracker.add(event)
                if isinstance(event, UsageEvent):
                    reason = pressure.check(tracker.usage)
                    if reason:
                        return reason
            if events:  # a result line ends the run: its work is done, and kept whatever it cost
                return streamed.check(ended=any(isinstance(event, ResultEvent) for event in events))
            return None

        return monitor

    def _supervise(
        self,
        argv: list[str],
        root: Path,
        invocation: Invocation,
        log_path: Path,
        monitor: Callable[[str], StopReason | None],
        watched: _Watched,
    ) -> RunResult:
        """The agent's process run to its end by the supervisor. One that cannot start is
        AgentUnavailable; one stopped by Ctrl-C, a stop signal or the budget closes its journal
        span and console line first (a budget its own usage spent names the run it stopped)."""
        try:
            return self.supervisor.run(
                argv,
                cwd=root,
                env=invocation.env,
                log_path=log_path,
                timeout_s=self.settings.timeout_s,
                stdin_data=invocation.stdin,
                monitor=monitor,
            )
        except ChildNotFound as exc:
            watched.span.end(error=str(exc))
            self.console.end_run(watched.run_id, "could not start")
            raise AgentUnavailable(f"the agent cannot start: {exc}") from None
        except BaseException as exc:
            spent = isinstance(exc, BudgetSpent)
            watched.span.end(stop_reason=StopReason.BUDGET if spent else StopReason.INTERRUPTED)
            self.console.end_run(watched.run_id, "stopped")
            over = watched.streamed.over
            if spent and over is not None:  # its monitor stopped it for the budget
                what = f"{watched.stage} {watched.item}" if watched.item else watched.stage
                over.args = (f"{over}; {what} was stopped",)
                raise over from None
            raise

    def run_cost(self, tracker: RunTracker, model: str | None) -> float | None:
        """The run's cost, priced (when its CLI says none) by the model it was run with, else the
        one its CLI reported."""
        return run_cost(tracker.usage, model or tracker.model, self.settings.prices)

    def _pressure(
        self, stage: str, item: str | None, iteration: int, log_path: Path, compacted_from: float | None
    ) -> Pressure:
        def note(text: str) -> None:
            with open(log_path, "a", encoding="utf-8") as log:  # O_APPEND: safe beside the reader
                log.write(f"\n[RALPH] {text}\n")
            self.console.event(f"{stage} {item or ''}: {text}")

        def on_warn(fill: float) -> None:
            note(f"Context pressure: {fill:.0%} - consider wrapping up")
            self.journal.event(
                "context_warn", stage=stage, item=item, iteration=iteration, fill=round(fill, 4)
            )

        def on_compacted(fill: float) -> None:
            note(f"Context compacted: {compacted_from or 0:.0%} -> {fill:.0%}")
            self.journal.event("context_after_compaction", stage=stage, item=item, fill=round(fill, 4))

        window = self.settings.context_window or self.adapter.default_context_window
        after = compacted_from is not None
        return Pressure(self.settings, window, after, on_warn, on_compacted)


class UsageStream:
    """A running agent's tokens and cost as they stream: priced at once against the budgets
    (`check`), and shown on the console and, at most every USAGE_EVERY_S, in the journal (a
    `usage` event, which `ralph watch` reads)."""

    def __init__(
        self,
        runner: AgentRunner,
        run_id: str,
        stage: str,
        item: str | None,
        tracker: RunTracker,
        model: str | None,
    ):
        self.runner, self.run_id, self.stage, self.item, self.tracker = runner, run_id, stage, item, tracker
        self.model = model
        self.owner = threading.get_ident()  # the thread that admitted the run (Spending.stream)
        self.reported: tuple[int, float | None] = (0, None)
        self.at = 0.0
        self.over: BudgetSpent | None = None  # the budget this run passed, once it has

    def check(self, ended: bool = False) -> StopReason | None:
        """After the run's events of one output line: BUDGET when it must stop for a budget."""
        spending = self.runner.spending
        if spending.budgeted and self.over is None:
            cost = self.runner.run_cost(self.tracker, self.model)
            over = spending.stream(self.owner, self.tracker.usage.total, cost)
            if over is not None and not ended:
                self.over = over
                return StopReason.BUDGET
        self.maybe_report()
        return None

    def maybe_report(self) -> None:
        now = time.monotonic()
        if now - self.at < USAGE_EVERY_S:
            return
        tokens, cost = self.tracker.usage.total, self.runner.run_cost(self.tracker, self.model)
        if (tokens, cost) == self.reported:
            return
        self.at, self.reported = now, (tokens, cost)
        self.runner.console.usage(self.run_id, tokens, cost)
        self.runner.journal.event(
            "usage",
            stage=self.stage,
            item=self.item,
            log=self.run_id,
            tokens=tokens,
            cost_usd=None if cost is None else round(cost, 6),
        )
