"""The repository's pre-commit hook as ralph runs it for `run_hooks` (ralph.loop.stages.build): never
as an agent left it.

A hook in the git directory (`.git/hooks/pre-commit`) is out of the agents' reach: .git is
read-only in the fence. One that core.hooksPath finds in the work tree (`.husky/pre-commit`, as
husky sets it) is the agents' to write, and a build that rewrote it to `exit 0` had its own
verdict obeyed. So such a hook runs as the commit the run started on has it: in place while the
work tree still holds those bytes (its `$0` and the folder beside it as git would give them), else
a copy of that commit's file. One that commit lacks (a hook git ignores, made by an install step)
is refused before the run starts, in one line (preflight); one an agent made during the run is no
hook of that commit, and is not run. What the hook itself calls (husky's `npx lint-staged`) is the
repository's code like the gate, and runs in the fence like it.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from ralph.store.git import Repo

HOOK = "pre-commit"
_FILE_MODES = ("100644", "100755")


def in_work_tree(repo: Repo, hook: Path) -> str | None:
    """The hook's path in the work tree as git names it, when it lies there outside the git
    directories (by its name or where it leads), else None."""
    top = os.path.realpath(repo.root)
    git_dirs = [os.path.realpath(repo.git_dir()), os.path.realpath(repo.common_dir())]
    for path in (os.path.normpath(hook), os.path.realpath(hook)):
        for root in (os.path.normpath(repo.root), top):
            if _under(path, root) and not any(_under(os.path.realpath(path), d) for d in git_dirs):
                return PurePosixPath(*Path(os.path.relpath(path, root)).parts).as_posix()
    return None


def at_start(repo: Repo, start: str | None, relpath: str) -> bytes | None:
    """The hook's bytes as commit `start` has them (None: no such file there)."""
    if start is None or repo.objects.mode_at(start, relpath) not in _FILE_MODES:
        return None
    return repo.objects.file_at(start, relpath)


def start_refusal(repo: Repo, run_hooks: bool) -> str | None:
    """Why the run cannot start with `run_hooks`: a pre-commit hook in the work tree that HEAD (the
    commit the run starts on) lacks, which ralph could only run as it finds it; else None."""
    hook = repo.config.hook(HOOK) if run_hooks else None
    relpath = in_work_tree(repo, hook) if hook else None
    if relpath is None or at_start(repo, repo.head(), relpath) is not None:
        return None
    return (
        f"run_hooks: the pre-commit hook {relpath} lies in the work tree, which agents write, and is no"
        " file of HEAD, where the run starts; commit it, point core.hooksPath outside the work tree,"
        " or set run_hooks false"
    )


def hook_argv(repo: Repo, start: str | None, own: Path) -> list[str] | None:
    """The argv that runs the pre-commit hook as commit `start` has it (a copy under the folder
    `own` where the work tree's file differs), or None when there is no such hook to run."""
    path = repo.config.hook_path(HOOK)  # there or not: a build that removed it still gets it run
    relpath = in_work_tree(repo, path)
    if relpath is None:  # in the git directory, or outside the repository: no agent wrote it
        hook = repo.config.hook(HOOK)
        return [str(hook)] if hook else None
    hook = repo.root / relpath
    data = at_start(repo, start, relpath)
    if data is None:  # made during the run: not the hook the run started with
        return None
    if not hook.is_symlink() and _bytes(hook) == data:
        return [str(hook)]
    copy = own / relpath
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes(data)
    copy.chmod(0o755)  # it ran at the start (repo.config.hook: an executable file), whatever its mode now
    return [str(copy)]


def _bytes(path: Path) -> bytes | None:
    """The bytes of `path` when it is a regular file (never a FIFO an agent left, which would
    block ralph), else None."""
    import stat

    try:
        if not stat.S_ISREG(path.lstat().st_mode):
            return None
        return path.read_bytes()
    except OSError:
        return None


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
