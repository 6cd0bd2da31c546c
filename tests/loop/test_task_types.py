"""What a task's type allows, checked by a real construct run with the scripted agent: a docs task
whose first build also changed code, and a refactor whose first build also changed an existing
test, each fail that attempt with `type_violation` naming the file, and are built once the file
is put back; so does a test task whose first build also changed code, while one that only added
a test passes at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralph.usecases import tasks
from tests.support.construct import construct, events
from tests.support.gitrepo import git


# `make test` has it in process, in test_stages_in_process.py:
# test_a_docs_task_that_changed_code_fails_type_violation_naming_the_files,
# test_what_a_type_does_not_allow_fails_the_attempt and test_what_a_type_or_the_scope_allows_is_built;
# which paths HEAD has (an existing test file) from real git in tests/store/git/test_changes.py:
# test_at_head_names_the_paths_head_has_an_entry_for; a real build failing on the files it changed
# in tests/loop/stages/test_build_parallel.py: test_a_build_outside_its_scope_fails_with_the_files_
# named. This runs with the slow suites.
@pytest.mark.slow
def test_a_docs_task_that_changed_code_and_a_refactor_that_changed_a_test_fail_then_are_built(
    project: Path,
):
    (project / "tests").mkdir()
    (project / "tests" / "test_seed.py").write_text("def test_seed():\n    pass\n")
    git(project, "add", "tests/test_seed.py")
    git(project, "commit", "-qm", "a test that exists")
    added = tasks.add(
        project,
        [
            {"name": "Document it [stray-once:lib.py]", "accept": "ok", "type": "docs"},
            {"name": "Reshape it [stray-once:tests/test_seed.py]", "accept": "ok", "type": "refactor"},
        ],
    )
    docs, refactor = (task["id"] for task in added)

    done = construct(project)

    assert done.returncode == 0, done.stdout + done.stderr
    failed = {(e["item"], e["verdict"]) for e in events(project) if e["event"] == "build_failed"}
    assert failed == {(docs, "type_violation"), (refactor, "type_violation")}
    said = done.stdout + done.stderr
    assert "a docs task may change documentation files only" in said and "lib.py" in said
    assert "a refactor may not change or delete existing test files" in said
    for task in (docs, refactor):  # built on the second attempt, the stray change put back
        (build,) = [
            line.split()[0]
            for line in git(project, "log", "--format=%H %s").splitlines()
            if f"ralph(build): {task} " in line and "attempt" not in line
        ]
        assert git(project, "show", "--format=", "--name-only", build).split() == [
            "plan.jsonl",
            f"work/{task}.txt",
        ]
    assert not (project / "lib.py").exists()
    assert (project / "tests" / "test_seed.py").read_text() == "def test_seed():\n    pass\n"


def build_commit(project: Path, task: str) -> str:
    """The commit of the task's build that passed (a failed attempt's subject says `attempt`)."""
    (build,) = [
        line.split()[0]
        for line in git(project, "log", "--format=%H %s").splitlines()
        if f"ralph(build): {task} " in line and "attempt" not in line
    ]
    return build


# `make test` has it in process, in test_stages_in_process.py: test_what_a_type_does_not_allow_fails_
# the_attempt[test] and test_what_a_type_or_the_scope_allows_is_built[test]; what git shows of a real
# build, as for the test above. This runs with the slow suites.
@pytest.mark.slow
def test_a_test_task_that_changed_code_fails_then_is_built_and_one_that_only_added_tests_passes(
    project: Path,
):
    added = tasks.add(
        project,
        [
            {"name": "Test the parser [tests-only] [stray-once:lib.py]", "accept": "ok", "type": "test"},
            {"name": "Test the report [tests-only]", "accept": "ok", "type": "test"},
        ],
    )
    strayed, clean = (task["id"] for task in added)

    done = construct(project)

    assert done.returncode == 0, done.stdout + done.stderr
    failed = [(e["item"], e["verdict"]) for e in events(project) if e["event"] == "build_failed"]
    assert failed == [(strayed, "type_violation")]  # the clean one passed its first build
    said = done.stdout + done.stderr
    assert "a test task may change test files only" in said and "lib.py" in said
    for task in (strayed, clean):  # each accepted, its build a test file and nothing else
        assert f"{task} Test the" in said.split("accepted (", 1)[1]
        test_file = f"tests/test_{task.replace('-', '_')}.py"
        assert git(project, "show", "--format=", "--name-only", build_commit(project, task)).split() == [
            "plan.jsonl",
            test_file,
        ]
    assert not (project / "lib.py").exists()
