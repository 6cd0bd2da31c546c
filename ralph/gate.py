"""The quality gate: a command ralph runs itself after the agent says a task is done."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ralph.process import ChildNotFound, run_child


@dataclass
class GateResult:
    ok: bool
    summary: str  # the end of its output, or why it could not run
    log_path: Path


def run_gate(argv: list[str], root: Path, log_path: Path, timeout_s: float, grace_s: float) -> GateResult:
    if not argv:
        return GateResult(True, "no gate configured", log_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RALPH_")}
    try:
        result = run_child(argv, cwd=root, env=env, log_path=log_path, timeout_s=timeout_s, grace_s=grace_s)
    except ChildNotFound as exc:
        return GateResult(False, f"the gate could not start: {exc}", log_path)
    if result.stop_reason == "timeout":
        return GateResult(False, f"`{' '.join(argv)}` timed out after {timeout_s:g}s", log_path)
    tail = "\n".join(result.tail[-40:])
    if result.ok:
        return GateResult(True, tail, log_path)
    return GateResult(False, f"`{' '.join(argv)}` exited {result.exit_code}:\n{tail}", log_path)
