"""The programs git's config names for content (filter drivers), merges (merge drivers), signing,
ssh and credentials, which ralph's own git calls run outside the fence: none may be a file an agent
could have written.

git runs a filter's clean command on `git add` and `git status` (and its smudge on a checkout),
and a merge driver on `git merge-tree`, with the work tree's top as the current folder. A driver
is defined in config, which agents cannot write (.git and $HOME are read-only in the fence), but
one whose command names a script of the work tree (`filter.x.clean = ./scripts/clean.sh`, with
`.gitattributes` choosing it) runs whatever a build left there, as the person, at ralph's next git
call. Dropping such a driver would change what ralph commits (a clean filter that strips output or
secrets would no longer strip them), so the run is refused instead, in one line, with the fix.
Diff drivers (external diff, textconv) need no check: ralph's diffs never run them
(--no-ext-diff, --no-textconv: ralph.store.git).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from ralph.errors import GitError
from ralph.store.git import Repo

# The keys whose value is a command git runs itself (not textconv or diff.*.command: see above), as
# git lists them (section and name in lower case): the drivers, and the programs ralph's commits
# (a signature), fetches and pushes (ssh, a password prompt, a credential helper, the programs a
# remote's transport runs) start.
_DRIVER_KEYS = (
    r"^(filter\..*\.(clean|smudge|process)|merge\..*\.driver"
    r"|gpg\.(.*\.)?program|gpg\.ssh\.defaultkeycommand|core\.sshcommand|core\.askpass"
    r"|credential\.(.*\.)?helper|remote\..*\.(uploadpack|receivepack)|core\.gitproxy)$"
)
# ralph's own merge driver for plan.jsonl (ralph.usecases.mergedriver): ralph's interpreter, whose
# prefix the fence keeps read-only even inside the work tree (ralph.loop.process.sandbox).
_RALPH_DRIVER = "merge.ralph.driver"
# An argument read as a path of the work tree when it names one or looks like a script.
SCRIPT_SUFFIXES = (".py", ".sh", ".bash", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".lua")


def drivers_in_work_tree(repo: Repo) -> list[str]:
    """Each driver whose command runs a file an agent could write, as `key (what it runs)`."""
    try:
        listed = repo.git("config", "-z", "--get-regexp", _DRIVER_KEYS)
    except GitError:  # exit 1: no such key (the usual case)
        return []
    found = []
    for entry in filter(None, listed.split("\0")):
        key, _, value = entry.partition("\n")
        if key.lower() == _RALPH_DRIVER:
            continue
        named = writable_part(repo.root, value)
        if named:
            found.append(f"{key} ({named})")
    return found


def writable_part(root: Path, command: str) -> str | None:
    """The part of a shell command git would run in `root` that an agent could have written: its
    program when it is a path in the work tree (relative: there or not yet), an argument naming a
    file there, or a module `python -m` would import from there; else None."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if not words:
        return None
    program, args = words[0].removeprefix("!"), [word for word in words[1:] if "%" not in word]  # %f: git's
    if "/" in program and (not os.path.isabs(program) or _inside(root, program)):
        return program
    if _python_importing_from_cwd(program, args):
        return f"{program} -m: modules of the work tree first"
    for arg in args:
        looks = "/" in arg.rstrip("/") or arg.endswith(SCRIPT_SUFFIXES)
        path = arg if os.path.isabs(arg) else os.path.join(root, arg)
        if looks and os.path.lexists(path) and _inside(root, path):
            return arg
    return None


def _python_importing_from_cwd(program: str, args: list[str]) -> bool:
    """`python -m module` puts the current folder (the work tree) first on sys.path, so a
    `module.py` a build wrote there is what runs; -P or -I (isolated) leave it off."""
    if not os.path.basename(program).startswith("python") or "-m" not in args:
        return False
    options = args[: args.index("-m")]
    return not any(o.startswith("-") and not o.startswith("--") and ("P" in o or "I" in o) for o in options)


def _inside(root: Path, path: str) -> bool:
    """Whether `path` lies in the work tree `root`, by its name or where it leads."""
    tops = (os.path.normpath(root), os.path.realpath(root))
    named = (os.path.normpath(os.path.join(root, path)), os.path.realpath(os.path.join(root, path)))
    return any(p == top or p.startswith(top + os.sep) for p in named for top in tops)
