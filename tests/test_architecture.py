"""specs/architecture.md matches the code: its map (the layers in order, each package and module
with what it is) is what tests/support/architecture.py generates from ralph/ now, and every file
its requirements name exists."""

from __future__ import annotations

import re

from tests.support import architecture
from tests.support.layers import LAYERS


def test_the_map_of_the_code_is_current():
    current = architecture.SPEC.read_text(encoding="utf-8")
    assert architecture.spec_text(current) == current, f"{architecture.SPEC} is stale: run make schema"


def test_the_map_lists_every_module_and_every_layer_in_order():
    table = architecture.layout()
    modules = sorted(
        path.relative_to(architecture.ROOT).as_posix()
        for path in (architecture.ROOT / "ralph").rglob("*.py")
        if path.name != "__init__.py"
    )
    assert [module for module in modules if f"| `{module}` |" not in table] == []
    listed = re.findall(r"^\d+\. (.+)$", table, re.M)
    assert len(listed) == len(LAYERS) + 1  # and the base
    assert listed[LAYERS.index(("ralph.loop.stages",))] == "`ralph/loop/stages/`"


def test_a_new_module_s_first_sentence_shows_in_the_map(tmp_path, monkeypatch):
    package = tmp_path / "ralph" / "loop" / "stages"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""The stages."""\n', encoding="utf-8")
    (package / "review.py").write_text('"""REVIEW: reads a build again, e.g. twice. Then more."""\n')
    monkeypatch.setattr(architecture, "ROOT", tmp_path)
    rows = architecture._rows_of("ralph.loop.stages")
    assert rows == [
        "| **`ralph/loop/stages/`** | The stages. |",
        "| `ralph/loop/stages/review.py` | REVIEW: reads a build again, e.g. twice. |",
    ]


def test_every_file_the_requirements_name_exists():
    text = architecture.SPEC.read_text(encoding="utf-8").split("## The map", 1)[0]
    named = set(re.findall(r"\b(?:tests|ralph|bench|docs|specs)/[\w/.-]+\.(?:py|md|json)\b", text))
    assert named and [path for path in sorted(named) if not (architecture.ROOT / path).exists()] == []
