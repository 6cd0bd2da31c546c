"""The state commands stay cheap: their import path never loads the construct loop, the agent
adapters, gitpython or pydantic. Checked on real `python -m ralph` processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# What `python -m ralph` does, plus a list of every module loaded, written when the process exits.
# -X importtime alone is not enough: it reports `import` statements, but not a module loaded by
# importlib.import_module, which is how the main group loads the loop's commands.
RUN_RALPH = """
import atexit, os, runpy, sys
def _write_modules():
    with open(os.environ["RALPH_TEST_MODULES"], "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
atexit.register(_write_modules)
sys.argv[0] = "ralph"
runpy.run_module("ralph", run_name="__main__", alter_sys=True)
"""

FORBIDDEN_PACKAGES = (
    "ralph.loop",
    "ralph.agents",
    "ralph.cli.construct",
    "git",
    "gitdb",
    "pydantic",
    "genai_prices",  # the loop's prices: some 0.3 s to load
    "httpx2",
    "ralph.plan.new_work",  # the loop's bound on new work, with dataclasses
    "ralph.plan.run_records",  # what the loop's stages write, four frozen dataclasses (some 3 ms)
)


def loaded_modules(root: Path, tmp_path: Path, *args: str) -> set[str]:
    """Run `ralph -C root args` in a process of its own; the names of every module it loaded."""
    listing = tmp_path / "modules.txt"
    listing.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", RUN_RALPH, "-C", str(root), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "RALPH_TEST_MODULES": str(listing)},
        check=False,
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr[-2000:])
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "ralph.cli.main" in imported  # the trace was read
    return imported | set(listing.read_text().split())


def forbidden(modules: set[str]) -> list[str]:
    return sorted(
        name
        for name in modules
        if any(name == package or name.startswith(package + ".") for package in FORBIDDEN_PACKAGES)
    )


# What BUILD, VERIFY, CHECK and the drafts change of a plan, loaded when first used (some 3 ms of
# `query next`'s 60): a read command never loads them.
LOOP_ONLY = {f"ralph.plan.{name}" for name in ("attempts", "verify_changes", "spec_records", "drafts")}


def test_state_commands_never_load_the_loop_the_adapters_gitpython_or_pydantic(repo, tmp_path):
    commands = [
        ("task", "add", "--name", "First"),
        ("query", "next"),
        ("task", "done"),
        ("status",),
        ("task", "list"),
        ("log",),
        ("log", "--json"),
        ("config", "set", "parallel", "2"),
        ("config", "list", "--origin"),
    ]
    loaded = {" ".join(args): loaded_modules(repo, tmp_path, *args) for args in commands}
    found = {command: forbidden(modules) for command, modules in loaded.items()}
    assert found == {" ".join(args): [] for args in commands}
    assert b'"s": "d"' in (repo / "plan.jsonl").read_bytes()  # the commands did their work
    # `query next` ran on one ready task, the plan test_read_commands_never_load_the_loops_own_transitions
    # reads: its process serves that check too.
    assert sorted(LOOP_ONLY & loaded["query next"]) == []


def test_the_check_sees_a_lazily_loaded_command(repo, tmp_path):
    modules = loaded_modules(repo, tmp_path, "construct", "--help")
    assert "ralph.cli.construct" in modules
    assert "ralph.cli.construct" in forbidden(modules)


def test_the_merge_driver_never_loads_the_loop_the_adapters_gitpython_or_pydantic(repo, tmp_path):
    versions = []
    for name, text in (("base", ""), ("ours", '{"t": "task", "id": "t-a", "name": "A"}\n'), ("theirs", "")):
        (tmp_path / name).write_text(text)
        versions.append(str(tmp_path / name))
    assert forbidden(loaded_modules(repo, tmp_path, "merge-driver", *versions, "plan.jsonl")) == []
    assert (tmp_path / "ours").read_text() == '{"t": "task", "id": "t-a", "name": "A"}\n'


def test_read_commands_never_load_the_loops_own_transitions(repo, tmp_path):
    """LOOP_ONLY stays unloaded by the read commands on a plan with a ready task (`query next` on
    such a plan: in test_state_commands_never_load_the_loop_the_adapters_gitpython_or_pydantic)."""
    from ralph.usecases import tasks

    tasks.add(repo, [{"name": "Ready"}])
    commands = [("query", "stage"), ("task", "list"), ("status",)]
    found = {" ".join(args): sorted(LOOP_ONLY & loaded_modules(repo, tmp_path, *args)) for args in commands}
    assert found == {" ".join(args): [] for args in commands}


# `python -m ralph`, noting each garbage collection made while the start-up had the collector off
# (ralph.cli.main._STARTING), and the collector's state when the process exits.
RUN_RALPH_COLLECTED = """
import atexit, gc, json, os, runpy, sys
starting = []
def _note(phase, info):
    main = sys.modules.get("ralph.cli.main")
    if phase == "start" and getattr(main, "_STARTING", False):
        starting.append(info["generation"])
gc.callbacks.append(_note)
def _write():
    with open(os.environ["RALPH_TEST_GC"], "w") as out:
        json.dump({"starting": starting, "on": gc.isenabled(), "frozen": gc.get_freeze_count()}, out)
atexit.register(_write)
sys.argv[0] = "ralph"
runpy.run_module("ralph", run_name="__main__", alter_sys=True)
"""


def test_a_command_loads_with_the_collector_off_and_runs_with_it_on_past_what_loading_made(repo, tmp_path):
    # Its passes over the modules a command loads freed nothing and cost 10-15% of a state
    # command's CPU; a long run (construct, watch) still collects what it makes.
    noted = tmp_path / "gc.json"
    for args in (("task", "list"), ("status",)):
        done = subprocess.run(
            [sys.executable, "-c", RUN_RALPH_COLLECTED, "-C", str(repo), *args],
            capture_output=True,
            text=True,
            env={**os.environ, "RALPH_TEST_GC": str(noted)},
            check=False,
        )
        assert done.returncode == 0, (args, done.stderr[-2000:])
        state = json.loads(noted.read_text())
        assert state["starting"] == [] and state["on"], (args, state)
        assert state["frozen"] > 1_000, (args, state)  # the start-up's objects, out of its passes
