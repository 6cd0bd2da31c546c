"""What a task's type lets its build change: docs only documentation, a test task only tests, a
refactor no existing test; a file the task's scope names is always allowed."""

from __future__ import annotations

import pytest

from ralph.plan.type_rules import breach, is_docs, is_test

AT_HEAD = {"tests/test_app.py", "app.py", "README.md"}


def at_head(paths: set[str]) -> set[str]:
    return paths & AT_HEAD


@pytest.mark.parametrize(
    ("path", "docs"),
    [
        ("README.md", True),
        ("pkg/NOTES.rst", True),
        ("deep/er/notes.txt", True),
        ("docs/diagram.svg", True),
        ("app.py", False),
        ("src/docs.py", False),
        ("mydocs/a.svg", False),
    ],
)
def test_documentation_files(path, docs):
    assert is_docs(path) is docs


@pytest.mark.parametrize(
    ("path", "test"),
    [
        ("tests/test_app.py", True),
        ("tests/fixtures/data.json", True),
        ("pkg/tests/helpers.py", True),
        ("test/x.c", True),
        ("src/test_a.py", True),
        ("src/a_test.py", True),
        ("server/a_test.go", True),
        ("web/app.test.ts", True),
        ("web/app.spec.js", True),
        ("spec/models/user_spec.rb", True),
        ("conftest.py", True),
        ("app.py", False),
        ("src/testing.py", False),
        ("contest.py", False),
    ],
)
def test_test_files(path, test):
    assert is_test(path) is test


def test_a_docs_task_may_change_documentation_alone():
    found = breach("docs", None, {"README.md", "app.py", "lib/x.py"}, at_head)
    assert found is not None and found.files == ["app.py", "lib/x.py"]
    assert found.rule == "a docs task may change documentation files only"
    assert breach("docs", None, {"README.md", "docs/a.png"}, at_head) is None


def test_docs_paths_and_the_scope_widen_what_a_docs_task_may_change():
    assert breach("docs", None, {"site/index.html"}, at_head, docs_paths=("site/**",)) is None
    assert breach("docs", ["app.py"], {"README.md", "app.py"}, at_head) is None
    found = breach("docs", ["app.py"], {"app.py", "lib.py"}, at_head)
    assert found is not None and found.files == ["lib.py"]


def test_a_test_task_may_change_test_files_alone():
    found = breach("test", None, {"tests/test_new.py", "app.py"}, at_head)
    assert found is not None and found.files == ["app.py"]
    assert found.rule == "a test task may change test files only"
    assert breach("test", None, {"tests/test_app.py", "tests/test_new.py"}, at_head) is None


def test_a_refactor_may_add_tests_but_not_change_or_delete_existing_ones():
    # tests/test_app.py is at HEAD: changed or deleted, the build changed it; the new one is allowed
    found = breach("refactor", None, {"app.py", "tests/test_app.py", "tests/test_new.py"}, at_head)
    assert found is not None and found.files == ["tests/test_app.py"]
    assert found.rule == "a refactor may not change or delete existing test files"
    assert breach("refactor", None, {"app.py", "tests/test_new.py"}, at_head) is None
    assert breach("refactor", ["tests/test_app.py"], {"tests/test_app.py"}, at_head) is None


@pytest.mark.parametrize("task_type", ["feature", "bugfix", "chore", None, "a newer ralph's type"])
def test_other_types_may_change_anything(task_type):
    assert breach(task_type, None, {"app.py", "tests/test_app.py", "README.md"}, at_head) is None
