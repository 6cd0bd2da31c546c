"""Files generated from the code (`make schema`, `make docs`): one way to write them, or, with
--check, to say which are stale, for each generator."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def write_or_check(
    argv: list[str] | None,
    prog: str,
    description: str,
    outputs: Callable[[], dict[Path, str]],
    stale_line: Callable[[Path], str],
) -> int:
    """Write each of `outputs()` that differs from its file; with --check, only print
    `stale_line(path)` for each (exit 1). A ValueError from `outputs` is one line, exit 2."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--check", action="store_true", help="only say which files are stale (exit 1)")
    options = parser.parse_args(argv)
    try:
        wanted = outputs()
    except ValueError as exc:
        print(f"{prog.split()[-1]}: {exc}", file=sys.stderr)
        return 2
    stale = [
        path for path, text in wanted.items() if not path.exists() or path.read_text(encoding="utf-8") != text
    ]
    for path in stale:
        if options.check:
            print(stale_line(path), file=sys.stderr)
        else:
            path.write_text(wanted[path], encoding="utf-8")
    return 1 if options.check and stale else 0


def _holds(path: Path, text: str) -> bool:
    return path.exists() and path.read_text(encoding="utf-8") == text
