"""`ralph construct` with the real opencode and Gemini CLI binaries against the mock model server.

Like test_real_agents.py: the CLIs come from npm once (skipped, with the reason, when the registry
cannot be reached), each gets a scratch HOME through ralph's environment, and the mock acts out
BUILD and VERIFY through the CLI's own shell tool (`bash` for opencode over Chat Completions,
`run_shell_command` for Gemini CLI over the Gemini API). One task each: opencode alone takes
25-35 s per agent run on these machines.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.e2e import (
    SANDBOX,
    add_task,
    assert_fenced,
    events,
    plan_records,
    recorded,
    scratch_env,
    write_project,
)
from tests.support.gitrepo import git
from tests.support.mock_model import MockModelServer, Usage
from tests.support.npm_agents import require_installed

pytestmark = pytest.mark.slow


# Distinct per turn, so a dropped or double-counted request shows in the totals.
def usage() -> Usage:
    """What the mock reports in these tests (a new one each: its schedule is a list)."""
    return Usage(input_tokens_schedule=[1200, 2400, 3600], cache_read_tokens=200, output_tokens=20)


@pytest.fixture
def project(repo: Path) -> Path:
    return write_project(repo, "# App\n\n- Parse input\n")


def opencode_env(root: Path, server: MockModelServer) -> dict[str, str]:
    env = scratch_env(root)
    # ralph must give opencode the repository as $PWD; if it did not, opencode would work in this
    # empty folder (and the test fail) rather than in the directory pytest runs from.
    elsewhere = root.parent / "elsewhere"
    elsewhere.mkdir()
    env["PWD"] = str(elsewhere)
    config = Path(env["HOME"]) / ".config" / "opencode"  # global config: the repository stays clean
    config.mkdir(parents=True)
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "mock",
        "options": {"baseURL": server.url + "/v1", "apiKey": "dummy"},
        "models": {"mock-model": {"name": "mock-model", "limit": {"context": 200000, "output": 8000}}},
    }
    (config / "opencode.json").write_text(json.dumps({"provider": {"mock": provider}}))
    env.update(OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_AUTOUPDATE="1")
    return env


def gemini_env(root: Path, server: MockModelServer) -> dict[str, str]:
    env = scratch_env(root)
    settings = Path(env["HOME"]) / ".gemini"
    settings.mkdir()
    (settings / "settings.json").write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "telemetry": {"enabled": False},
                "privacy": {"usageStatisticsEnabled": False},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            }
        )
    )
    env.update(GOOGLE_GEMINI_BASE_URL=server.url, GEMINI_API_KEY="dummy")
    return env


def construct(root: Path, agent: str, binary: Path, model: str, env: dict[str, str]):
    argv = [
        sys.executable, "-m", "ralph", "-C", str(root), "construct", "specs/app.md",
        "--agent", agent, "--agent-cmd", str(binary), "--model", model,
        "--gate", f"{shlex.quote(sys.executable)} check_work.py", "--timeout", "240s", SANDBOX,
    ]  # fmt: skip
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)


def assert_one_task_complete(root: Path, done: subprocess.CompletedProcess, task_id: str) -> None:
    assert done.returncode == 0, done.stdout + done.stderr
    assert (root / "work" / f"{task_id}.txt").read_text() == "ok"
    records = plan_records(root)
    assert [(r["id"], r["name"]) for r in records if r["t"] == "accept"] == [(task_id, "Parse input")]
    assert not [r for r in records if r["t"] in ("task", "issue")]
    subjects = git(root, "log", "--format=%s").splitlines()
    assert [s for s in subjects if s.startswith("ralph(build): ")] == [f"ralph(build): {task_id} Parse input"]
    build_files = git(root, "log", "-1", "--name-only", "--format=", "--grep=^ralph(build): ").split()
    assert f"work/{task_id}.txt" in build_files and "plan.jsonl" in build_files
    assert git(root, "status", "--porcelain") == ""
    assert_fenced(events(root))
    runs = [e for e in events(root) if e["event"] == "agent_end"]
    # The spec check, then the review's five aspects: the mock model adds nothing, so the run ends
    # COMPLETE.
    stages = [e["stage"] for e in runs]
    assert stages == ["BUILD", "VERIFY", "CHECK", *["REVIEW"] * 5] and all(e["exit_code"] == 0 for e in runs)
    print("agent runs:", ", ".join(f"{e['stage']} {e['duration_s']:.1f} s" for e in runs))


def test_opencode_builds_one_task_to_complete_and_its_tokens_are_recorded_exactly(project):
    opencode = require_installed("opencode-ai", "opencode")
    task_id = add_task(project, "Parse input")
    with MockModelServer(usage=usage()) as server:
        done = construct(project, "opencode", opencode, "mock/mock-model", opencode_env(project, server))
    assert_one_task_complete(project, done, task_id)
    # Every agent request carried opencode's working directory: the repository for BUILD, the
    # verifier's and each reviewer's own checkout of it for VERIFY and REVIEW.
    agent_requests = [r for r in server.model_requests("chat") if r.body.get("tools")]
    firsts = [json.dumps(r.body["messages"][0]) for r in agent_requests]
    in_repository = [first for first in firsts if str(project) in first]
    in_checkout = [first for first in firsts if "/ralph-verify-" in first]  # ralph.loop.tree.checkouts
    assert in_repository and in_checkout and len(in_repository) + len(in_checkout) == len(firsts)
    # opencode reports input without the cached tokens, and not its session-title requests.
    sent = server.totals("chat", side=False)
    cached = sent["prompt_tokens_details.cached_tokens"]
    assert recorded(project, "cache_read_tokens") == cached
    assert recorded(project, "input_tokens") + cached == sent["prompt_tokens"]
    assert recorded(project, "output_tokens") == sent["completion_tokens"]


def test_gemini_builds_one_task_to_complete_and_its_tokens_are_recorded_exactly(project):
    gemini = require_installed("@google/gemini-cli", "gemini")
    task_id = add_task(project, "Parse input")
    with MockModelServer(usage=usage()) as server:
        done = construct(project, "gemini", gemini, "gemini-2.5-flash", gemini_env(project, server))
    assert_one_task_complete(project, done, task_id)
    assert all("gemini-2.5-flash:" in r.path for r in server.model_requests("gemini"))
    sent = server.totals("gemini")
    cached = sent["cachedContentTokenCount"]
    assert recorded(project, "cache_read_tokens") == cached
    assert recorded(project, "input_tokens") + cached == sent["promptTokenCount"]
    assert recorded(project, "output_tokens") == sent["candidatesTokenCount"]
