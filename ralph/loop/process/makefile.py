"""Whether a make gate names targets its Makefile has, read as text: never by running make.

`make -n` is no probe: make expands `$(shell ...)` and `:=` assignments while it reads a Makefile,
`-n` or not, so asking it would run whatever a build committed there, unfenced, at the next start
and on `--dry-run`. The gate itself runs make only in the fence. So the Makefile is read here: its
rule lines (`target ...: ...`), and the files its literal `include` lines name. What text cannot
settle (a target made of a variable or a pattern, an include whose name holds a variable, make
options this does not know) is never refused: the gate's first run then says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from glob import escape as glob_escape
from pathlib import Path

DEFAULT_NAMES = ("GNUmakefile", "makefile", "Makefile")  # the order make looks for them in
# Options whose value is the next argument (or joined to a short one: -Cdir).
_VALUED = {"-C": "directory", "-f": "file", "-I": "skip", "-o": "skip", "-W": "skip"}
_LONG_VALUED = {
    "--directory": "directory",
    "--file": "file",
    "--makefile": "file",
    "--include-dir": "skip",
    "--old-file": "skip",
    "--assume-old": "skip",
    "--new-file": "skip",
    "--assume-new": "skip",
    "--what-if": "skip",
    "--jobs": "skip",
    "--load-average": "skip",
    "--output-sync": "skip",
    "--debug": "skip",
}
_OPTIONAL = ("--jobs", "--load-average", "--output-sync", "--debug")  # their value only after =
# Flags that take no value, as a make gate spells them (-k, -s, -j4 aside).
_FLAGS = set("BeiknqrRsStw")
_LONG_FLAGS = {"--keep-going", "--silent", "--quiet", "--no-print-directory", "--always-make", "--trace"}
_RULE = re.compile(r"^([^\t#=:][^#=:]*?)\s*::?(?![=:])")
_INCLUDE = re.compile(r"^\s*[-s]?include\s+(.+)$")
_EVAL = re.compile(r"[$][({]eval\s")
_ASSIGN = re.compile(r"^(?:override\s+|export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*(:{1,3}|[?+!])?=\s*(.*)$")
_REFERENCE = re.compile(r"[$](?:[(]([A-Za-z_][A-Za-z0-9_.-]*)[)]|[{]([A-Za-z_][A-Za-z0-9_.-]*)[}])")
_DEPTH = 8
_MAX_BYTES = 4 << 20  # includes followed


@dataclass
class Gate:
    """What a make gate's argv asks: the folder make starts in, the makefiles, the targets."""

    folder: Path
    makefiles: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)


def parse(argv: list[str], root: Path) -> Gate | None:
    """A make gate's argv (after the program), or None when it has an option this does not know."""
    gate = Gate(root)
    at = 0
    while at < len(argv):
        arg, value = argv[at], argv[at + 1] if at + 1 < len(argv) else ""
        at += 1
        if arg == "--":
            gate.targets += [rest for rest in argv[at:] if "=" not in rest]
            break
        if arg.startswith("--"):
            used = _long(gate, arg, value)
        elif arg.startswith("-") and len(arg) > 1:
            used = _short(gate, arg, value)
        else:
            used = 0
            if "=" not in arg:  # NAME=value sets a variable
                gate.targets.append(arg)
        if used is None:
            return None
        at += used
    return gate


def _long(gate: Gate, arg: str, value: str) -> int | None:
    """A long option applied to `gate`: how many of the next words it took, None if not known."""
    name, has_value, joined = arg.partition("=")
    kind = _LONG_VALUED.get(name)
    if kind is None:
        return 0 if not has_value and name in _LONG_FLAGS else None
    if has_value:
        _apply(gate, kind, joined)
        return 0
    if name in _OPTIONAL:  # an optional value, never the next word
        return 0
    _apply(gate, kind, value)
    return 1


