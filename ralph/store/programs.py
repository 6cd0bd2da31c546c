"""Which programs ralph's own processes run, and the PATH its children get: never one an agent
could have written.

An agent writes its work tree: the repository's, or a worktree ralph made for a build or a
verifier. A PATH entry inside one of those (a project's `.venv/bin` activated in the person's
shell, `./bin`), a relative one (`bin`, `node_modules/.bin`, resolved against whatever folder a
process runs in) or an empty one (the current folder) may hold a `git` or a `python` an agent
wrote. So ralph's own git calls run one absolute `git`, found on the PATH without those entries
(once per process: again only if a work tree ralph learns of later holds the one found, or PATH
changed, as tests change it), and the
children ralph starts for itself (agents, hooks, git) get that PATH. The gate keeps the person's
PATH as it is (ralph.loop.process.gate): it is the repository's own code, a `make test` may need the
project's virtualenv, and it runs in the fence.

Every `Repo` names its work tree here (`fence`): the work trees ralph knows of are the ones whose
entries are dropped. Looked up by path, never by process: the lookups start no process.

Every child process has an owner: git is `Repo`'s (ralph.store.git); agents, gates and hooks are
the supervisor's (ralph.loop.process.supervisor); a short-lived tool that is neither (a forge's
CLI, the bubblewrap probe) runs through `run` here, always with a timeout. tests/test_processes.py
fails when any other module starts one.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ralph.errors import GitError

if TYPE_CHECKING:
    import subprocess

# A work tree as named -> its real path. Replaced whole, never changed in place: a build's or a
# verifier's thread may fence its worktree while others look (a dict changing size under a
# reader's loop raised in a run of three parallel verifiers).
_FENCED: dict[str, str] = {}
_FENCING = threading.Lock()
_TRUSTED: dict[tuple[str, int], str] = {}  # (PATH, work trees known) -> the trusted PATH
_GIT: list[str] = []  # the git found: [program, real path, the PATH it was found on]


def fence(root: Path) -> None:
    """`root` is a work tree agents may write: no program ralph runs comes from inside it."""
    global _FENCED
    key = str(root)
    if key in _FENCED:
        return
    real = os.path.realpath(root)
    with _FENCING:
        _FENCED = {**_FENCED, key: real}


def fenced(path: str) -> bool:
    """Whether `path` (real, absolute) lies inside a work tree agents may write: it or a folder
    above it is one (asked at every git run, so as many steps as the path is deep, not one per
    work tree fenced: a long parallel run fences hundreds)."""
    roots = _fenced_roots()
    while roots:
        if path in roots:
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent
    return False


# The real paths of _FENCED, worked out again only when _FENCED was replaced (it is held here, so
# that identity says which one they are).
_roots_of: tuple[dict[str, str], frozenset[str]] = ({}, frozenset())


def _fenced_roots() -> frozenset[str]:
    global _roots_of
    current = _FENCED
    if _roots_of[0] is not current:
        _roots_of = (current, frozenset(real.rstrip(os.sep) or os.sep for real in current.values()))
    return _roots_of[1]


def trusted_path(path: str | None = None) -> str:
    """`path` (default: ralph's own $PATH) without its relative and empty entries and those inside
    a work tree agents may write, each kept once, in order."""
    path = os.environ.get("PATH", os.defpath) if path is None else path
    key = (path, len(_FENCED))  # work trees are only ever added: their count says which are known
    if key not in _TRUSTED:
        entries = path.split(os.pathsep)
        kept = [entry for entry in entries if os.path.isabs(entry) and not fenced(os.path.realpath(entry))]
        _TRUSTED[key] = os.pathsep.join(dict.fromkeys(kept))
    return _TRUSTED[key]


def git_program() -> str:
    """The absolute git ralph runs: the first on the trusted PATH that is not itself a link into
    a work tree agents may write."""
    path = os.environ.get("PATH", os.defpath)
    if _GIT and _GIT[2] == path and not fenced(_GIT[1]):  # (PATH changes only in tests, in process)
        return _GIT[0]
    for folder in trusted_path(path).split(os.pathsep):
        program = os.path.join(folder, "git")
        real = os.path.realpath(program)
        if folder and os.path.isfile(real) and os.access(real, os.X_OK) and not fenced(real):
            _GIT[:] = [program, real, path]
            return program
    raise GitError("git is not installed (or not on PATH outside the work tree)")


def trusted_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default: ralph's own environment) with its PATH made trusted."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = trusted_path(env.get("PATH", os.defpath))
    return env


def run(
    argv: list[str],
    *,
    timeout_s: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
    closed_stdin: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run a short-lived tool to its end, its output captured as text. A tool still running after
    `timeout_s` is killed: TimeoutError (an OSError) saying so. `closed_stdin`: stdin is /dev/null,
    else ralph's own (or `input`)."""
    import subprocess  # here, not above: most commands never run a tool

    try:
        return subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            input=input,
            stdin=subprocess.DEVNULL if closed_stdin else None,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise TimeoutError(str(exc)) from None
