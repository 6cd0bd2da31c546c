"""What a task's `type` lets its build change, where ralph can tell from the files alone.

- `docs`: documentation files only: `*.md`, `*.rst`, `*.txt` anywhere, everything under `docs/`,
  and the patterns of the config key `docs_paths`.
- `test`: test files only: everything under a `tests/` or `test/` folder, `test_*.py`,
  `*_test.py`, `*_test.go`, `*.test.*`, `*.spec.*`, `*_spec.*` and `conftest.py` anywhere.
- `refactor`: no existing test file changed or deleted (behaviour unchanged, proved by the tests
  as they were); a new test file is allowed (pinning the behaviour before moving code is good
  practice).
- `feature`, `bugfix`, `chore` and a task without a type: any file.

A file the task's `scope` names is always allowed: whoever wrote the scope said so. Patterns read
as ralph.plan.scope reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ralph.plan.records import TaskType
from ralph.plan.scope import matches

DOCS_FILES = ("**/*.md", "**/*.rst", "**/*.txt", "docs/**")
TEST_FILES = (
    "**/tests/**",
    "**/test/**",
    "**/test_*.py",
    "**/*_test.py",
    "**/*_test.go",
    "**/*.test.*",
    "**/*.spec.*",
    "**/*_spec.*",
    "**/conftest.py",
)


@dataclass(frozen=True)
class TypeBreach:
    """The files a build changed that its task's type does not allow, and the rule, in words."""

    files: list[str]
    rule: str


def is_docs(path: str, docs_paths: Iterable[str] = ()) -> bool:
    return any(matches(pattern, path) for pattern in (*DOCS_FILES, *docs_paths))


def is_test(path: str) -> bool:
    return any(matches(pattern, path) for pattern in TEST_FILES)


def breach(
    task_type: str | None,
    scope: list[str] | None,
    changed: Iterable[str],
    existing: Callable[[set[str]], set[str]],
    docs_paths: Iterable[str] = (),
) -> TypeBreach | None:
    """What the build's `changed` files break of the rule of `task_type`, or None. `existing`
    gives those of the paths it is asked about that the commit the build started on has (a
    refactor may add test files, not change those there were)."""
    free = {path for path in changed if not any(matches(pattern, path) for pattern in scope or ())}
    if task_type == TaskType.DOCS:
        strays = {path for path in free if not is_docs(path, docs_paths)}
        return _breach(strays, "a docs task may change documentation files only")
    if task_type == TaskType.TEST:
        strays = {path for path in free if not is_test(path)}
        return _breach(strays, "a test task may change test files only")
    if task_type == TaskType.REFACTOR:
        strays = existing({path for path in free if is_test(path)})
        return _breach(strays, "a refactor may not change or delete existing test files")
    return None


def _breach(strays: set[str], rule: str) -> TypeBreach | None:
    return TypeBreach(sorted(strays), rule) if strays else None
