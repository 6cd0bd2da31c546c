"""The git runs a test's `Repo` objects make, for tests of how many ralph needs (and which)."""

from __future__ import annotations

import pytest

from ralph.store.git.run import Runner


def count_git_runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The argv of each git run a Repo makes from now on."""
    runs: list[tuple[str, ...]] = []
    real = Runner.run

    def counted(self, args, *rest, **kwargs):
        runs.append(tuple(args))
        return real(self, args, *rest, **kwargs)

    monkeypatch.setattr(Runner, "run", counted)
    return runs
