"""`ralph construct` with the real Claude Code and Codex binaries against the mock model server.

The CLIs are installed from npm once into .e2e-cache/ (skipped, with the reason, when the registry
cannot be reached). The mock plays a model that acts out each ralph stage through the CLI's shell
tool, so these runs go through ralph's adapters, the CLIs' own event streams and tool loops, and
the real `ralph` commands.
"""

from __future__ import annotations

import shlex
import socket
import subprocess
import sys
import time
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
from tests.support.mock_model import Conversation, MockModelServer, Usage
from tests.support.npm_agents import require_installed

pytestmark = pytest.mark.slow


@pytest.fixture
def project(repo: Path) -> Path:
    return write_project(repo, "# App\n\n- Parse input\n- Print report\n")


def claude_env(root: Path, server: MockModelServer) -> dict[str, str]:
    env = scratch_env(root)
    env.update(
        ANTHROPIC_BASE_URL=server.url,
        ANTHROPIC_API_KEY="dummy",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        CLAUDE_CODE_MAX_RETRIES="1",
    )
    return env


def codex_env(root: Path, base_url: str) -> dict[str, str]:
    env = scratch_env(root)
    codex_home = Path(env["HOME"]) / ".codex"
    codex_home.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(
        'model = "mock-model"\nmodel_provider = "mock"\n\n[model_providers.mock]\nname = "mock"\n'
        f'base_url = "{base_url}"\nwire_api = "responses"\nenv_key = "MOCK_API_KEY"\n'
    )
    env.update(CODEX_HOME=str(codex_home), MOCK_API_KEY="dummy")
    return env


def construct(root: Path, agent: str, binary: Path, env: dict[str, str], *flags: str):
    argv = [
        sys.executable, "-m", "ralph", "-C", str(root), "construct", "specs/app.md",
        "--agent", agent, "--agent-cmd", str(binary), "--model", "mock-model",
        "--gate", f"{shlex.quote(sys.executable)} check_work.py", SANDBOX, *flags,
    ]  # fmt: skip
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)


def assert_complete(root: Path, done: subprocess.CompletedProcess, names: list[str]) -> None:
    assert done.returncode == 0, done.stdout + done.stderr
    records = plan_records(root)
    assert sorted(r["name"] for r in records if r["t"] == "accept") == sorted(names)
    assert not [r for r in records if r["t"] in ("task", "issue")]
    subjects = git(root, "log", "--format=%s").splitlines()
    assert len([s for s in subjects if s.startswith("ralph(build): ")]) == len(names)
    for path in (root / "work").glob("*.txt"):
        assert path.read_text() == "ok"
    assert git(root, "status", "--porcelain") == ""


def test_claude_takes_a_spec_to_complete_and_its_tokens_are_recorded_exactly(project):
    claude = require_installed("@anthropic-ai/claude-code", "claude")
    with MockModelServer(usage=Usage(input_tokens_schedule=[1200, 2500], cache_read_tokens=300)) as server:
        done = construct(project, "claude", claude, claude_env(project, server))
    assert_complete(project, done, ["Parse input", "Print report"])
    assert_fenced(events(project))
    sent = server.totals("anthropic")
    assert recorded(project, "input_tokens") == sent["input_tokens"]
    assert recorded(project, "output_tokens") == sent["output_tokens"]
    assert recorded(project, "cache_read_tokens") == sent["cache_read_input_tokens"]
    runs = [e for e in events(project) if e["event"] == "agent_end"]
    assert [e["stage"] for e in runs].count("BUILD") == 2 and all(e["exit_code"] == 0 for e in runs)


def test_codex_takes_a_spec_to_complete_and_its_tokens_are_recorded_exactly(project):
    codex = require_installed("@openai/codex", "codex")
    with MockModelServer(usage=Usage(input_tokens_schedule=[1200, 2400], cache_read_tokens=200)) as server:
        done = construct(project, "codex", codex, codex_env(project, server.url + "/v1"))
    assert_complete(project, done, ["Parse input", "Print report"])
    assert_fenced(events(project))
    sent = server.totals("openai")
    cached = sent["input_tokens_details.cached_tokens"]
    assert recorded(project, "cache_read_tokens") == cached
    assert recorded(project, "input_tokens") + cached == sent["input_tokens"]  # codex counts cached in input
    assert recorded(project, "output_tokens") == sent["output_tokens"]


class PressureUsage(Usage):
    """Input tokens per turn for BUILD runs of the marked task; 1,000 for everything else.
    The context window of mock-model is 200,000."""

    def __init__(self, first: list[int], after_compaction: list[int]):
        super().__init__()
        self.first, self.after = first, after_compaction

    def input_for(self, turn: int, conversation: Conversation | None = None) -> int:
        prompt = conversation.prompt if conversation else ""
        if "Stage: BUILD" not in prompt or "[pressure]" not in prompt:
            return 1000
        schedule = self.after if "=== COMPACTED CONTEXT ===" in prompt else self.first
        return schedule[min(turn, len(schedule) - 1)]


