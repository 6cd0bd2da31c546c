"""The quality gate run directly: its verdict, its summary, and the environment it gets."""

from __future__ import annotations

import json
import sys

import pytest

from ralph.loop.gate import gate_env, run_gate
from ralph.loop.supervisor import Supervisor

PRINT_RALPH_VARS = (
    "import json, os; print(json.dumps(sorted(k for k in os.environ if k.startswith('RALPH_'))))"
)


def gate(tmp_path, argv, timeout_s: float = 120):
    return run_gate(Supervisor(1.0), argv, tmp_path, tmp_path / "gate.log", timeout_s)


def test_a_passing_gate_passes_with_its_output(tmp_path):
    result = gate(tmp_path, [sys.executable, "-c", "print('all 12 tests passed')"])
    assert result.ok and result.summary == "all 12 tests passed"
    assert result.log_path == tmp_path / "gate.log" and "all 12 tests passed" in result.log_path.read_text()


def test_a_failing_gate_reports_its_exit_code_and_the_end_of_its_output(tmp_path):
    script = "import sys; [print(f'line {n}') for n in range(100)]; sys.exit(3)"
    result = gate(tmp_path, [sys.executable, "-c", script])
    assert not result.ok
    first, *tail = result.summary.splitlines()
    assert first.endswith("exited 3:") and first.startswith(f"`{sys.executable} -c ")
    assert tail == [f"line {n}" for n in range(60, 100)]  # the last 40 lines


def test_a_gate_that_runs_too_long_fails_as_timed_out(tmp_path):
    result = gate(tmp_path, ["sleep", "600"], timeout_s=1)
    assert not result.ok and result.summary == "`sleep 600` timed out after 1s"
    assert "stopping the agent's process group: timeout" in result.log_path.read_text()


def test_a_gate_that_cannot_start_fails_and_says_why(tmp_path):
    result = gate(tmp_path, [str(tmp_path / "no-such-gate"), "verify"])
    assert not result.ok and result.summary.startswith("the gate could not start: cannot run")
    assert "no-such-gate" in result.summary


@pytest.mark.parametrize("argv", [(), []])
def test_no_gate_passes_without_running_anything(tmp_path, argv):
    result = gate(tmp_path, argv)
    assert result.ok and result.summary == "no gate configured"
    assert not (tmp_path / "gate.log").exists()


def test_the_gate_sees_no_ralph_variables(tmp_path, monkeypatch):
    # ralph started from an agent's shell, or the loop's own variables: none may reach the gate,
    # whose tests may run `ralph` themselves.
    for key, value in {"RALPH_TASK_ID": "t-abc123", "RALPH_COMMIT": "0", "RALPH_STAGE": "BUILD"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GATE_KEEPS_THIS", "1")
    env = gate_env()
    assert not [key for key in env if key.startswith("RALPH_")]
    assert env["GATE_KEEPS_THIS"] == "1" and env["PATH"]
    result = gate(tmp_path, [sys.executable, "-c", PRINT_RALPH_VARS])
    assert result.ok and json.loads(result.summary) == []