def _short(gate: Gate, arg: str, value: str) -> int | None:
    """A short option (`-C dir`, `-Cdir`, `-j 4`, `-ks`) applied to `gate`: how many of the next
    words it took, None if not known."""
    if arg[:2] in _VALUED:
        _apply(gate, _VALUED[arg[:2]], arg[2:] or value)
        return 0 if arg[2:] else 1
    if arg[1] in "jl":  # -j, -j4, -j 4, -l2.5: an optional number
        if arg[2:]:
            return 0 if arg[2:].replace(".", "", 1).isdigit() else None
        return 1 if value.replace(".", "", 1).isdigit() else 0
    return 0 if all(flag in _FLAGS for flag in arg[1:]) else None


def _apply(gate: Gate, kind: str, value: str) -> None:
    if kind == "directory":
        gate.folder = gate.folder / value
    elif kind == "file":
        gate.makefiles.append(value)


def missing_targets(argv: list[str], root: Path) -> tuple[str, list[str]] | None:
    """The makefile a make gate reads and the targets it asks for that no rule of it names; None
    when all are there, or when reading cannot tell (nothing is refused then)."""
    gate = parse(argv, root)
    if gate is None:
        return None
    names = gate.makefiles or [next((name for name in DEFAULT_NAMES if (gate.folder / name).is_file()), "")]
    files = [gate.folder / name for name in names if name]
    shown = " ".join(names) if names[0] else f"no makefile ({', '.join(DEFAULT_NAMES)}), and it"
    if not files and not gate.targets:
        return shown, ["(the default goal)"]
    rules = _rules(files, gate.folder)
    if rules is None:
        return None
    if not gate.targets:
        return None if rules else (shown, ["(the default goal)"])
    missing = [
        target for target in gate.targets if target not in rules and not _made_anyway(gate.folder, target)
    ]
    return (shown, missing) if missing else None


def _made_anyway(folder: Path, target: str) -> bool:
    """A target with no rule that make still takes: a file of that name, or one its built-in
    rules could make it from (verify.c, verify.sh)."""
    return (folder / target).exists() or any(folder.glob(f"{glob_escape(target)}.*"))


def _rules(files: list[Path], folder: Path) -> set[str] | None:
    """The targets the rules of `files` (and the files they include) name; None when a rule or an
    include names one through a variable or a pattern, which text alone cannot settle."""
    found: set[str] = set()
    variables: dict[str, str] = {}
    todo, seen = list(files), set[Path]()
    while todo:
        path = todo.pop()
        if path in seen or len(seen) > _DEPTH:
            continue
        seen.add(path)
        try:  # a regular file, of a makefile's size: never a FIFO or /dev/zero an include names
            if not path.is_file() or path.stat().st_size > _MAX_BYTES:
                raise OSError(f"not a makefile: {path}")
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None if path not in files or path.is_file() else set()
        if _EVAL.search(text):  # rules made by $(eval ...) as make runs
            return None
        for line in text.replace("\\\n", " ").splitlines():
            assigned = _ASSIGN.match(line)
            if assigned:
                name, how, value = assigned.group(1), assigned.group(2), assigned.group(3).strip()
                if how == "+" and name in variables:
                    value = f"{variables[name]} {value}"
                if how != "?" or name not in variables:
                    variables[name] = value
                continue
            included = _INCLUDE.match(line)
            if included:
                names = _expand(included.group(1), variables)
                if names is None:
                    return None
                todo += [folder / name for name in names.split()]
                continue
            rule = _RULE.match(line)
            if rule:
                targets = _expand(rule.group(1), variables)
                if targets is None or "%" in targets:
                    return None
                found.update(targets.split())
    return found


def _expand(text: str, variables: dict[str, str]) -> str | None:
    """`text` with the variables set so far by plain assignments put in (`$(VENV)/.installed`);
    None when one is not known or holds a function ($(shell ...), $(wildcard ...))."""
    for _ in range(_DEPTH):
        if "$" not in text:
            return text
        known = True

        def value(match: re.Match[str]) -> str:
            nonlocal known
            name = match.group(1) or match.group(2)
            if name not in variables:
                known = False
            return variables.get(name, "")

        text = _REFERENCE.sub(value, text)
        if not known:
            return None
    return None
