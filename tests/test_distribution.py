"""How ralph is installed: by a distribution name of its own (`ralph` on PyPI is another project),
with the version written in one place and the install docs naming that distribution."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import ralph

ROOT = Path(__file__).parent.parent
DISTRIBUTION = "ralph-construct"


def test_the_distribution_is_ralph_construct_with_the_version_of_ralph_init():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION and "version" in project["dynamic"]
    assert metadata.version(DISTRIBUTION) == ralph.__version__
    assert project["scripts"] == {"ralph": "ralph.cli.main:main"}


def test_ralph_version_prints_the_one_version():
    done = subprocess.run(
        [sys.executable, "-m", "ralph", "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout == f"ralph {ralph.__version__}\n"


def test_the_editable_install_is_a_plain_path_not_an_import_hook():
    """Every Python start in the venv reads it: a finder module costs each some 9 ms (Makefile)."""
    files = [str(path) for path in metadata.distribution(DISTRIBUTION).files or ()]
    assert not [name for name in files if name.endswith("_finder.py")], files
    pth = [name for name in files if name.endswith(".pth")]
    if pth:  # an editable install (a wheel has none)
        (entry,) = metadata.distribution(DISTRIBUTION).locate_file(pth[0]).read_text().split()
        assert Path(entry).resolve() == ROOT.resolve()


def test_the_docs_install_our_distribution_and_the_changelog_has_this_version():
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        assert not re.search(r"(pip|pipx|uv tool) install ralph(?![-\w])", text), doc
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"pipx install {DISTRIBUTION}" in readme and f"uv tool install {DISTRIBUTION}" in readme
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## \[{re.escape(ralph.__version__)}\] - \d{{4}}-\d\d-\d\d$", changelog, re.M)
