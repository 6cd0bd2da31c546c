"""Fixtures of the loop tests; their helpers are in tests/support/construct.py."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.construct import stop_leftovers, with_app_spec
from tests.support.gitrepo import git, isolate_git, refreshed, slimmed


@pytest.fixture(scope="session")
def _app_templates(
    tmp_path_factory: pytest.TempPathFactory, _initialized_repo: Path
) -> Callable[[str], Path]:
    """The repository `app_repo(spec)` copies, made once per test process and spec."""
    made: dict[str, Path] = {}

    def template(spec: str) -> Path:
        if spec not in made:
            root = tmp_path_factory.mktemp("app") / "repo"
            shutil.copytree(_initialized_repo, root, symlinks=True)
            with pytest.MonkeyPatch.context() as monkeypatch:
                isolate_git(monkeypatch, tmp_path_factory.mktemp("gitconfig"))
                git(root, "update-index", "-q", "--refresh")
                made[spec] = slimmed(with_app_spec(root, spec))
        return made[spec]

    return template


@pytest.fixture
def app_repo(tmp_path: Path, _app_templates: Callable[[str], Path]) -> Callable[[str], Path]:
    """`app_repo(spec)`: what `with_app_spec(repo, spec)` makes, as a fresh copy in tmp_path/repo of
    a repository made once per test process: its `git add` and `git commit` were two of the few
    git runs that every loop test made itself (some 500 per run of the suite)."""

    def copy(spec: str) -> Path:
        root = tmp_path / "repo"
        shutil.copytree(_app_templates(spec), root, symlinks=True)
        return refreshed(root)  # the copies' inodes and ctimes differ from the index's

    return copy


@pytest.fixture
def project(app_repo: Callable[[str], Path]) -> Path:
    return app_repo("# App\n\n- Parse input\n- Compute result\n- Print report\n")


@pytest.fixture(autouse=True)
def _no_leftovers(tmp_path: Path):
    """Whatever a failing test leaves running is stopped: its ralph runs, and every agent and
    grandchild whose pid the fake agent recorded."""
    yield
    stop_leftovers(tmp_path)
