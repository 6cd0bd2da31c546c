"""Smoke tests of the real Claude Code and Codex CLIs against the mock model server.

They install the CLIs from npm once (into .e2e-cache/, skipped when npm or the registry is not
reachable), point them at `MockModelServer` on 127.0.0.1, and check that the scripted "model"
really drives the CLI's shell tool and that the usage each CLI reports matches what the mock sent.
No ralph adapter is involved: the "ralph" in the prompts is a small script that logs its arguments.

    pytest -q -m slow tests/e2e/test_mock_cli_smoke.py -p no:cacheprovider
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.mock_model import MockModelServer, RalphStageBrain, Shell, Usage
from tests.support.npm_agents import require_installed

pytestmark = pytest.mark.slow

RUN_TIMEOUT = 120  # seconds per CLI run; a normal run here takes 2-5 s
TASK_ID = "t-abc123"
SCRUB_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "CLAUDECODE", "OPENAI_", "CODEX_", "RALPH_")


# ---------------------------------------------------------------------------------------------
# helpers


@dataclass
class Run:
    exit_code: int | None  # None: it was killed at the timeout
    stdout: str
    stderr: str
    seconds: float

    @property
    def events(self) -> list[dict]:
        found = []
        for line in self.stdout.splitlines():
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    found.append(json.loads(line))
        return found


def run_cli(command: list[str], env: dict[str, str], cwd: Path, timeout: float = RUN_TIMEOUT) -> Run:
    """Run a CLI in its own process group with stdin at EOF; on timeout kill the whole group."""
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        code = None
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return Run(code, stdout, stderr, time.monotonic() - started)


def base_env(home: Path) -> dict[str, str]:
    """The test's environment without any real provider settings, with a scratch HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB_PREFIXES)}
    env["HOME"] = str(home)
    return env


@dataclass
class Workspace:
    root: Path  # the CLI's working directory (stands for the repository)
    home: Path
    ralph: Path  # a fake ralph: logs each call's arguments to `calls`
    calls: Path

    def ralph_calls(self) -> list[list[str]]:
        if not self.calls.exists():
            return []
        return [shlex.split(line) for line in self.calls.read_text().splitlines()]


FAKE_RALPH = """#!/bin/sh
# A stand-in for ralph: records its arguments, answers `task add` like ralph does.
calls='{calls}'
line=""
for arg in "$@"; do line="$line '$(printf %s "$arg" | sed "s/'/'\\\\''/g")'"; done
echo "$line" >> "$calls"
if [ "$1 $2" = "task add" ]; then
  n=$(wc -l < "$calls" | tr -d ' ')
  echo "added t-fake$n: a task"
else
  echo "ok"
fi
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root, home = tmp_path / "repo", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    calls = tmp_path / "ralph-calls.txt"
    ralph = tmp_path / "bin" / "ralph"
    ralph.parent.mkdir()
    ralph.write_text(FAKE_RALPH.format(calls=calls))
    ralph.chmod(0o755)
    return Workspace(root, home, ralph, calls)


@pytest.fixture
def mock_server() -> Iterator[MockModelServer]:
    with MockModelServer(brain=RalphStageBrain()) as server:
        yield server


def build_prompt(ws: Workspace) -> str:
    """A prompt in the shape of ralph/loop/runs/templates/build.md."""
    return f"""Stage: BUILD. Task {TASK_ID}: Write the work file
Spec: specs/x.md

Implement this one task in the git repository at {ws.root}.

Acceptance criteria:
- work/{TASK_ID}.txt says ok

When the work is complete and its acceptance criteria hold, run:

    {ws.ralph} task done {TASK_ID}

After you finish, ralph runs the quality gate (`make verify`) itself and commits your changes.
"""


def plan_prompt(ws: Workspace) -> str:
    """A prompt in the shape of ralph/loop/runs/templates/plan.md."""
    return f"""Stage: PLAN. Spec: specs/x.md

