"""Install the real agent CLIs from npm, once, into an ignored cache folder of the repository.

`ensure_installed("@openai/codex", "codex")` returns the binary's path, installing the package
the first time. When npm is missing or the registry is unreachable it returns None and records
why in `last_failure` (tests turn that into `pytest.skip(reason)`); `require_installed` does both.
Two test processes installing at once are serialized by a file lock.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from filelock import FileLock, Timeout

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE = REPO_ROOT / ".e2e-cache" / "npm"
INSTALL_TIMEOUT = 900  # seconds: the claude-code native binary is about 245 MB

last_failure: dict[str, str] = {}


class NotInstallable(Exception):
    """npm or the registry cannot provide the package; the message says why."""


def binary_path(binary: str, prefix: Path = CACHE) -> Path:
    return prefix / "node_modules" / ".bin" / binary


def _works(path: Path) -> bool:
    if not (path.exists() and os.access(path, os.X_OK)):
        return False
    try:
        probe = subprocess.run(
            [str(path), "--version"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def install(package: str, binary: str, prefix: Path = CACHE, timeout: float = INSTALL_TIMEOUT) -> Path:
    """The path of `binary` from `package`, installed under `prefix`; raises NotInstallable."""
    path = binary_path(binary, prefix)
    if path.exists():
        return path
    npm = shutil.which("npm")
    if npm is None:
        raise NotInstallable("npm is not installed")
    prefix.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(prefix.parent / "npm-install.lock"), timeout=timeout + 60):
            if path.exists():  # another process installed it while we waited
                return path
            command = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", package]
            try:
                done = subprocess.run(
                    command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
                )
            except subprocess.TimeoutExpired as exc:
                raise NotInstallable(f"`npm install {package}` took more than {timeout:.0f} s") from exc
            if done.returncode != 0:
                lines = (done.stderr or done.stdout).strip().splitlines()
                errors = [line for line in lines if line.startswith("npm error") and "{" not in line]
                detail = " | ".join((errors or lines)[:3])
                raise NotInstallable(f"`npm install {package}` failed (exit {done.returncode}): {detail}")
    except Timeout as exc:
        raise NotInstallable(f"timed out waiting for another npm install ({exc})") from exc
    if not _works(path):
        raise NotInstallable(f"{package} installed but {path} does not run `--version`")
    return path


def ensure_installed(package: str, binary: str) -> Path | None:
    """The binary's path, or None (with the reason in `last_failure[package]`)."""
    try:
        path = install(package, binary)
    except NotInstallable as exc:
        last_failure[package] = str(exc)
        return None
    last_failure.pop(package, None)
    return path


def require_installed(package: str, binary: str) -> Path:
    """For tests: the binary's path, or pytest.skip with the reason it cannot be had."""
    import pytest

    path = ensure_installed(package, binary)
    if path is None:
        pytest.skip(f"{package} unavailable: {last_failure.get(package, 'unknown reason')}")
    return path
