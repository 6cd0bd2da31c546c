"""File scope patterns: which files a task may change, and which tasks may not build at once."""

from __future__ import annotations

import pytest

from ralph.plan.scope import coverage, coverage_line, coverage_total, matches, outside, overlaps, total_line


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("src/auth/**", "src/auth/login.py", True),
        ("src/auth/**", "src/auth/deep/er/x.py", True),
        ("src/auth/**", "src/authz/x.py", False),
        ("src/**/test_*.py", "src/test_a.py", True),
        ("src/**/test_*.py", "src/a/b/test_a.py", True),
        ("src/**/test_*.py", "src/a/b/a_test.py", False),
        ("*.md", "README.md", True),
        ("*.md", "docs/README.md", False),  # * stays within one segment
        ("tests/test_?.py", "tests/test_a.py", True),
        ("tests/test_?.py", "tests/test_ab.py", False),
        ("a+b/[x].py", "a+b/[x].py", True),  # regex and glob brackets are literal text
        ("a+b/[x].py", "aab/x.py", False),
        ("src/", "src/app/main.py", True),  # a folder: everything under it, as `src/**`
        ("src/", "srcs/main.py", False),
        ("/", "anything.py", False),  # no folder named: nothing
    ],
)
def test_patterns_match_by_path_segment(pattern, path, expected):
    assert matches(pattern, path) is expected


def test_outside_lists_only_files_no_pattern_allows_and_no_scope_allows_all():
    assert outside(["src/**", "README.md"], {"src/a.py", "README.md", "setup.py", "docs/x.md"}) == [
        "docs/x.md",
        "setup.py",
    ]
    assert outside(None, {"anything"}) == [] and outside([], {"anything"}) == []


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (["src/auth/**"], ["src/auth/login.py"], True),
        (["src/auth/**"], ["src/db/**"], False),
        (["src/*.py"], ["src/a.py"], True),
        (["src/*.py"], ["lib/a.py"], False),
        (["a.py"], ["b.py"], False),
        (["a.py", "docs/**"], ["docs/x.md"], True),
        (["src/a/b.py"], ["src/a"], False),  # a file and a folder of another depth
        (["src/a/b.py"], ["src/a/"], True),  # the folder holds the file
        (["**"], ["anything/at/all"], True),
        (None, ["src/**"], False),  # no scope: not held apart (a conflict shows when merging)
    ],
)
def test_overlap_errs_towards_keeping_builds_apart(a, b, expected):
    assert overlaps(a, b) is expected and overlaps(b, a) is expected


def test_coverage_puts_the_scope_beside_the_files_a_build_changed():
    row = coverage("t-1", ["src/**", "docs/a.md", "README.md"], ["src/x.py", "README.md", "other.py"])
    assert row is not None
    assert row.to_json() == {
        "task": "t-1",
        "scope": ["src/**", "docs/a.md", "README.md"],
        "touched": ["README.md", "src/x.py"],  # planned and touched
        "untouched": ["docs/a.md"],  # planned and untouched: no changed file matches it
        "unplanned": ["other.py"],  # touched and unplanned
    }
    assert coverage_line(row) == (
        "t-1 scope src/**, docs/a.md, README.md: planned and touched README.md, src/x.py;"
        " planned and untouched docs/a.md; touched and unplanned other.py"
    )


@pytest.mark.parametrize(
    ("scope", "files"),
    [(None, ["a.py"]), ([], ["a.py"]), (["a.py"], None), (["a.py"], []), ("a.py", ["a.py"]), ([1], ["a"])],
)
def test_no_coverage_without_a_scope_and_a_build(scope, files):
    assert coverage("t-1", scope, files) is None


def test_coverage_totals_count_each_list_over_tasks():
    rows = [coverage("t-1", ["a/**", "b.py"], ["a/x.py", "c.py"]), coverage("t-2", ["d.py"], ["d.py"])]
    total = coverage_total([row for row in rows if row is not None])
    assert total == {"tasks": 2, "scope": 3, "touched": 2, "untouched": 1, "unplanned": 1}
    assert total_line(total) == (
        "tasks with a scope 2: files planned and touched 2, patterns untouched 1 of 3, files unplanned 1"
    )
