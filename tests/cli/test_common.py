"""What every command shares (ralph/cli/common.py): RalphGroup turns each kind of failure into one
line on stderr and its exit code, JSON is printed one value per line that cannot drive a terminal,
and a command's task is its argument or the agent's $RALPH_TASK_ID. On a group of commands made
here; the real commands' messages are in the goldens and test_smoke.py."""

from __future__ import annotations

import errno
import json
import stat
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ralph.cli.common import RalphGroup, json_line, task_or_current
from ralph.errors import Busy, InvalidInput, Refused
from ralph.text import SCHEMA_VERSION

FAILURES = {
    "refused": Refused("task t-a is not done"),
    "busy": Busy("another ralph held its lock"),
    "denied": PermissionError(errno.EACCES, "Permission denied", "/srv/plan.jsonl"),
    "pipe": BrokenPipeError(errno.EPIPE, "Broken pipe"),
    "bug": ZeroDivisionError("division by zero"),
}


@click.group(cls=RalphGroup)
def group() -> None:
    pass


@group.command()
@click.argument("kind")
def fail(kind: str) -> None:
    raise FAILURES[kind]


@group.command()
@click.option("--count", type=int)
def count(count: int) -> None:
    click.echo(count)


@group.command()
@click.argument("pid", type=int)
@click.option("--then-fail", is_flag=True)
def defer(pid: int, then_fail: bool) -> None:
    """A change written for a live run (pid) to commit, as ralph.store.transaction does."""
    from ralph.store import beside

    beside.deferred.append(pid)
    if then_fail:
        raise FAILURES["refused"]


def run(*args: str):
    return CliRunner().invoke(group, list(args), catch_exceptions=False)


@pytest.mark.parametrize(
    ("kind", "code", "line"),
    [
        ("refused", 1, "ralph: task t-a is not done\n"),
        ("busy", 75, "ralph: another ralph held its lock\n"),
        ("denied", 1, "ralph: cannot use /srv/plan.jsonl: Permission denied\n"),
        ("pipe", 0, ""),
    ],
)
def test_each_failure_is_one_line_on_stderr_with_its_exit_code(kind, code, line):
    done = run("fail", kind)
    assert (done.exit_code, done.stderr, done.stdout) == (code, line, "")


def test_a_bad_flag_is_one_line_pointing_at_the_help():
    done = run("count", "--count", "many")
    assert done.exit_code == 2 and len(done.stderr.splitlines()) == 1
    assert (
        done.stderr.startswith("ralph: Invalid value for '--count'")
        and "(see 'group count --help')" in done.stderr
    )


def test_a_bug_is_one_line_with_exit_70_and_its_traceback_in_a_private_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("RALPH_DEBUG", raising=False)
    done = run("fail", "bug")
    assert done.exit_code == 70 and done.stderr.startswith(
        "ralph: internal error: ZeroDivisionError: division by zero"
    )
    log = Path(done.stderr.split("(traceback: ")[1].removesuffix(")\n"))
    assert log.parent == tmp_path / "state" / "ralph" and stat.S_IMODE(log.stat().st_mode) == 0o600
    assert "ZeroDivisionError" in log.read_text() and "raise FAILURES[kind]" in log.read_text()


def test_with_ralph_debug_a_bug_is_raised_as_it_is(monkeypatch):
    monkeypatch.setenv("RALPH_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        run("fail", "bug")


def test_json_lines_carry_the_schema_version_and_escape_what_could_drive_a_terminal():
    assert json.loads(json_line({"id": "t-a"})) == {"schema_version": SCHEMA_VERSION, "id": "t-a"}
    assert json_line(["a", "b"]) == '["a", "b"]'  # only objects are versioned
    line = json_line({"name": "é \x1b[2J \x9b31m \x7f"})
    assert "é" in line and "\x1b" not in line and "\x9b" not in line and "\x7f" not in line
    assert json.loads(line)["name"] == "é \x1b[2J \x9b31m \x7f"  # the same value
    assert json.loads(json_line({"odd": "\ud800"}))["odd"] == "\ud800"  # a lone surrogate, escaped


def test_the_task_is_the_argument_else_the_agents_and_an_empty_one_is_refused(monkeypatch):
    monkeypatch.setenv("RALPH_TASK_ID", "t-agent")
    assert task_or_current("t-given") == "t-given" and task_or_current(None) == "t-agent"
    monkeypatch.setenv("RALPH_TASK_ID", "")
    assert task_or_current(None) is None
    with pytest.raises(InvalidInput, match="the task id is empty"):
        task_or_current("  ")


def test_a_command_says_the_run_it_deferred_to_once_and_only_its_own():
    from ralph.store import beside

    said = "ralph: ralph construct (pid 4242) runs in this work tree: it commits this change\n"
    assert run("defer", "4242").stderr == said
    assert run("count", "--count", "1").stderr == ""  # said once
    beside.deferred.append(9999)  # an earlier caller in this process deferred, nobody said it
    assert run("count", "--count", "1").stderr == ""  # not this command's to say
    failed = run("defer", "4242", "--then-fail")
    assert failed.stderr == said + "ralph: task t-a is not done\n"  # written all the same
