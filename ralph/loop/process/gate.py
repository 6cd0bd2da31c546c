"""The quality gate: a command ralph runs itself after the agent says a task is done."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ralph.failures import FailingLines
from ralph.loop.process.sandbox import Sandbox
from ralph.loop.process.supervisor import ChildNotFound, Supervisor
from ralph.plan.records import StopReason


@dataclass
class GateResult:
    ok: bool
    summary: str  # why it failed (see FailingLines), the end of its output, or why it could not run
    log_path: Path
    # The loop's stop (a signal, a spent budget: Supervisor.stop_all) ended it, or kept it from
    # starting: no verdict on the build, whatever it had printed.
    cut_short: bool = False


def gate_env() -> dict[str, str]:
    """The gate's environment: ralph's own, less the loop's RALPH_* variables. A project whose tests
    run `ralph` (like ralph's own) must not see RALPH_TASK_ID or RALPH_COMMIT=0 from the loop.
    Its PATH is the person's as it is, entries inside the work tree (the project's .venv/bin) and
    relative ones included, where ralph's own children get none of those (ralph.store.programs):
    the gate is the repository's own code (a `make test` may need the project's virtualenv), so a
    program found there runs nothing the gate could not run itself, and it runs in the fence."""
    return {key: value for key, value in os.environ.items() if not key.startswith("RALPH_")}


def run_gate(
    supervisor: Supervisor,
    argv: Sequence[str],
    root: Path,
    log_path: Path,
    timeout_s: float,
    sandbox: Sandbox | None = None,
) -> GateResult:
    """Run the gate in the work tree `root`; inside the sandbox when there is one (the gate is the
    repository's own code: it gets the fence an agent gets)."""
    if not argv:
        return GateResult(True, "no gate configured", log_path)
    shown = " ".join(argv)
    env = gate_env()
    run_argv = sandbox.wrap(list(argv), root, env) if sandbox else list(argv)
    sieve = FailingLines()
    try:
        result = supervisor.run(
            run_argv, cwd=root, env=env, log_path=log_path, timeout_s=timeout_s, monitor=sieve
        )
    except ChildNotFound as exc:
        return GateResult(False, f"the gate could not start: {exc}", log_path)
    explained = "\n".join(sieve.lines())
    if result.stop_reason == StopReason.INTERRUPTED:
        return GateResult(False, f"`{shown}` was cut short: ralph is stopping", log_path, cut_short=True)
    if result.stop_reason == StopReason.TIMEOUT:
        said = f"`{shown}` timed out after {timeout_s:g}s"
        return GateResult(False, f"{said}:\n{explained}" if explained else said, log_path)
    if result.ok:
        return GateResult(True, explained, log_path)
    return GateResult(False, f"`{shown}` exited {result.exit_code}:\n{explained}", log_path)


def gate_problem(argv: Sequence[str], root: Path) -> str | None:
    """Why the gate cannot run at all, checked before the first agent run (a repository without a
    `verify` target would otherwise fail every task max_attempts times, then decompose it). Runs
    nothing: the program is looked up, a make gate's Makefile read as text (ralph.loop.process.makefile:
    `make -n` would run its `$(shell ...)` outside the fence)."""
    if not argv:
        return None
    import shutil

    program = argv[0] if os.sep in argv[0] else shutil.which(argv[0], path=gate_env().get("PATH"))
    if program is None or not os.access(program, os.X_OK):
        return f"the gate's program {argv[0]!r} is not installed or not executable"
    if Path(program).name in ("make", "gmake"):
        from ralph.loop.process.makefile import missing_targets

        missing = missing_targets(list(argv[1:]), root)
        if missing:
            makefile, targets = missing
            names = ", ".join(f"'{target}'" for target in targets)
            return f"`{' '.join(argv)}` cannot run here: {makefile} has no rule to make target {names}"
    return None
