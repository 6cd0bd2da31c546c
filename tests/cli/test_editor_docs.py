"""docs/editors.md's editor recipes work against the real `ralph check` and `ralph schema`: the VS Code
problem matcher finds each problem's file and line, and the schema check flags a bad line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.support.cli import ralph_process

DOC = (Path(__file__).resolve().parents[2] / "docs" / "editors.md").read_text()
BAD_LINE = '{"t": "task", "id": "t-bbbbbb", "name": "", "priority": "urgent"}\n'


def block(language: str, containing: str) -> str:
    (found,) = [b for b in re.findall(rf"```{language}\n(.*?)```", DOC, re.S) if containing in b]
    return found


def test_the_vs_code_problem_matcher_reads_every_problem_ralph_check_prints(repo):
    (repo / "plan.jsonl").write_text('{"t": "task", "id": "t-aaaaaa", "name": "A"}\n' + BAD_LINE + "{oops\n")
    printed = ralph_process(repo, "check").stderr.splitlines()
    matcher = json.loads(block("json", "problemMatcher"))["tasks"][0]["problemMatcher"]
    pattern = matcher["pattern"]
    found = [re.match(pattern["regexp"], line) for line in printed]
    assert len(printed) >= 2 and all(found), printed
    matches = [match for match in found if match]
    lines = {int(match.group(pattern["line"])) for match in matches}
    assert lines == {2, 3} and {match.group(pattern["file"]) for match in matches} == {"plan.jsonl"}


def test_the_schema_recipe_flags_the_bad_line_by_number(repo):
    (repo / "plan.jsonl").write_text('{"t": "task", "id": "t-aaaaaa", "name": "A"}\n' + BAD_LINE)
    recipe = block("sh", "ralph schema > plan.schema.json")
    ralph = Path(sys.executable).with_name("ralph")
    script = recipe.replace("ralph schema", f"{ralph} schema").replace("python3 -", f"{sys.executable} -")
    done = subprocess.run(["sh", "-c", script], cwd=repo, capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.splitlines() and all(
        line.startswith("plan.jsonl:2: ") for line in done.stdout.splitlines()
    )
    assert "'urgent' is not valid" in done.stdout and "'' should be non-empty" in done.stdout
