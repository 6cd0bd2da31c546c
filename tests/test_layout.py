"""The test suite's layout, checked from the source (ast), so that a reader finds a module's tests by
its name and a test module's helpers in one place.

(a) Helpers are shared through tests/support/ alone: no module under tests/ imports from a test
    module (test_*.py), from a conftest.py, or from any module of the `tests` package outside
    `tests.support`. Fixtures reach tests through pytest, by name, never by import.
(b) Every module of ralph/ with logic has a test module of its own name, tests/<package>/
    test_<module>.py (tests/test_<module>.py for ralph/<module>.py), or an entry in
    tests.support.coverage.COVERED that names the existing test modules covering it and says, in
    one sentence, which of their behaviour does.

A module has logic when it defines a function or a method: a `def` anywhere in it. A module of
only constants, enums, dataclass or pydantic fields and exception classes without methods declares
data, and needs no tests of its own. An __init__.py or __main__.py cannot have a test module of its
own name: one with logic needs an entry in the map. An entry the map no longer needs (its module
has a test module of its own name now, has no logic, or is gone) is an error too, so the map
shrinks as tests are written and never names what is not there."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.support.coverage import COVERED
from tests.support.layers import LAYERS

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = "tests.support"
FRONT_DOORS = ("__init__", "__main__")


def imported(path: Path, root: Path) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of each module `path` imports; `from package import name` gives
    package.name when that is a module of `root`, relative imports resolved."""
    package = list(path.relative_to(root).parent.parts)
    for line, level, names, from_module in summary(path.read_bytes(), str(path)).imports:
        if from_module is None:
            for name in names:
                yield line, name
            continue
        base = package[: len(package) - level + 1] if level else []
        module = ".".join([*base, *([from_module] if from_module else [])])
        folder = root.joinpath(*module.split("."))
        for name in names:
            submodule = folder / name
            is_module = submodule.with_suffix(".py").is_file() or (submodule / "__init__.py").is_file()
            yield line, f"{module}.{name}" if is_module else module


class Summary(NamedTuple):
    """What these checks read of a module: its imports (line, level, names, the module of a
    `from` import: "" for `from . import x`, None for a plain `import`) and whether it has logic."""

    imports: tuple[tuple[int, int, tuple[str, ...], str | None], ...]
    has_logic: bool


# By the bytes, not the path: the checks of ralph/'s imports and of its tests read each module
# again, and parsing all of ralph/ took half a CPU-second each time; bytes changed are parsed again.
@lru_cache(maxsize=2048)
def summary(data: bytes, filename: str) -> Summary:
    imports: list[tuple[int, int, tuple[str, ...], str | None]] = []
    logic = False
    for node in statements(ast.parse(data, filename=filename)):
        if isinstance(node, ast.Import):
            imports.append((node.lineno, 0, tuple(alias.name for alias in node.names), None))
        elif isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names)
            imports.append((node.lineno, node.level, names, node.module or ""))
        logic = logic or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    return Summary(tuple(imports), logic)


# What a statement's blocks may hold: statements, an except clause, a case of a match.
BLOCK_ITEMS = (ast.stmt, ast.excepthandler, ast.match_case)


def statements(tree: ast.Module) -> Iterator[ast.AST]:
    """Every statement of a module, however deeply nested: an import and a def are statements, and
    no expression holds one (a lambda's body is an expression), so the blocks lead to them all.
    Walking the blocks alone skips the expressions, some nine nodes in ten: ast.walk over every
    node cost half of what the checks of ralph/ and tests/ spend."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        inner = [
            item
            for field in node._fields
            if isinstance(value := getattr(node, field, None), list)
            for item in value
            if isinstance(item, BLOCK_ITEMS)
        ]
        stack.extend(reversed(inner))  # in the order of the source


def forbidden(module: str) -> bool:
    """A test module, a conftest, or a module of the tests package that is not tests.support."""
    parts = module.split(".")
    if any(part == "conftest" or part.startswith("test_") for part in parts):
        return True
    in_tests = parts[0] == "tests"
    return in_tests and module != "tests" and module != SUPPORT and not module.startswith(SUPPORT + ".")


def import_violations(root: Path) -> list[str]:
    return [
        f"{path.relative_to(root)}:{line} imports {module}"
        for path in sorted((root / "tests").rglob("*.py"))
        for line, module in imported(path, root)
        if forbidden(module)
    ]


def has_logic(path: Path) -> bool:
    return summary(path.read_bytes(), str(path)).has_logic


def own_test_module(module: str) -> str | None:
    """tests/<package>/test_<module>.py for ralph/<package>/<module>.py; None for a front door."""
    path = Path(module)
    if path.stem in FRONT_DOORS:
        return None
    return Path("tests", *path.parts[1:-1], f"test_{path.stem}.py").as_posix()


def has_own_tests(root: Path, module: str) -> bool:
    own = own_test_module(module)
    return own is not None and (root / own).is_file()


def uncovered(root: Path, covered: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The modules of ralph/ with logic that have neither tests of their own name nor a map entry."""
    modules = (path.relative_to(root).as_posix() for path in sorted((root / "ralph").rglob("*.py")))
    return [
        module
        for module in modules
        if has_logic(root / module) and not has_own_tests(root, module) and module not in covered
    ]


