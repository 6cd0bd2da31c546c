"""The state commands end to end on a real repository: commits, status, exit codes."""

import json
from pathlib import Path

from tests.conftest import git


def test_add_done_accept_commits_each_change_alone(ralph, repo):
    (repo / "user-work.txt").write_text("not ralph's\n")
    git(repo, "add", "user-work.txt")
    (repo / "README").write_text("edited but unstaged\n")

    added = json.loads(
        ralph("task", "add", '{"name": "Add login form", "accept": "form renders"}', "--json").stdout
    )
    ralph("task", "done")
    ralph("task", "accept")

    log = git(repo, "log", "--format=%s", "-3").splitlines()
    assert log == [
        f"ralph: task accept {added['id']} Add login form",
        f"ralph: task done {added['id']} Add login form",
        f"ralph: task add {added['id']} Add login form",
    ]
    for commit in ("HEAD", "HEAD~1", "HEAD~2"):
        assert git(repo, "show", "--name-only", "--format=", commit).split() == ["plan.jsonl"]
    status = git(repo, "status", "--porcelain").splitlines()
    assert "A  user-work.txt" in status
    assert " M README" in status
    assert not any("plan.jsonl" in line for line in status)


def test_refused_and_invalid_exit_codes(ralph):
    assert "no task t-zzzzzz" in ralph("task", "done", "t-zzzzzz", code=1).stderr
    assert "invalid JSON" in ralph("task", "add", "{nope", code=2).stderr
    assert "nothing to accept" in ralph("task", "accept", code=1).stderr


def test_a_bug_is_one_line_with_exit_70_and_the_traceback_in_a_file(repo, monkeypatch):
    from ralph.ops import reads
    from tests.conftest import Ralph

    def broken(*args, **kwargs):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(reads, "status", broken)
    result = Ralph(repo)("status", code=70)
    assert result.stderr.startswith("ralph: internal error: ZeroDivisionError: simulated bug (traceback: ")
    assert len(result.stderr.splitlines()) == 1
    log = result.stderr.rsplit("traceback: ", 1)[1].rstrip(")\n")
    assert "ZeroDivisionError" in Path(log).read_text()


def test_error_columns_count_from_the_start_of_an_indented_line(ralph, repo):
    (repo / "plan.jsonl").write_text('   {"t": "task", "id": "t-zz0001", "name": x}\n')
    result = ralph("check", code=2)
    assert result.stderr == "plan.jsonl:1: invalid JSON: Expecting value (column 44)\n"


def test_task_add_takes_a_negative_number_as_bad_json_not_as_an_option(ralph):
    result = ralph("task", "add", "-5", code=2)
    assert result.stderr == 'ralph: task must be a JSON object with at least a "name", not int\n'
