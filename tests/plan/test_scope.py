"""File scope patterns: which files a task may change, and which tasks may not build at once."""

from __future__ import annotations

import pytest

from ralph.plan.scope import matches, outside, overlaps


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