def map_problems(root: Path, covered: Mapping[str, tuple[str, ...]]) -> list[str]:
    problems = []
    for module, (*tests, why) in covered.items():
        path = root / module
        if not path.is_file() or not has_logic(path):
            problems.append(f"{module}: no module with logic by that name; drop the entry")
        elif has_own_tests(root, module):
            problems.append(f"{module}: has {own_test_module(module)}; drop the entry")
        if not tests:
            problems.append(f"{module}: names no test module")
        for test in tests:
            if not Path(test).name.startswith("test_") or not (root / test).is_file():
                problems.append(f"{module}: {test} is not a test module")
        if len(why.split()) < 6 or not why.endswith("."):
            problems.append(f"{module}: say in one sentence which behaviour of those tests covers it")
    return problems


def test_test_modules_import_helpers_from_tests_support_only():
    assert import_violations(ROOT) == []


def test_every_module_with_logic_has_its_own_test_module_or_says_which_tests_cover_it():
    assert uncovered(ROOT, COVERED) == []


def test_each_entry_of_the_coverage_map_names_existing_tests_and_says_how_they_cover_it():
    assert map_problems(ROOT, COVERED) == []


def layer_of(module: str) -> int:
    """The index in LAYERS of the longest prefix naming the module; the base below them all."""
    best, depth = len(LAYERS), 0
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and prefix.count(".") + 1 > depth:
                best, depth = index, prefix.count(".") + 1
    return best


