"""How ralph is installed: by a distribution name of its own (`ralph` on PyPI is another project),
with the version written in one place and the install docs naming that distribution."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

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
        # Not on the package index yet: no doc may tell a newcomer to install it from there.
        assert not re.search(rf"(pip|pipx|uv tool) install {DISTRIBUTION}", text), doc
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pipx install .  " in readme and "pip install .  " in readme and "pipx install git+URL" in readme
    assert DISTRIBUTION in readme
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## \[{re.escape(ralph.__version__)}\] - \d{{4}}-\d\d-\d\d$", changelog, re.M)


# --- installed as the README says: from a clone (pipx install .) and from a git URL ---------------


def _source(tmp_path: Path) -> Path:
    """A copy of this checkout as a clone has it: the files git tracks, and new ones not ignored."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    source = tmp_path / "ralph-clone"
    for name in filter(None, listed):
        if (ROOT / name).is_file():  # a file deleted but not yet staged is listed too
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    return source


def _wheel(what: str, out: Path) -> Path:
    """The wheel pip (and so pipx) builds from `what`: offline, with this environment's setuptools."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "--no-build-isolation",
         "-w", str(out), what],
        check=True, capture_output=True, timeout=180,
    )  # fmt: skip
    (wheel,) = out.glob("ralph_construct-*.whl")
    return wheel


def _fresh_environment(tmp_path: Path, wheel: Path) -> Path:
    """A new virtualenv with the wheel installed in it, as pipx makes one: its bin/ folder. Its
    dependencies come from this environment's site-packages, not from the network (a path in a
    .pth file, whose own .pth files, such as this checkout's editable install, are not read)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
         "--no-deps", "--no-index", str(wheel)],
        check=True, capture_output=True, timeout=180,
    )  # fmt: skip
    site = subprocess.run(
        [venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    here = next(path for path in sys.path if path.endswith("site-packages") and Path(path, "click").is_dir())
    Path(site, "dependencies.pth").write_text(here + "\n")
    return venv / "bin"


@pytest.mark.slow  # builds and installs a wheel: 4-7 s each
def test_installed_from_a_git_url_the_ralph_command_runs_the_demo_from_its_own_files(tmp_path):
    """`pipx install git+URL` (a file:// URL here: the machine reaches no forge) builds the wheel
    from a clone; the installed `ralph` finds its templates, schema and demo in the wheel, never in
    this checkout, and the demo says how to put it on PATH."""
    source = _source(tmp_path)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "the clone"]):
        subprocess.run(["git", *args], cwd=source, check=True, capture_output=True)
    bin_dir = _fresh_environment(tmp_path, _wheel(f"git+file://{source}", tmp_path / "dist"))
    env = {**os.environ, "TMPDIR": str(tmp_path), "PATH": "/usr/bin:/bin"}  # no ralph on it
    env.pop("PYTHONPATH", None)
    where = subprocess.run(
        [bin_dir / "python", "-c", "import ralph; print(ralph.__file__)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert where.startswith(str(bin_dir.parent)), where  # the wheel's ralph, not this checkout's
    version = subprocess.run([bin_dir / "ralph", "--version"], env=env, capture_output=True, text=True)
    assert version.stdout == f"ralph {ralph.__version__}\n"

    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    new = subprocess.run(
        [bin_dir / "ralph", "spec", "new", "login"], cwd=project, env=env, capture_output=True
    )
    assert new.returncode == 0 and "## Requirements" in (project / "specs" / "login.md").read_text()

    demo = subprocess.run(
        [bin_dir / "python", "-m", "ralph.demo"], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert demo.returncode == 0 and "ralph: COMPLETE" in demo.stdout, demo.stdout + demo.stderr
    assert demo.stdout.rstrip().endswith(
        f"`ralph` is installed in {bin_dir}: to put it on your PATH, run: source {bin_dir / 'activate'}"
    )


@pytest.mark.slow  # builds and installs a wheel: 4-7 s each
def test_installed_from_a_clone_the_ralph_command_runs(tmp_path):
    """`pipx install .` and `pip install .` in a clone build the wheel from the folder itself."""
    bin_dir = _fresh_environment(tmp_path, _wheel(str(_source(tmp_path)), tmp_path / "dist"))
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    env.pop("PYTHONPATH", None)
    found = subprocess.run(["ralph", "spec", "check", "--help"], cwd=tmp_path, env=env, capture_output=True)
    assert found.returncode == 0 and b"Usage: ralph spec check" in found.stdout
