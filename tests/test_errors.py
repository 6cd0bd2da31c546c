"""The errors ralph reports: the exit code each kind maps to (agents and scripts branch on them),
and how a malformed plan's problems are told in one line."""

from __future__ import annotations

import pytest

from ralph import errors
from ralph.errors import PlanInvalid, Problem


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (errors.Refused, 1),
        (errors.GitError, 1),
        (errors.InvalidInput, 2),
        (errors.Busy, 75),
        (errors.RemoteOffline, 11),
        (errors.RemoteRejected, 11),
    ],
)
def test_each_kind_of_error_has_its_exit_code(error, code):
    assert error("x").exit_code == code and isinstance(error("x"), errors.RalphError)


def test_a_problem_is_located_by_file_and_line():
    problem = Problem("plan.jsonl", 3, "duplicate id t-a (also on line 1)")
    assert str(problem) == "plan.jsonl:3: duplicate id t-a (also on line 1)"
    assert repr(problem) == "Problem('plan.jsonl:3: duplicate id t-a (also on line 1)')"


def test_an_invalid_plan_is_told_by_its_first_problem_and_how_many_more_there_are():
    one = [Problem("plan.jsonl", 2, "not JSON")]
    assert str(PlanInvalid(one)) == "plan.jsonl:2: not JSON"
    three = [*one, Problem("plan.jsonl", 5, "unknown task"), Problem("plan.jsonl", 9, "a cycle")]
    invalid = PlanInvalid(three)
    assert str(invalid) == "plan.jsonl:2: not JSON (and 2 more problems; run 'ralph check')"
    assert invalid.problems == three and invalid.exit_code == 2


def test_a_code_conflict_names_its_files_and_is_a_remote_error():
    conflict = errors.CodeConflict("the build conflicts with the remote", ["src/a.py", "b.txt"])
    assert conflict.files == ["src/a.py", "b.txt"] and conflict.exit_code == 11
    assert str(conflict) == "the build conflicts with the remote"


def test_a_full_disk_is_told_by_gits_words_once_and_by_the_errno_of_ralphs_own_writes():
    import errno

    from ralph.errors import CodeConflict, GitError, disk_full

    assert disk_full(GitError("git add failed: fatal: unable to write new index: No space left on device"))
    assert disk_full(GitError("git commit failed: error: Disk quota exceeded"))
    assert not disk_full(GitError("git add failed: fatal: pathspec 'x' did not match any files"))
    assert not disk_full(CodeConflict("conflict", ["a.py"]))
    assert disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert disk_full(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert not disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not disk_full(ValueError("No space left on device"))  # only git's error is read for its words