You are planning the implementation of the spec in `specs/x.md`, in the git repository at {ws.root}.
Break the spec into tasks and add them with ralph:

    {ws.ralph} task add '{{"name": "...", "accept": "how to check it is done", "deps": ["t-..."]}}'

Useful: `{ws.ralph} query tasks` lists the tasks already in the plan; do not add duplicates.
"""


def claude_command(binary: Path, prompt: str, *extra: str) -> list[str]:
    return [
        str(binary),
        "-p",
        prompt,
        "--output-format",
        "stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
        "--max-turns",
        "10",
        *extra,
    ]


def claude_env(ws: Workspace, server_url: str, **extra: str) -> dict[str, str]:
    env = base_env(ws.home)
    env.update(
        IS_SANDBOX="1",
        ANTHROPIC_BASE_URL=server_url,
        ANTHROPIC_API_KEY="dummy",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        **extra,
    )
    return env


def codex_home(ws: Workspace, base_url: str, model: str = "mock-model") -> Path:
    home = ws.home / ".codex-scratch"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(
        f'model = "{model}"\n'
        'model_provider = "mock"\n'
        "\n"
        "[model_providers.mock]\n"
        'name = "mock"\n'
        f'base_url = "{base_url}"\n'
        'wire_api = "responses"\n'
        'env_key = "MOCK_API_KEY"\n'
    )
    return home


def codex_env(ws: Workspace, base_url: str) -> dict[str, str]:
    env = base_env(ws.home)
    env.update(CODEX_HOME=str(codex_home(ws, base_url)), MOCK_API_KEY="dummy")
    return env


def codex_command(binary: Path, prompt: str) -> list[str]:
    return [str(binary), "exec", "--json", "--dangerously-bypass-approvals-and-sandbox", prompt]


def explain(run: Run) -> str:
    head = f"exit {run.exit_code} after {run.seconds:.1f} s"
    return f"{head}\nstdout:\n{run.stdout[-4000:]}\nstderr:\n{run.stderr[-2000:]}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def claude() -> Path:
    return require_installed("@anthropic-ai/claude-code", "claude")


@pytest.fixture(scope="module")
def codex() -> Path:
    return require_installed("@openai/codex", "codex")


# ---------------------------------------------------------------------------------------------
# Claude Code


def test_claude_build_stage_runs_bash_and_reports_summed_usage(
    claude: Path, workspace: Workspace, mock_server: MockModelServer
) -> None:
    mock_server.usage = Usage(
        input_tokens_schedule=[1000, 2500, 4000],
        cache_creation_tokens=11,
        cache_read_tokens=222,
        output_tokens=33,
    )
    run = run_cli(
        claude_command(claude, build_prompt(workspace)),
        claude_env(workspace, mock_server.url),
        workspace.root,
    )
    assert run.exit_code == 0, explain(run)

    # The Bash tool really ran both commands the mock asked for.
    assert (workspace.root / "work" / f"{TASK_ID}.txt").read_text() == "ok"
    assert workspace.ralph_calls() == [["task", "done", TASK_ID]]

    # Only model calls reached the server (plus Bun's HEAD / connection warm-up), all streamed.
    model_requests = mock_server.model_requests("anthropic")
    assert len(model_requests) == 3
    assert all(r.path == "/v1/messages?beta=true" and r.body["stream"] is True for r in model_requests)
    assert {r.path for r in mock_server.requests} <= {"/", "/v1/messages?beta=true"}
    bash = next(t for t in model_requests[0].body["tools"] if t["name"] == "Bash")
    assert {"command", "description"} <= set(bash["input_schema"]["properties"])

    events = run.events
    init = events[0]
    assert (init["type"], init["subtype"]) == ("system", "init")
    assert "Bash" in init["tools"]
    result = events[-1]
    assert result["type"] == "result"
    assert result["is_error"] is False and result["subtype"] == "success", result
    assert result["num_turns"] == 3
    assert result["session_id"] == init["session_id"]

    # The result's usage is the SUM over every request of the run; each `assistant` event carries
    # its own request's usage, except output_tokens, which is only message_start's value (1).
    sent = mock_server.sent_usage("anthropic")
    assert len(sent) == 3
    totals = mock_server.totals("anthropic")
    usage = result["usage"]
    for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"):
        assert usage[key] == totals[key], (key, usage, sent)
    assert totals["input_tokens"] == 1000 + 2500 + 4000 and totals["output_tokens"] == 3 * 33
    (model_usage,) = result["modelUsage"].values()
    assert model_usage["inputTokens"] == totals["input_tokens"]
    assert model_usage["outputTokens"] == totals["output_tokens"]
    assert model_usage["contextWindow"] > 0
    assistants = [e for e in events if e["type"] == "assistant"]
    assert len(assistants) == 3
    for event, sent_usage in zip(assistants, sent, strict=True):
        reported = event["message"]["usage"]
        assert reported["input_tokens"] == sent_usage["input_tokens"]
        assert reported["cache_read_input_tokens"] == sent_usage["cache_read_input_tokens"]
        assert reported["cache_creation_input_tokens"] == sent_usage["cache_creation_input_tokens"]
        assert reported["output_tokens"] == 1  # message_start's count, not message_delta's
    tool_uses = [b for e in assistants for b in e["message"]["content"] if b["type"] == "tool_use"]
    assert [b["name"] for b in tool_uses] == ["Bash", "Bash"]


def test_claude_plan_stage_reads_spec_and_adds_chained_tasks(
    claude: Path, workspace: Workspace, mock_server: MockModelServer
) -> None:
    (workspace.root / "specs").mkdir()
    (workspace.root / "specs" / "x.md").write_text("# X\n\n- Parse the input\n- Print the report\n")
    run = run_cli(
        claude_command(claude, plan_prompt(workspace)), claude_env(workspace, mock_server.url), workspace.root
    )
    assert run.exit_code == 0, explain(run)
    assert run.events[-1]["is_error"] is False
    calls = workspace.ralph_calls()
    assert [call[:2] for call in calls] == [["task", "add"], ["task", "add"]]
    first, second = (json.loads(call[2]) for call in calls)
    assert first == {"name": "Parse the input", "accept": "work file says ok"}
    assert second == {"name": "Print the report", "accept": "work file says ok", "deps": ["t-fake1"]}
    assert [s.action for s in mock_server.sent][0] == Shell("cat specs/x.md", "ralph PLAN step 1")


@pytest.mark.parametrize("status", [400, 500])
def test_claude_http_error_is_reported_in_result(
    claude: Path, workspace: Workspace, mock_server: MockModelServer, status: int
) -> None:
    mock_server.fail_status = status
    # Claude Code retries 5xx (10 times by default, with backoff); one retry keeps this short.
    env = claude_env(workspace, mock_server.url, CLAUDE_CODE_MAX_RETRIES="1")
    run = run_cli(claude_command(claude, build_prompt(workspace)), env, workspace.root)
    assert run.exit_code == 1, explain(run)
    result = run.events[-1]
    assert result["type"] == "result"
    # subtype still says "success": only is_error and api_error_status tell.
    assert result["is_error"] is True and result["api_error_status"] == status, result
    assert result["subtype"] == "success"
    retries = [e for e in run.events if e.get("subtype") == "api_retry"]
    assert len(retries) == (1 if status >= 500 else 0)
    assert len(mock_server.model_requests()) == (2 if status >= 500 else 1)
    assert not workspace.ralph_calls()


# ---------------------------------------------------------------------------------------------
# Codex


def test_codex_build_stage_runs_exec_command_and_reports_summed_usage(
    codex: Path, workspace: Workspace, mock_server: MockModelServer
) -> None:
    mock_server.usage = Usage(
        input_tokens_schedule=[1200, 2400, 3600], cache_read_tokens=100, output_tokens=40, reasoning_tokens=5
    )
    env = codex_env(workspace, mock_server.url + "/v1")
    run = run_cli(codex_command(codex, build_prompt(workspace)), env, workspace.root)
    assert run.exit_code == 0, explain(run)

    assert (workspace.root / "work" / f"{TASK_ID}.txt").read_text() == "ok"
    assert workspace.ralph_calls() == [["task", "done", TASK_ID]]

    model_requests = mock_server.model_requests("openai")
    assert len(model_requests) == 3
    assert {r.path for r in mock_server.requests} == {"/v1/responses"}
    tools = {t.get("name"): t for t in model_requests[0].body["tools"]}
    assert tools["exec_command"]["parameters"]["required"] == ["cmd"]
    assert model_requests[0].headers.get("authorization") == "Bearer dummy"

    events = run.events
    thread = events[0]
    assert thread["type"] == "thread.started" and thread["thread_id"]
    commands = [e["item"] for e in events if e["type"] == "item.completed"]
    executed = [i for i in commands if i["type"] == "command_execution"]
    assert [i["exit_code"] for i in executed] == [0, 0]
    assert executed[1]["command"].endswith(f"task done {TASK_ID}'")  # wrapped: /bin/bash -lc '...'
    assert [i["text"] for i in commands if i["type"] == "agent_message"] == ["Done."]
    completed = [e for e in events if e["type"] == "turn.completed"]
    assert len(completed) == 1 and not [e for e in events if e["type"] == "turn.failed"]

    # turn.completed.usage sums every request of the turn; input_tokens includes the cached ones.
    totals = mock_server.totals("openai")
    usage = completed[0]["usage"]
    assert usage["input_tokens"] == totals["input_tokens"] == 1200 + 2400 + 3600
    assert usage["cached_input_tokens"] == totals["input_tokens_details.cached_tokens"] == 300
    assert usage["output_tokens"] == totals["output_tokens"] == 120
    assert usage["reasoning_output_tokens"] == totals["output_tokens_details.reasoning_tokens"] == 15

    # Per-request usage and the context window are only in the session file.
    rollouts = list((Path(env["CODEX_HOME"]) / "sessions").rglob("rollout-*.jsonl"))
    assert len(rollouts) == 1 and thread["thread_id"] in rollouts[0].name
    counts = [
        json.loads(line)["payload"]["info"]
        for line in rollouts[0].read_text().splitlines()
        if '"token_count"' in line and json.loads(line)["payload"].get("info")
    ]
    assert [c["last_token_usage"]["input_tokens"] for c in counts] == [1200, 2400, 3600]
    assert counts[-1]["total_token_usage"]["input_tokens"] == usage["input_tokens"]
    assert counts[-1]["model_context_window"] > 0


def test_codex_http_400_fails_the_turn(
    codex: Path, workspace: Workspace, mock_server: MockModelServer
) -> None:
    mock_server.fail_status = 400
    env = codex_env(workspace, mock_server.url + "/v1")
    run = run_cli(codex_command(codex, build_prompt(workspace)), env, workspace.root)
    assert run.exit_code == 1, explain(run)
    failed = [e for e in run.events if e["type"] == "turn.failed"]
    assert len(failed) == 1 and "mock failure (HTTP 400)" in failed[0]["error"]["message"]
    assert len(mock_server.model_requests()) == 1  # a 4xx is not retried
    assert not workspace.ralph_calls()


def test_codex_without_a_server_does_not_exit_by_itself(codex: Path, workspace: Workspace) -> None:
    """Nothing listens on the port: codex keeps reconnecting; we kill its group after ~10 s."""
    env = codex_env(workspace, f"http://127.0.0.1:{free_port()}/v1")
    run = run_cli(codex_command(codex, build_prompt(workspace)), env, workspace.root, timeout=10)
    assert run.exit_code is None, explain(run)  # still running at 10 s: killed by us
    assert run.seconds < 20
    types = [e["type"] for e in run.events]
    assert "thread.started" in types and "turn.completed" not in types
    reconnecting = [e for e in run.events if e["type"] == "error" and "Reconnecting" in e.get("message", "")]
    assert reconnecting, explain(run)
