"""Fixtures of the loop tests; their helpers are in tests/support/construct.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.construct import stop_leftovers, with_app_spec


@pytest.fixture
def project(repo: Path, tmp_path: Path) -> Path:
    return with_app_spec(repo, "# App\n\n- Parse input\n- Compute result\n- Print report\n")


@pytest.fixture(autouse=True)
def _no_leftovers(tmp_path: Path):
    """Whatever a failing test leaves running is stopped: its ralph runs, and every agent and
    grandchild whose pid the fake agent recorded."""
    yield
    stop_leftovers(tmp_path)
