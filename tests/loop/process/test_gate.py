"""The quality gate run directly: its verdict, its summary, and the environment it gets."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap

import pytest

from ralph.failures import failing_lines
from ralph.loop.process.gate import gate_env, gate_problem, run_gate
from ralph.loop.process.supervisor import Supervisor

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
    assert tail == [f"line {n}" for n in range(90, 100)]  # nothing looks like an error: the last 10


# A tiny project with one failing test among many passing ones, for the real test runners.
CALC = """
    import unittest

    def add(a, b):
        return a - b

    class TestCalc(unittest.TestCase):
        def test_ok(self):
            self.assertEqual(1, 1)

        def test_add(self):
            self.assertEqual(add(2, 2), 4)
"""


@pytest.fixture
def calc(tmp_path):
    (tmp_path / "test_calc.py").write_text(textwrap.dedent(CALC))
    (tmp_path / "test_many.py").write_text("".join(f"def test_pass_{n}(): pass\n" for n in range(60)))
    return tmp_path


def test_a_failing_pytest_gate_shows_the_failure_not_the_dots(calc, monkeypatch):
    # The gate's pytest loads none of this venv's plugins (hypothesis, xdist): 0.1 s, not 0.4.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = gate(calc, [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts="])
    lines = result.summary.splitlines()
    assert not result.ok and lines[0].endswith("exited 1:")
    assert "E       AssertionError: 0 != 4" in lines
    assert "FAILED test_calc.py::TestCalc::test_add - AssertionError: 0 != 4" in lines
    assert any(line.startswith("=") and "1 failed, 61 passed" in line for line in lines)
    assert not [line for line in lines if "...." in line or " F." in line]  # no progress dots
    assert len(lines) <= 24


def test_a_failing_unittest_gate_under_make_shows_the_traceback_and_makes_error(calc, monkeypatch):
    for name in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS"):  # under `make test`: "make[1]: ***" otherwise
        monkeypatch.delenv(name, raising=False)
    (calc / "Makefile").write_text("verify:\n\t$(PYTHON) -m unittest test_calc\n")
    result = gate(calc, ["make", "verify", f"PYTHON={sys.executable}"])
    lines = result.summary.splitlines()
    assert not result.ok and lines[0] == f"`make verify PYTHON={sys.executable}` exited 2:"
    assert "FAIL: test_add (test_calc.TestCalc.test_add)" in lines
    assert "AssertionError: 0 != 4" in lines and "FAILED (failures=1)" in lines
    assert lines[-1] == "make: *** [Makefile:2: verify] Error 1"
    assert "F." not in lines and "E." not in lines  # unittest's progress line


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_a_failing_npm_test_gate_shows_the_failed_test(tmp_path):
    (tmp_path / "package.json").write_text(
        '{"name": "calc", "version": "1.0.0", "scripts": {"test": "node --test"}}'
    )
    (tmp_path / "calc.test.js").write_text(
        "const test = require('node:test'); const assert = require('node:assert');\n"
        "test('adds', () => { assert.strictEqual(2 - 2, 4); });\ntest('ok', () => {});\n"
    )
    result = gate(tmp_path, ["npm", "test"])
    lines = result.summary.splitlines()
    assert not result.ok and "not ok 1 - adds" in lines
    assert "# fail 1" in lines  # the end of the output


def test_failing_lines_keeps_errors_from_anywhere_then_the_end_without_noise():
    output = [
        "collected 400 items",
        "src/a.c:3:5: error: expected ';' before 'return'",
        *(["." * 70 + " [ 10%]"] * 50),
        *(f"note {n}" for n in range(40)),
        "",
        "make: *** [Makefile:9: build] Error 1",
    ]
    assert failing_lines(output) == [
        "src/a.c:3:5: error: expected ';' before 'return'",
        "...",
        *(f"note {n}" for n in range(31, 40)),
        "make: *** [Makefile:9: build] Error 1",
    ]
    assert failing_lines(["y" * 5000]) == ["y" * 300]  # a huge line is cut
    assert failing_lines([f"E   line {n}" for n in range(100)])[:12] == [f"E   line {n}" for n in range(12)]


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


# The probe before the first agent run reads the Makefile and runs nothing from it (process.makefile).
HOSTILE_MAKEFILE = "STAMP := $(shell echo ran >> {marker})\nverify:\n\techo ran >> {marker}\n"


def test_the_probe_of_a_make_gate_runs_nothing_from_the_makefile(tmp_path):
    """make expands `$(shell ...)` even with -n: a Makefile a build committed would run outside
    the fence at the next start. The probe reads it instead."""
    marker = tmp_path / "ran"
    (tmp_path / "Makefile").write_text(HOSTILE_MAKEFILE.format(marker=marker))
    assert gate_problem(["make", "verify"], tmp_path) is None
    assert gate_problem(["make", "test"], tmp_path) == (
        "`make test` cannot run here: Makefile has no rule to make target 'test'"
    )
    assert not marker.exists()
