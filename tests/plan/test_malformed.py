"""Hand-edited plan.jsonl files that are broken: every command refuses with the first problem's
line, exit code 2, and touches nothing; `ralph check` lists every problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import ralph_in_process, ralph_process
from tests.support.gitrepo import git

CORPUS = Path(__file__).parents[1] / "data" / "malformed"

# file -> (line of the first problem, part of its message)
EXPECTED = {
    "accepted_task_still_live": (3, "task t-bbbbbb is also accepted (line 1)"),
    "after_blank_lines": (6, "invalid JSON: Expecting property name"),
    "bad_id": (2, "task field 'id' must be a string matching ^t-"),
    "bad_json_trailing_comma": (2, "invalid JSON"),
    "bad_priority": (2, 'task field \'priority\' must be one of "high", "medium", "low"'),
    "bad_status": (2, 'task field \'s\' must be one of "p", "d", "b", not "done"'),
    "bom_first_line": (1, "the file starts with a UTF-8 byte order mark (BOM)"),
    "bool_for_int": (2, "config field 'timeout_ms' must be an integer or a duration (\"90s\", "),
    "crlf_lines_bad_third": (3, "task is missing field 'name'"),
    "cycle_of_three": (2, "dependency cycle: t-one -> t-two -> t-three -> t-one"),
    "dependency_on_itself": (2, "task t-bbbbbb depends on itself"),
    "deps_not_a_list": (2, "task field 'deps' must be a list"),
    "duplicate_id": (3, "duplicate id t-aaaaaa (also on line 1)"),
    "duplicate_issue_and_task_id": (2, "duplicate id i-aaaaaa (also on line 1)"),
    "empty_name": (2, "task field 'name' must be a non-empty string, not \"\""),
    "empty_type": (2, 'record has no type: every line needs a "t" key'),
    "float_for_int": (2, "task field 'attempts' must be an integer or null, not 1.0"),
    "fraction_out_of_range": (1, "config field 'context_warn' must be a number <= 1, not 1.5"),
    "id_with_trailing_newline": (2, "task field 'id' must be a string matching"),
    "infinity_in_unknown_field": (2, "invalid JSON: Infinity is not JSON"),
    "invalid_utf8": (2, "not valid UTF-8"),
    "issue_with_task_id": (2, "issue field 'id' must be a string matching ^i-"),
    "merge_conflict": (2, "unresolved git merge conflict marker"),
    "missing_required_field": (3, "task is missing field 'name'"),
    "missing_t": (2, 'record has no type: every line needs a "t" key'),
    "nan_fraction": (2, "invalid JSON: NaN is not JSON (use null or a number)"),
    "nested_too_deep": (2, "invalid JSON: nested deeper than 64 levels"),
    "negative_iteration": (2, "state field 'iteration' must be a number >= 0, not -1"),
    "non_object_line": (2, "each line must be a JSON object, not list"),
    "null_status": (2, 'task field \'s\' must be one of "p", "d", "b", not null'),
    "raw_cr_inside_a_line": (2, "invalid JSON: Invalid control character"),
    "reject_without_reason": (2, "reject is missing field 'reason'"),
    "several_problems": (3, "task field 's' must be one of"),
    "string_line": (2, "each line must be a JSON object, not str"),
    "truncated_line": (3, "invalid JSON: Unterminated string"),
    "two_configs": (3, "a second config record (the first is on line 1); keep one"),
    "two_states": (3, "a second state record (the first is on line 1); keep one"),
    "unknown_dependency": (2, "task t-bbbbbb depends on unknown task t-nowhere"),
    "wrong_type_name": (2, "task field 'name' must be a non-empty string, not 42"),
}


def test_the_corpus_and_the_table_match():
    assert sorted(path.stem for path in CORPUS.glob("*.jsonl")) == sorted(EXPECTED)
    assert len(EXPECTED) >= 20


def _commit_plan(root: Path, data: bytes) -> str:
    (root / "plan.jsonl").write_bytes(data)
    git(root, "commit", "-qm", "hand-edited plan", "--", "plan.jsonl")  # tracked since `ralph init`
    return git(root, "rev-parse", "HEAD").strip()


def _assert_one_line_at(stderr: str, line: int, message: str) -> None:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].removeprefix("ralph: ").startswith(f"plan.jsonl:{line}: "), stderr
    assert message in lines[0], stderr


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_commands_refuse_a_malformed_plan_and_change_nothing(ralph, repo, name):
    line, message = EXPECTED[name]
    data = (CORPUS / f"{name}.jsonl").read_bytes()
    head = _commit_plan(repo, data)

    writer = ralph_in_process(repo, "task", "add", '{"name":"x"}')
    assert writer.returncode == 2, (writer.returncode, writer.stdout, writer.stderr)
    assert writer.stdout == ""
    _assert_one_line_at(writer.stderr, line, message)
    reader = ralph("query", "next", code=2)
    assert reader.stdout == ""
    _assert_one_line_at(reader.stderr, line, message)
    # `ralph check` lists every problem, the first one first (on the repository made for the
    # commands above: a repository of its own per file cost a third of this module's CPU).
    checked = ralph("check", code=2).stderr.splitlines()[0]
    assert checked.startswith(f"plan.jsonl:{line}: ") and message in checked, checked

    assert (repo / "plan.jsonl").read_bytes() == data
    # HEAD where it was and plan.jsonl as committed, in one git run: `# branch.oid`, no entry.
    status = git(repo, "status", "--porcelain=v2", "--branch", "--", "plan.jsonl").splitlines()
    assert f"# branch.oid {head}" in status and [s for s in status if not s.startswith("#")] == [], status


def test_ralph_as_a_program_refuses_a_malformed_plan_with_exit_2_and_one_line(repo):
    head = _commit_plan(repo, (CORPUS / "cycle_of_three.jsonl").read_bytes())
    writer = ralph_process(repo, "task", "add", '{"name":"x"}')
    assert writer.returncode == 2 and writer.stdout == "", (writer.returncode, writer.stderr)
    _assert_one_line_at(writer.stderr, *EXPECTED["cycle_of_three"])
    assert git(repo, "rev-parse", "HEAD").strip() == head and git(repo, "status", "--porcelain") == ""


# `make test` has it on the committed file of each case, in
# test_commands_refuse_a_malformed_plan_and_change_nothing
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_check_reports_the_first_problem_first(ralph, repo, name):
    line, message = EXPECTED[name]
    (repo / "plan.jsonl").write_bytes((CORPUS / f"{name}.jsonl").read_bytes())
    result = ralph("check", code=2)
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"plan.jsonl:{line}: ") and message in first, result.stderr


def test_check_lists_every_problem_of_a_file(ralph, repo):
    data = (CORPUS / "several_problems.jsonl").read_bytes()
    (repo / "plan.jsonl").write_bytes(data)
    result = ralph("check", code=2)
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        'plan.jsonl:3: task field \'s\' must be one of "p", "d", "b", not "x"',
        "plan.jsonl:4: invalid JSON: Expecting property name enclosed in double quotes (column 2)",
        "plan.jsonl:6: a second config record (the first is on line 1); keep one",
        "plan.jsonl:7: issue field 'text' must be a non-empty string, not \"\"",
        "plan.jsonl:8: unresolved git merge conflict marker; resolve the conflict, then run 'ralph check'",
    ]
    as_json = ralph("check", "--json", code=2)
    report = json.loads(as_json.stdout)
    assert report["ok"] is False
    assert [(p["file"], p["line"]) for p in report["problems"]] == [
        ("plan.jsonl", n) for n in (3, 4, 6, 7, 8)
    ]
    refused = ralph("task", "add", "--name", "x", code=2)
    assert "(and 4 more problems; run 'ralph check')" in refused.stderr
    assert (repo / "plan.jsonl").read_bytes() == data


def test_check_lists_every_conflict_marker(ralph, repo):
    (repo / "plan.jsonl").write_bytes((CORPUS / "merge_conflict.jsonl").read_bytes())
    lines = ralph("check", code=2).stderr.splitlines()
    assert [line.split(":")[1] for line in lines] == ["2", "4", "6"]
    assert all("unresolved git merge conflict marker" in line for line in lines)


def test_fixing_the_file_by_hand_makes_commands_work_again(ralph, repo):
    _commit_plan(repo, (CORPUS / "duplicate_id.jsonl").read_bytes())
    ralph("task", "add", "--name", "x", code=2)
    fixed = (
        (CORPUS / "duplicate_id.jsonl")
        .read_bytes()
        .replace(b'"t-aaaaaa", "name": "Again"', b'"t-cc", "name": "A"')
    )
    (repo / "plan.jsonl").write_bytes(fixed)
    assert "plan.jsonl: ok (3 records)" in ralph("check").stdout
    ralph("task", "add", "--name", "x")
    assert (repo / "plan.jsonl").read_bytes().startswith(fixed)


def test_a_raw_carriage_return_does_not_split_a_line(ralph, repo):
    (repo / "plan.jsonl").write_bytes((CORPUS / "raw_cr_inside_a_line.jsonl").read_bytes())
    lines = ralph("check", code=2).stderr.splitlines()
    assert [line.split(":")[1] for line in lines] == ["2", "3"]  # not 2 and 4


def test_rewritten_and_added_lines_of_a_crlf_file_stay_crlf(ralph, repo):
    data = (
        b'{"t": "task", "id": "t-aaaaaa", "name": "First"}\r\n'
        b'{"t": "task", "id": "t-bbbbbb", "name": "B"}\r\n'
    )
    _commit_plan(repo, data)
    ralph("task", "done", "t-aaaaaa")
    ralph("task", "add", "--name", "Third")
    lines = (repo / "plan.jsonl").read_bytes().split(b"\n")[:-1]
    assert len(lines) == 3 and all(line.endswith(b"\r") for line in lines)
    assert lines[1] == data.split(b"\n")[1]  # the untouched line is byte-identical


def test_a_cycle_through_ten_thousand_tasks_is_one_short_line(ralph, repo):
    count = 10_000
    lines = [
        f'{{"t": "task", "id": "t-k{n:05d}", "name": "n", "deps": ["t-k{(n + 1) % count:05d}"]}}\n'
        for n in range(count)
    ]
    (repo / "plan.jsonl").write_text("".join(lines))
    result = ralph("check", code=2)
    assert len(result.stderr.splitlines()) == 1 and len(result.stderr) < 1000, result.stderr[:300]
    assert "dependency cycle of 10000 tasks: t-k" in result.stderr and "(9985 more)" in result.stderr
