"""One agent run: the environment an agent gets, and how a run it reported as failed is described."""

from __future__ import annotations

from pathlib import Path

from ralph.agents import make_adapter
from ralph.agents.base import RunTracker
from ralph.loop.observe.console import Console
from ralph.loop.process.supervisor import Supervisor
from ralph.usecases.settings import Settings


def test_agents_get_the_repository_as_pwd_and_the_item_in_their_environment(tmp_path, monkeypatch):
    from ralph.loop.observe.journal import Journal
    from ralph.loop.runs.agent_process import AgentRunner

    monkeypatch.setenv("PWD", "/somewhere/else")  # opencode would work there
    monkeypatch.setenv("RALPH_ISSUE_ID", "i-stale0")
    settings = Settings.resolve("specs/x.md", {}, {})
    adapter, journal = make_adapter("command", ["x"]), Journal(tmp_path / "e.jsonl")
    runner = AgentRunner(tmp_path, settings, adapter, journal, Console(), Supervisor())
    env = runner.env("BUILD", 3, "t-abc123", tmp_path / "p.md")
    assert env["PWD"] == str(tmp_path) and env["RALPH_ROOT"] == str(tmp_path)
    assert env["RALPH_TASK_ID"] == "t-abc123" and "RALPH_ISSUE_ID" not in env
    assert env["RALPH_STAGE"] == "BUILD" and env["RALPH_ITERATION"] == "3" and env["RALPH_COMMIT"] == "0"


def test_an_agents_path_keeps_no_entry_an_agent_could_have_written(tmp_path, monkeypatch):
    """The project's .venv activated, ./bin, an empty entry: gone; ralph's own bin comes first."""
    import os
    import sys

    from ralph.loop.observe.journal import Journal
    from ralph.loop.runs.agent_process import AgentRunner

    outside = tmp_path / "tools"
    path = [str(tmp_path / "repo" / ".venv" / "bin"), "bin", "", str(outside), str(tmp_path / "repo")]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    settings = Settings.resolve("specs/x.md", {}, {})
    adapter, journal = make_adapter("command", ["x"]), Journal(tmp_path / "e.jsonl")
    runner = AgentRunner(tmp_path / "repo", settings, adapter, journal, Console(), Supervisor())
    env = runner.env("BUILD", 1, "t-abc123", tmp_path / "p.md")
    assert env["PATH"].split(os.pathsep) == [str(Path(sys.executable).parent), str(outside)]


def test_a_run_the_agent_called_failed_is_described_by_its_result_subtype(tmp_path):
    from ralph.agents.events import ResultEvent
    from ralph.loop.process.supervisor import RunResult
    from ralph.loop.runs.agent_process import AgentResult

    tracker = RunTracker()
    exited = RunResult(0, None, 1.0, tmp_path / "x.log", [])
    assert AgentResult(exited, tracker, Path("x.log")).describe() == "exit 0"
    tracker.add(ResultEvent(is_error=True, subtype="turn.failed"))
    failed = AgentResult(exited, tracker, Path("x.log"))
    assert not failed.ok and failed.describe() == "reported an error (turn.failed)"
    untyped = RunTracker()
    untyped.add(ResultEvent(is_error=True))  # a result event that names no kind of error
    assert AgentResult(exited, untyped, Path("x.log")).describe() == "reported an error"
