"""Every child process ralph starts has an owner, checked from the source (ast): git runs through
a `Repo`'s Runner (ralph/store/git/run.py), agents, gates and hooks through the supervisor
(ralph/loop/process/supervisor.py), a short-lived tool that is neither through
ralph.store.programs.run; each with a timeout. A module outside them that starts a process, or
imports `subprocess` to, is caught, and so is a `subprocess.run` without a timeout anywhere.

The few modules allowed besides, each with its reason, are ALLOWED: a person's own interactive
programs, which no timeout may cut short, and the demo."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

OWNERS = {
    "ralph/store/git/run.py": "git, through a Repo's Runner: each call with GIT_TIMEOUT_S",
    "ralph/store/programs.py": "run: a short-lived tool (a forge's CLI, the bwrap probe), with a timeout",
    "ralph/loop/process/supervisor.py": "agents, gates and hooks: each run with its timeout",
}
ALLOWED = {
    "ralph/cli/drafts.py": "the person's $EDITOR and pager on their terminal: they end it, no timeout",
    "ralph/demo/__main__.py": "the demo stands in for a person at a terminal running git and ralph",
    "ralph/demo/agent.py": "the demo's agent: the supervisor's timeout bounds it and what it starts",
}

# A call of one of these starts a process; so does any use of a module named here.
STARTING_CALLS = {
    ("os", "system"),
    ("os", "popen"),
    ("os", "fork"),
    ("os", "forkpty"),
    ("os", "posix_spawn"),
    ("os", "posix_spawnp"),
    ("click", "edit"),
    ("click", "launch"),
    ("click", "echo_via_pager"),
    ("asyncio", "create_subprocess_exec"),
    ("asyncio", "create_subprocess_shell"),
    ("pty", "spawn"),
}
STARTING_PREFIXES = {"os": ("exec", "spawn")}
STARTING_MODULES = {"subprocess", "multiprocessing", "pty", "webbrowser"}


def _dotted(node: ast.expr) -> tuple[str, str] | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.value.id, node.attr
    return None


def calls_and_imports(tree: ast.AST) -> list[ast.Call | ast.Import | ast.ImportFrom]:
    """Every call and import of a module, in the order of the source: all the two checks below
    read. One walk of the tree serves both, on a plain stack rather than ast.walk's generators:
    the check of ralph/ went from 0.53 to 0.40 CPU-s, most of the rest parsing."""
    found: list[ast.Call | ast.Import | ast.ImportFrom] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call | ast.Import | ast.ImportFrom):
            found.append(node)
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                stack.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)
    return sorted(found, key=lambda node: (node.lineno, node.col_offset))


def starts(nodes: Iterable[ast.AST]) -> list[tuple[int, str]]:
    """(line, what) of each place in a module that starts a process or imports a module to."""
    found = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, f"import {a.name}")
                for a in node.names
                if a.name.split(".")[0] in STARTING_MODULES
            ]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] in STARTING_MODULES:
                found.append((node.lineno, f"from {node.module} import"))
            found += [
                (node.lineno, f"from {node.module} import {a.name}")
                for a in node.names
                if (node.module, a.name) in STARTING_CALLS
                or a.name.startswith(STARTING_PREFIXES.get(node.module, ("\0",)))
            ]
        elif isinstance(node, ast.Call) and (name := _dotted(node.func)):
            module, function = name
            if name in STARTING_CALLS or function.startswith(STARTING_PREFIXES.get(module, ("\0",))):
                found.append((node.lineno, f"{module}.{function}()"))
    return found


def runs_without_timeout(nodes: Iterable[ast.AST]) -> list[int]:
    """The lines of each `subprocess.run(...)` that passes no timeout."""
    return [
        node.lineno
        for node in nodes
        if isinstance(node, ast.Call)
        and _dotted(node.func) == ("subprocess", "run")
        and not any(keyword.arg == "timeout" for keyword in node.keywords)
    ]


def type_only(tree: ast.Module) -> set[int]:
    """The lines of imports under `if TYPE_CHECKING:`: for annotations, they start nothing."""
    return {
        inner.lineno
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for inner in ast.walk(node)
        if isinstance(inner, ast.Import | ast.ImportFrom)
    }


def violations(root: Path, owners=OWNERS, allowed=ALLOWED) -> list[str]:
    found = []
    for path in sorted((root / "ralph").rglob("*.py")):
        module = path.relative_to(root).as_posix()
        if module in allowed:
            continue
        tree = ast.parse(path.read_bytes(), filename=module)
        nodes = calls_and_imports(tree)
        if module not in owners:
            skip = type_only(tree)
            found += [f"{module}:{line} {what}: no owner" for line, what in starts(nodes) if line not in skip]
        found += [f"{module}:{line} subprocess.run without a timeout" for line in runs_without_timeout(nodes)]
    return found


def test_every_process_ralph_starts_has_an_owner_and_a_timeout():
    assert violations(ROOT) == []


def test_the_owners_and_allowed_modules_exist_and_say_why():
    for module, why in {**OWNERS, **ALLOWED}.items():
        assert (ROOT / module).is_file(), module
        assert len(why.split()) >= 6, module


def test_a_process_started_outside_the_owners_is_caught(tmp_path):
    files = {
        "ralph/store/git.py": "import subprocess\ndef f():\n    subprocess.run(['git'], timeout=1)\n",
        "ralph/store/quiet.py": "import typing\nif TYPE_CHECKING:\n    import subprocess\n",
        "ralph/cli/editor.py": "import click\ndef f():\n    click.edit('x')\n",
        "ralph/loop/lazy.py": "def f():\n    import subprocess\n    return subprocess\n",
        "ralph/loop/shell.py": "import os\ndef f():\n    os.system('make')\n    os.execvp('a', ['a'])\n",
        "ralph/usecases/named.py": "from subprocess import run\nfrom os import spawnlp\n",
        "ralph/store/programs.py": "import subprocess\ndef f():\n    subprocess.run(['gh'])\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    owners = {"ralph/store/git.py": "", "ralph/store/programs.py": ""}
    assert violations(tmp_path, owners, {"ralph/cli/editor.py": ""}) == [
        "ralph/loop/lazy.py:2 import subprocess: no owner",
        "ralph/loop/shell.py:3 os.system(): no owner",
        "ralph/loop/shell.py:4 os.execvp(): no owner",
        "ralph/store/programs.py:3 subprocess.run without a timeout",
        "ralph/usecases/named.py:1 from subprocess import: no owner",
        "ralph/usecases/named.py:2 from os import spawnlp: no owner",
    ]
    assert violations(tmp_path, owners, {})[0] == "ralph/cli/editor.py:3 click.edit(): no owner"
