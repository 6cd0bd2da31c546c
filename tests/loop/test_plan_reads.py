"""A stage reads the plan once per step and passes it on: the plan the step read goes into the
agent run, and the plan the run left (read once, after it) goes on to what the stage does next.
Counted in the loop's own process over a real construct run; the agents' own `ralph` commands are
other processes. Transactions still read under the lock: that read is what makes them safe."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ralph.plan.loader as loader
from ralph.cli.main import cli
from ralph.usecases import tasks
from tests.support.gitrepo import git
from tests.support.specs import checked_spec

AGENT = """import os, subprocess, shlex
ralph = shlex.split(os.environ["RALPH_BIN"])
stage = os.environ["RALPH_STAGE"]
if stage == "BUILD":
    subprocess.run([*ralph, "task", "done"], check=True)
elif stage == "VERIFY":
    subprocess.run([*ralph, "task", "accept"], check=True)
"""


@pytest.mark.slow
def test_the_loop_reads_the_plan_at_most_nine_times_per_agent_run(repo: Path, tmp_path: Path, monkeypatch):
    (repo / "specs" / "app.md").write_text(checked_spec("App"))
    git(repo, "add", "specs/app.md")
    git(repo, "commit", "-qm", "spec")
    tasks.add(repo, [{"name": f"Task {n}", "no_code": True} for n in range(4)])
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    loads = []
    original = loader.load

    def counted(*args: Any, **kwargs: Any) -> Any:
        # Not the replay of a commit's operations (ralph.plan.replay), which loads an older plan
        # from git to check its trailers: unfenced, as here, ralph's own record is replayed too
        # (ralph.store.pending_ops), one load per plan commit, which no stage reads.
        if sys._getframe(1).f_globals.get("__name__") != "ralph.plan.replay":
            loads.append(1)
        return original(*args, **kwargs)

    for module in [m for name, m in sys.modules.items() if name.startswith("ralph.")]:
        if getattr(module, "load", None) is original:
            monkeypatch.setattr(module, "load", counted)
    monkeypatch.setenv("RALPH_SANDBOX", "off")
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    args = ["-C", str(repo), "construct", "specs/app.md", "--agent", "command", "--agent-cmd", command]
    result = CliRunner().invoke(cli, [*args, "--gate", "", "--parallel", "1"], catch_exceptions=False)
    assert result.exit_code == 0, result.stdout + result.stderr
    journal = (repo / "build" / "ralph-logs" / "events.jsonl").read_text().splitlines()
    runs = sum(1 for line in journal if json.loads(line)["event"] == "agent_end")
    assert runs == 9  # four builds, four verifiers, the spec check
    # 11.8 loads a run before BUILD and VERIFY passed their plan on; 8.1 after.
    assert len(loads) / runs <= 9, (len(loads), runs)