def ralph_imports(root: Path) -> dict[str, list[tuple[int, str]]]:
    """Each module of ralph/ and the modules of ralph/ it imports (line, dotted name)."""
    found = {}
    for path in sorted((root / "ralph").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[module] = [(line, name) for line, name in imported(path, root) if name.split(".")[0] == "ralph"]
    return found


def top(module: str) -> str:
    """The name of the module's layer (its first prefix; base for the modules under ralph/)."""
    index = layer_of(module)
    return LAYERS[index][0] if index < len(LAYERS) else "the base"


def upward_imports(root: Path) -> list[str]:
    return [
        f"{module} imports {name} (line {line}): {top(name)} is above {top(module)}"
        for module, names in ralph_imports(root).items()
        for line, name in names
        if layer_of(name) < layer_of(module)
    ]


def import_circles(root: Path) -> list[str]:
    """Each circle of modules importing each other, as `a -> b -> a` (a package stands for its
    __init__, which importing any of its modules runs)."""
    graph = {module: {name for _, name in names} for module, names in ralph_imports(root).items()}
    circles, done = [], set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            circle = path[path.index(module) :] + [module]
            circles.append(" -> ".join(circle))
            return
        if module in done or module not in graph:
            return
        for name in sorted(graph[module]):
            visit(name, [*path, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
    return circles


def test_ralph_imports_run_downward_through_the_layers():
    assert upward_imports(ROOT) == []


def test_no_module_of_ralph_imports_itself_back():
    assert import_circles(ROOT) == []


def test_every_package_of_ralph_has_a_layer_and_every_room_of_the_loop_says_what_it_holds():
    packages = [path.parent for path in (ROOT / "ralph").rglob("__init__.py")]
    named = {prefix for prefixes in LAYERS for prefix in prefixes}
    for package in packages:
        dotted = ".".join(package.relative_to(ROOT).parts)
        if package.parent == ROOT / "ralph" or package.parent == ROOT / "ralph" / "loop":
            assert dotted in named, f"{dotted} has no place in LAYERS"
        if package.parent == ROOT / "ralph" / "loop":
            doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
            assert len(doc.split()) >= 20, f"{dotted}/__init__.py: say in a paragraph what lives there"


# The rules themselves, on small trees made for the purpose: each breaks one and must be caught.


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


SUITE = {
    "tests/__init__.py": "",
    "tests/conftest.py": "import pytest\n",
    "tests/support/__init__.py": "",
    "tests/support/gitrepo.py": "def git(): pass\n",
    "tests/loop/__init__.py": "",
    "tests/loop/conftest.py": "from tests.support.gitrepo import git\n",
    "tests/loop/test_a.py": "from tests.support.gitrepo import git\nfrom tests.support import gitrepo\n",
    "tests/loop/test_b.py": "import pytest\n",
}


def test_a_suite_that_imports_only_from_tests_support_passes(tmp_path):
    assert import_violations(write(tmp_path, SUITE)) == []


@pytest.mark.parametrize(
    ("statement", "module"),
    [
        ("from tests.loop.test_b import x", "tests.loop.test_b"),
        ("from tests.loop import test_b", "tests.loop.test_b"),
        ("from .test_b import x", "tests.loop.test_b"),
        ("from . import test_b", "tests.loop.test_b"),
        ("from tests.conftest import git", "tests.conftest"),
        ("from ..conftest import git", "tests.conftest"),
        ("import tests.loop.conftest", "tests.loop.conftest"),
        ("    from tests.loop.agent_kit import ralph", "tests.loop.agent_kit"),
    ],
)
def test_an_import_from_a_test_module_a_conftest_or_outside_tests_support_is_caught(
    tmp_path, statement, module
):
    body = f"def test_c():\n{statement}\n" if statement.startswith(" ") else f"{statement}\n"
    root = write(tmp_path, {**SUITE, "tests/loop/agent_kit.py": "", "tests/loop/test_c.py": body})
    line = 2 if statement.startswith(" ") else 1
    assert import_violations(root) == [f"tests/loop/test_c.py:{line} imports {module}"]


PACKAGE = {
    "ralph/__init__.py": "",
    "ralph/__main__.py": "import ralph\n",
    "ralph/loop/__init__.py": "",
    "ralph/loop/tested.py": "def run():\n    return 1\n",
    "ralph/loop/records.py": "import enum\n\nclass Kind(enum.Enum):\n    A = 'a'\n\nLIMIT = 3\n",
    "ralph/loop/mapped.py": "class Console:\n    def show(self):\n        pass\n",
    "ralph/cli/__init__.py": "def main():\n    pass\n",
    "tests/loop/test_tested.py": "",
    "tests/loop/test_other.py": "",
}
MAPPED = {
    "ralph/loop/mapped.py": ("tests/loop/test_other.py", "what it shows is asserted by the other tests."),
    "ralph/cli/__init__.py": ("tests/loop/test_other.py", "main() runs in every one of the other tests."),
}


def test_modules_with_tests_of_their_name_or_an_entry_and_modules_of_data_pass(tmp_path):
    root = write(tmp_path, PACKAGE)
    assert uncovered(root, MAPPED) == [] and map_problems(root, MAPPED) == []


def test_a_module_with_logic_and_no_tests_is_caught_and_so_is_a_front_door_with_logic(tmp_path):
    root = write(tmp_path, {**PACKAGE, "ralph/loop/untested.py": "def stop():\n    pass\n"})
    assert uncovered(root, {}) == ["ralph/cli/__init__.py", "ralph/loop/mapped.py", "ralph/loop/untested.py"]


def test_an_entry_for_a_tested_or_missing_module_or_naming_no_real_tests_is_caught(tmp_path):
    root = write(tmp_path, PACKAGE)
    covered = {
        "ralph/loop/tested.py": ("tests/loop/test_other.py", "run() is called by the other tests, too."),
        "ralph/loop/gone.py": ("tests/loop/test_other.py", "nothing covers it since it is gone."),
        "ralph/loop/records.py": ("tests/loop/test_other.py", "the enum values are compared by these."),
        "ralph/loop/mapped.py": ("tests/loop/test_nowhere.py", "tests/loop/helpers.py", "covered"),
    }
    assert map_problems(root, covered) == [
        "ralph/loop/tested.py: has tests/loop/test_tested.py; drop the entry",
        "ralph/loop/gone.py: no module with logic by that name; drop the entry",
        "ralph/loop/records.py: no module with logic by that name; drop the entry",
        "ralph/loop/mapped.py: tests/loop/test_nowhere.py is not a test module",
        "ralph/loop/mapped.py: tests/loop/helpers.py is not a test module",
        "ralph/loop/mapped.py: say in one sentence which behaviour of those tests covers it",
    ]


LAYERED = {
    "ralph/__init__.py": "",
    "ralph/text.py": "",
    "ralph/loop/__init__.py": "",
    "ralph/loop/stages/__init__.py": "",
    "ralph/loop/stages/build.py": "from ralph.loop.runs import agent\nfrom ralph import text\n",
    "ralph/loop/runs/__init__.py": "",
    "ralph/loop/runs/agent.py": "from ralph.store.git import Repo\n",
    "ralph/store/__init__.py": "",
    "ralph/store/git.py": "import ralph.plan.models\n",
    "ralph/plan/__init__.py": "",
    "ralph/plan/models.py": "",
}


def test_downward_imports_pass_and_an_upward_one_is_caught_even_when_lazy(tmp_path):
    root = write(tmp_path, LAYERED)
    assert upward_imports(root) == [] and import_circles(root) == []
    (root / "ralph/store/git.py").write_text("def f():\n    from ralph.loop.runs.agent import x\n")
    assert upward_imports(root) == [
        "ralph.store.git imports ralph.loop.runs.agent (line 2): ralph.loop.runs is above ralph.store"
    ]


def test_a_circle_inside_one_layer_is_caught(tmp_path):
    root = write(tmp_path, {**LAYERED, "ralph/plan/models.py": "from ralph.plan import other\n"})
    (root / "ralph/plan/other.py").write_text("if True:\n    from ralph.plan.models import x\n")
    assert import_circles(root) == ["ralph.plan.models -> ralph.plan.other -> ralph.plan.models"]
