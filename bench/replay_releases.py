"""Subject "more-itertools" of bench_replay.py: a real project's history, one commit per release.

No repository history can be fetched here (no network but the package index), so the history is
the project's own releases as published: each release's source distribution, which carries the
package and its test suite (550-660 tests and some 2,200 subtests, about 1.2-2.2 s a run), is one
commit on the one before. The releases are 8.13.0 to 10.5.0, the last run of releases whose
suite keeps that weight (10.6.0 multiplied its subtests and runs 10 s): the lightest real suite
of the project's recent history, where the loop's own cost shows most. The sdists are downloaded
once with pip into build/bench-cache/ (kept: a rerun needs no index)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from bench_construct import SPEC
from replay_history import History, Recorder, new_repo

PROJECT = "more-itertools"
VERSIONS = ["8.13.0", "8.14.0", "9.0.0", "9.1.0", "10.0.0", "10.1.0", "10.2.0", "10.3.0", "10.4.0", "10.5.0"]
CACHE = Path(__file__).resolve().parent.parent / "build" / "bench-cache"


def release_tree(version: str) -> Path:
    """The unpacked sdist of `version`, downloaded and unpacked on first use."""
    unpacked = CACHE / f"{PROJECT}-{version}"
    if unpacked.is_dir():
        return unpacked
    sdists = CACHE / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q", "-d"]
    done = subprocess.run([*pip, str(sdists), f"{PROJECT}=={version}"], capture_output=True, text=True)
    names = [f"{PROJECT}-{version}.tar.gz", f"{PROJECT.replace('-', '_')}-{version}.tar.gz"]
    archive = next((sdists / name for name in names if (sdists / name).is_file()), None)
    if archive is None:
        sys.exit(f"cannot download the sdist of {PROJECT} {version}: {done.stderr.strip()[-500:]}")
    with tempfile.TemporaryDirectory(dir=CACHE) as scratch, tarfile.open(archive) as tar:
        tar.extractall(scratch, filter="data")
        (top,) = Path(scratch).iterdir()  # an sdist holds one folder, name-version
        top.rename(unpacked)
    return unpacked


def releases_history(folder: Path, patches: Path, count: int = len(VERSIONS) - 1) -> History:
    """The first release as the base, then `count` releases, each a commit of its whole tree."""
    real = new_repo(folder / "real")
    recorder = Recorder(real, patches)
    released: set[Path] = set()
    for number, version in enumerate(VERSIONS[: count + 1]):
        for path in released:  # what the release before shipped goes; ralph's files and the spec stay
            path.unlink()
        released = _copy_release(release_tree(version), real)
        subject = f"{PROJECT} {version}"
        if number == 0:
            spec = SPEC.format(name=f"Replay of the releases of {PROJECT}, one task per release")
            recorder.start(
                f"{count} releases of {PROJECT} ({VERSIONS[1]} to {VERSIONS[count]})", subject, spec
            )
        else:
            recorder.step(subject)
    return recorder.done()


def _copy_release(tree: Path, real: Path) -> set[Path]:
    copied = set()
    for source in tree.rglob("*"):
        if source.is_file():
            target = real / source.relative_to(tree)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
            copied.add(target)
    return copied
