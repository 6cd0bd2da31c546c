"""`ralph completion`: the scripts click writes, and the plan's ids offered on Tab (through the
real bash script where bash is installed)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ralph.cli.main import cli
from tests.support.cli import Ralph

BIN = str(Path(sys.executable).parent)  # where `ralph` is installed, beside this interpreter


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "complete -o nosort -F _ralph_completion ralph"),
        ("zsh", "#compdef ralph"),
        ("fish", "complete"),
    ],
)
def test_prints_clicks_script_for_each_shell(ralph: Ralph, shell: str, marker: str):
    script = ralph("completion", shell).stdout
    assert marker in script and f"_RALPH_COMPLETE={shell}_complete" in script


def test_an_unknown_shell_is_one_line(ralph: Ralph):
    done = ralph("completion", "tcsh", code=2)
    assert done.stderr.count("\n") == 1 and "'tcsh' is not one of" in done.stderr


def complete(root: Path, words: str, shell: str = "bash") -> list[str]:
    """What `ralph` answers to the completion request its script sends for these words: the real
    CLI in this process, in `root` (the bash script's own run of the program is the bash test's)."""
    env = {"_RALPH_COMPLETE": f"{shell}_complete", "COMP_WORDS": words}
    env["COMP_CWORD"] = str(len(words.split(" ")) - 1)
    with contextlib.chdir(root):
        done = CliRunner().invoke(cli, [], env=env, prog_name="ralph", catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return [line for line in done.stdout.splitlines() if line]


@pytest.fixture
def planned(ralph: Ralph) -> Path:
    ralph("task", "add", '[{"id": "t-login", "name": "Login"}, {"id": "t-logout", "name": "Logout"}]')
    ralph("task", "add", '{"id": "t-other", "name": "Other"}')
    (ralph.root / "plan.jsonl").open("a").write('{"t": "issue", "id": "i-cookie", "text": "Cookie?"}\n')
    return ralph.root


def test_task_and_issue_ids_come_from_the_plan(planned: Path):
    assert complete(planned, "ralph task done t-log") == ["plain,t-login", "plain,t-logout"]
    assert complete(planned, "ralph task reject t-o") == ["plain,t-other"]
    assert complete(planned, "ralph log --task t-ot") == ["plain,t-other"]
    assert complete(planned, "ralph issue resolve ") == ["plain,i-cookie"]
    assert complete(planned, "ralph task show t-lo", "zsh") == [
        "plain",
        "t-login",
        "Login",
        "plain",
        "t-logout",
        "Logout",
    ]


def test_a_broken_plan_or_no_plan_offers_nothing_and_never_fails(planned: Path, tmp_path: Path):
    (planned / "plan.jsonl").open("a").write("{broken\n")
    assert complete(planned, "ralph task done t-log") == ["plain,t-login", "plain,t-logout"]
    assert complete(tmp_path, "ralph task done t-") == []


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_bash_script_completes_ids_in_bash(planned: Path):
    script = (
        'eval "$(ralph completion bash)"; COMP_WORDS=(ralph task accept t-log); COMP_CWORD=3;'
        ' _ralph_completion ralph; echo "${COMPREPLY[@]}"'
    )
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", "-c", script], cwd=planned, env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["t-login", "t-logout"]


def test_agent_names_and_config_keys_complete(tmp_path: Path):
    assert complete(tmp_path, "ralph construct specs/x.md --agent c") == [
        "plain,claude",
        "plain,codex",
        "plain,command",
    ]
    assert complete(tmp_path, "ralph plan --agent ") == [
        f"plain,{name}" for name in ("claude", "codex", "opencode", "gemini", "command")
    ]
    assert sorted(complete(tmp_path, "ralph config set max_")) == [
        f"plain,max_{key}"
        for key in (
            "agent_failures",
            "attempts",
            "cost_usd",
            "decompose_depth",
            "iterations",
            "minutes",
            "new_items",
            "rebuilds",
            "tokens",
            "wait_ms",
        )
    ]
    assert complete(tmp_path, "ralph config get gat") == ["plain,gate", "plain,gate_timeout_ms"]
    assert complete(tmp_path, "ralph config unset comm") == ["plain,commit"]
    assert complete(tmp_path, "ralph config set agent o") == ["plain,opencode"]
    assert complete(tmp_path, "ralph config set run_hooks ") == ["plain,true", "plain,false"]
    assert complete(tmp_path, "ralph config set parallel ") == []
