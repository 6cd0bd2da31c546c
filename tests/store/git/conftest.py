"""The repositories the tests of ralph.store.git work in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.gitfiles import commit_all


@pytest.fixture
def work(repo: Path) -> Path:
    """A repository with a few committed files besides ralph's."""
    commit_all(repo, {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "d.txt": "d\n", "sub/e.txt": "e\n"})
    return repo


@pytest.fixture
def pages(work: Path) -> Path:
    """`pages/[id].js` is also a glob matching `pages/i.js` and `pages/d.js`; all three are dirty."""
    commit_all(work, {"pages/[id].js": "route\n", "pages/i.js": "i\n", "pages/d.js": "d\n"})
    for name in ("[id].js", "i.js", "d.js"):
        (work / "pages" / name).write_text(f"changed {name}\n")
    return work
