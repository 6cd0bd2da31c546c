"""Issue 14, "small breaks": a closed pipe, a misspelt flag, JSON objects from query and check
(every command's --json: tests/cli/test_json_output.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_a_closed_pipe_ends_quietly_with_exit_0_and_no_crash_log(ralph, repo, tmp_path):
    for name in ("one", "two"):
        ralph("task", "add", "--name", name, "--no-commit")
    state = tmp_path / "state"
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line, as after `head -1` has its line
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ralph", "-C", str(repo), "task", "list"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "XDG_STATE_HOME": str(state)},
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, "")
    assert not state.exists()  # no crash log


def test_a_misspelt_flag_on_task_add_is_an_unknown_option_not_invalid_json(ralph):
    result = ralph("task", "add", "--name", "x", "--prio", "high", code=2)
    assert result.stderr.startswith("ralph: No such option '--prio'. Did you mean '--priority'?")
    assert "JSON" not in result.stderr and len(result.stderr.splitlines()) == 1
    assert ralph("task", "list").stdout == ""  # nothing written
    assert "No such option '--nmae'" in ralph("task", "add", "--nmae=x", code=2).stderr


def test_query_stage_and_iteration_as_json_are_objects(ralph):
    assert json.loads(ralph("query", "stage", "--json").stdout) == {"schema_version": 1, "stage": "PLAN"}
    assert json.loads(ralph("query", "iteration", "--json").stdout) == {"schema_version": 1, "iteration": 0}


def test_check_json_gives_problems_as_objects_with_the_record_id(ralph, repo: Path):
    (repo / "plan.jsonl").write_text(
        '{"t": "task", "id": "t-aaaaaa", "name": ""}\n{"t": "task", "id": "t-bbbbbb", "name": "ok"}\n{nope\n'
    )
    report = json.loads(ralph("check", "--json", code=2).stdout)
    assert report["problems"] == [
        {
            "file": "plan.jsonl",
            "line": 1,
            "message": "task field 'name' must be a non-empty string, not \"\"",
            "record_id": "t-aaaaaa",
        },
        {
            "file": "plan.jsonl",
            "line": 3,
            "message": "invalid JSON: Expecting property name enclosed in double quotes (column 2)",
            "record_id": None,
        },
    ]


def test_init_ignores_only_what_ralph_writes_not_the_projects_build_folder(bare_repo):
    from tests.support.cli import Ralph
    from tests.support.gitrepo import git

    Ralph(bare_repo)("init")
    (bare_repo / "build" / "ralph-logs" / "run.log").write_text("log\n")
    (bare_repo / "build" / "app.js").write_text("the project's own build output\n")
    ignored = git(bare_repo, "status", "--porcelain", "--ignored", "--untracked-files=all")
    assert "!! build/ralph-logs/" in ignored and "?? build/app.js" in ignored


def test_init_keeps_an_older_build_line_without_adding_the_logs_line(bare_repo):
    from tests.support.cli import Ralph

    (bare_repo / ".gitignore").write_text("/build/\n")
    Ralph(bare_repo)("init", "--no-commit")
    assert "ralph-logs" not in (bare_repo / ".gitignore").read_text()
