"""Which `sandbox_hide` patterns can be taken: one that hides a folder every run needs (`/`,
$HOME, the work tree or a folder above them) is refused when it is set, before any run."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath


def hide_problem(patterns: tuple[str, ...] | list[str], root: Path, home: Path | None = None) -> str | None:
    """Why `sandbox_hide` cannot be taken (one line), or None. A path pattern that would hide `/`,
    `$HOME`, the work tree or a folder above them leaves no agent anything to run (its program, its
    work tree, its state: the fence mounts an empty folder over what matches), and every run would
    then fail "without doing anything": refused when set, named, before any run."""
    for pattern in patterns:
        hidden = _hides_a_needed_folder(pattern, root, home or Path.home())
        if hidden is not None:
            return (
                f"config key sandbox_hide: {pattern!r} would hide {hidden}, which every run needs"
                " (the system, $HOME or the work tree): name the files to hide, not a folder above them"
            )
    return None


def _hides_a_needed_folder(pattern: str, root: Path, home: Path) -> str | None:
    """The folder every run needs that `pattern` would hide, matched as the pattern (a glob) and
    as what it finds now, resolved (a link to $HOME hides $HOME); None for a pattern of names."""
    import glob

    if not pattern.startswith(("/", "~")):
        return None  # names of files in the repository: never a folder above it
    expanded = os.path.normpath(os.path.expanduser(pattern))  # `/tmp/..` is `/`
    needed = [Path("/")]
    for folder in dict.fromkeys([root.absolute(), root.resolve(), home.absolute(), home.resolve()]):
        needed += [folder, *folder.parents]
    whole = "/" + expanded.lstrip("/")  # an absolute pattern matches whole paths: `*` never spans a `/`
    for folder in dict.fromkeys(needed):
        if PurePosixPath(folder).match(whole):
            return str(folder)
    for match in glob.glob(expanded):
        try:
            found = Path(match).resolve()
        except OSError:  # a loop of links: nothing it names is hidden
            continue
        if found in needed:
            return f"{found} (through {match})"
    return None
