"""Every command that prints data takes --json, and every JSON object it prints (each line of a
JSON-lines output) carries `schema_version` (docs/json-output.md). The commands are found by
walking the click tree, so a new command must be listed here as data or not."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ralph.text import SCHEMA_VERSION
from tests.support.cli import Ralph, leaf_commands
from tests.support.gitrepo import git, isolate_git, refreshed, slimmed
from tests.support.specs import checked_spec

# Commands whose output is not data: a script, git's merge driver (writes a file), an HTML page, a
# live view for a person (its data is build/ralph-logs/events.jsonl), a conversation with a person
# (spec draft: its data is the spec it commits and the questions in the plan).
NOT_DATA = {"completion", "merge-driver", "report", "spec draft", "watch"}
# Data commands that need what this module's repository lacks; their JSON is checked where it is.
ELSEWHERE = {
    "pr": "tests/loop/test_pull_request.py: a remote, a forge CLI and a run's report",
    "review": "tests/loop/stages/test_review.py: a branch with a change, and the scripted reviewers",
}

# Each data command's arguments; {issue} and {question} are ids made by the setup.
LOOP = ["--agent", "command", "--agent-cmd", "true", "--allow-dirty"]
INVOCATIONS: dict[str, list[str]] = {
    "agents": [],
    "answer": ["{question}", "SQLite"],
    "ask": ["SQLite or Postgres?", "--task", "t-bbbbbb"],
    "check": [],
    "config get": ["parallel"],
    "config list": ["--origin"],
    "config set": ["parallel", "2"],
    "config unset": ["max_attempts"],
    "doctor": [],
    "construct": ["specs/x.md", "--dry-run", "--gate", "", *LOOP],
    "init": [],
    "issue add": ["Is the cookie HttpOnly?"],
    "issue keep": ["{issue}", "a person decides"],
    "issue list": [],
    "issue resolve": ["{issue}"],
    "log": [],
    "plan": ["specs/x.md", *LOOP],
    "query issues": [],
    "query iteration": [],
    "query next": [],
    "query stage": [],
    "query tasks": [],
    "questions": [],
    "skills": [],
    "schema": [],
    "spec check": ["specs/x.md"],
    "spec new": ["login"],
    "status": [],
    "task accept": ["t-aaaaaa"],
    "task add": ['{"name": "y"}'],
    "task delete": ["t-bbbbbb"],
    "task done": ["t-cccccc"],
    "task list": [],
    "task prioritize": [],
    "task reject": ["t-aaaaaa", "not yet"],
    "task show": ["t-aaaaaa"],
}


def test_every_command_is_listed_as_data_or_not():
    assert set(leaf_commands()) == set(INVOCATIONS) | NOT_DATA | set(ELSEWHERE)


@pytest.fixture(scope="module")
def _prepared(
    tmp_path_factory: pytest.TempPathFactory, _initialized_repo: Path
) -> tuple[Path, dict[str, str]]:
    """A repository every command has something to print from, made once for the module: tasks
    (one done), a config record, an issue, a question. Returns it and the ids the commands take."""
    root = tmp_path_factory.mktemp("json") / "repo"
    shutil.copytree(_initialized_repo, root, symlinks=True)
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate_git(monkeypatch, tmp_path_factory.mktemp("gitconfig"))
        ralph = Ralph(root)
        tasks = [
            {"id": "t-aaaaaa", "name": "x"},
            {"id": "t-bbbbbb", "name": "y"},
            {"id": "t-cccccc", "name": "z"},
        ]
        ralph("task", "add", json.dumps(tasks))
        ralph("task", "done", "t-aaaaaa")
        ralph("config", "set", "max_attempts", "2")
        issue = json.loads(ralph("issue", "add", "a question", "--json").stdout)["id"]
        question = json.loads(ralph("ask", "Which port?", "--task", "t-bbbbbb", "--json").stdout)["id"]
        slimmed(root, pack=True)  # the commits' loose objects in one pack: each test copies it
    (root / "specs" / "x.md").write_text(checked_spec("x"))
    return root, {"{issue}": issue, "{question}": question}


@pytest.mark.parametrize("path", sorted(INVOCATIONS))
def test_each_data_command_takes_json_and_every_object_it_prints_has_the_schema_version(
    _prepared, tmp_path, path
):
    options = {opt for param in leaf_commands()[path].params for opt in getattr(param, "opts", [])}
    assert "--json" in options
    prepared, ids = _prepared
    root = tmp_path / "repo"
    shutil.copytree(prepared, root, symlinks=True)  # each command may change it: a copy of its own
    refreshed(root)
    args = [ids.get(arg, arg) for arg in INVOCATIONS[path]]
    result = Ralph(root)(*path.split(), *args, "--json", code=None)
    lines = result.stdout.splitlines()
    assert lines, (path, result.exit_code, result.stderr)
    for line in lines:
        printed = json.loads(line)
        assert isinstance(printed, dict) and printed["schema_version"] == SCHEMA_VERSION, (path, line)


def test_the_construct_report_gives_its_items_as_the_objects_the_doc_names(_prepared, tmp_path):
    """docs/json-output.md names the fields of `tasks`, `issues` and `open_questions`: a left task,
    an open issue and a question of the prepared plan carry exactly those."""
    doc = (Path(__file__).parents[2] / "docs" / "json-output.md").read_text(encoding="utf-8")
    row = next(line for line in doc.splitlines() if line.startswith("| `construct`, `plan`"))
    named = {
        field: json.loads("[" + row.split(f"`{field}` (", 1)[1].split("`", 2)[1].strip("{}") + "]")
        for field in ("tasks", "issues", "open_questions")
    }
    root = tmp_path / "repo"
    shutil.copytree(_prepared[0], root, symlinks=True)
    git(root, "add", "specs/x.md")
    git(root, "commit", "-qm", "x")
    result = Ralph(root)("plan", "specs/x.md", *LOOP, "--json", code=None)
    report = json.loads(result.stdout)
    assert report["tasks"] and report["issues"] and report["open_questions"], report
    for field, keys in named.items():
        assert all(list(item) == keys for item in report[field]), (field, report[field])