def test_claude_context_pressure_warns_compacts_and_continues(project):
    claude = require_installed("@anthropic-ai/claude-code", "claude")
    task_id = add_task(project, "Big [pressure]")
    with MockModelServer(usage=PressureUsage([150_000, 175_000], [20_000])) as server:
        done = construct(project, "claude", claude, claude_env(project, server))
    assert done.returncode == 0, done.stdout + done.stderr
    journal = events(project)
    assert next(e for e in journal if e["event"] == "context_warn")["fill"] == pytest.approx(0.75)
    compact = next(e for e in journal if e["event"] == "context_compact")
    assert compact["item"] == task_id and compact["fill_before"] == pytest.approx(0.875)
    assert next(e for e in journal if e["event"] == "context_after_compaction")["fill"] == pytest.approx(0.10)
    assert not [e for e in journal if e["event"] == "task_killed"]
    assert any(r["t"] == "accept" and r["id"] == task_id for r in plan_records(project))


@pytest.mark.parametrize(
    ("first", "after"),
    [([100_000, 195_000], [1000]), ([100_000, 175_000], [170_000])],
    ids=["kill", "failed-compaction"],
)
def test_claude_context_kill_then_decompose(project, first, after):
    claude = require_installed("@anthropic-ai/claude-code", "claude")
    task_id = add_task(project, "Huge [pressure]")
    with MockModelServer(usage=PressureUsage(first, after)) as server:
        done = construct(project, "claude", claude, claude_env(project, server))
    assert done.returncode == 0, done.stdout + done.stderr
    killed = [e for e in events(project) if e["event"] == "task_killed"]
    assert killed[0]["item"] == task_id and killed[0]["kill_reason"] == "context_limit"
    accepted = sorted(r["name"] for r in plan_records(project) if r["t"] == "accept")
    assert accepted == ["Huge (part 1)", "Huge (part 2)"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_codex_hanging_on_a_dead_server_is_killed_within_its_timeout(project):
    codex = require_installed("@openai/codex", "codex")
    task_id = add_task(project, "Unreachable")
    env = codex_env(project, f"http://127.0.0.1:{free_port()}/v1")  # nothing listens there
    done = construct(project, "codex", codex, env, "--timeout", "5s", "--max-iterations", "1")
    assert done.returncode == 3, done.stdout + done.stderr  # the iteration budget, not a hang
    runs = [e for e in events(project) if e["event"] == "agent_end"]
    assert runs and all(e["stop_reason"] == "timeout" for e in runs)
    killed = next(e for e in events(project) if e["event"] == "task_killed")
    assert killed["item"] == task_id and killed["kill_reason"] == "timeout"
    assert not codex_processes_of(project, codex), "a codex process outlived its run"


def codex_processes_of(project: Path, codex: Path) -> list[str]:
    """The codex processes still alive that this test's run started: their environment names the
    test's scratch folder (its HOME). Other tests and other sessions on the machine run codex too."""
    found = subprocess.run(["pgrep", "-f", str(codex.parent.parent)], capture_output=True, text=True)
    ours = []
    for pid in found.stdout.split():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if str(project.parent).encode() in environ:
            ours.append(pid)
    return ours


RATE_LIMITED = "Rate limit reached for requests per minute. Please try again in 1s."


def limit_waits(root: Path) -> list[dict]:
    return [e for e in events(root) if e["event"] == "limit_wait"]


def test_claude_answered_429_waits_out_the_rate_limit_without_an_attempt(project):
    claude = require_installed("@anthropic-ai/claude-code", "claude")
    # CLAUDE_CODE_MAX_RETRIES=1: the CLI tries twice itself, then gives up with the 429.
    with MockModelServer(fail_status=429, fail_times=2, fail_message=RATE_LIMITED) as server:
        done = construct(project, "claude", claude, claude_env(project, server), "--max-attempts", "1")
    assert_complete(project, done, ["Parse input", "Print report"])
    (wait,) = limit_waits(project)
    assert wait["kind"] == "rate_limit" and wait["status"] == 429 and wait["seconds"] >= 1
    assert "waiting for the rate limit until" in done.stderr


def test_claude_usage_limit_with_a_reset_time_is_waited_until_then(project):
    claude = require_installed("@anthropic-ai/claude-code", "claude")
    reset = int(time.time()) + 3
    message = f"Claude AI usage limit reached|{reset}"
    with MockModelServer(fail_status=429, fail_times=2, fail_message=message) as server:
        done = construct(project, "claude", claude, claude_env(project, server), "--max-attempts", "1")
    assert_complete(project, done, ["Parse input", "Print report"])
    (wait,) = limit_waits(project)
    assert wait["kind"] == "usage_limit" and 0 < wait["seconds"] <= 5
    assert "waiting for the usage limit until" in done.stderr


def test_codex_answered_429_waits_out_the_rate_limit_without_an_attempt(project):
    codex = require_installed("@openai/codex", "codex")
    with MockModelServer(fail_status=429, fail_times=1000, fail_message=RATE_LIMITED) as server:
        server.fail_times = None
        env = codex_env(project, server.url + "/v1")
        # Codex retries a 429 itself (request_max_retries): let it give up at once, then lift the limit.
        (Path(env["CODEX_HOME"]) / "config.toml").write_text(
            (Path(env["CODEX_HOME"]) / "config.toml").read_text()
            + "request_max_retries = 0\nstream_max_retries = 0\n"
        )

        def lift_when_ralph_waits() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not (
                (project / "build" / "ralph-logs" / "events.jsonl").exists() and limit_waits(project)
            ):
                time.sleep(0.1)
            server.fail_status = None

        import threading

        lifter = threading.Thread(target=lift_when_ralph_waits, daemon=True)
        lifter.start()
        done = construct(project, "codex", codex, env, "--max-attempts", "1")
    assert_complete(project, done, ["Parse input", "Print report"])
    assert limit_waits(project)[0]["kind"] == "rate_limit"
