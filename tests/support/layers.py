"""ralph's layers, top to bottom: a module may import from its own layer and the layers below it.
The loop's rooms are layers of their own (ralph/loop/__init__.py says what each holds); the
modules directly under ralph/ (errors, text, clock, ...) are the base every layer may use.
tests/test_layout.py enforces them; specs/architecture.md's table is generated from them
(tests/support/architecture.py)."""

from __future__ import annotations

LAYERS = (
    ("ralph.__main__", "ralph.cli", "ralph.demo"),
    ("ralph.loop",),
    ("ralph.loop.stages",),
    ("ralph.loop.tree",),
    ("ralph.loop.share",),
    ("ralph.loop.runs",),
    ("ralph.loop.process",),
    ("ralph.loop.observe",),
    ("ralph.usecases",),
    ("ralph.store", "ralph.store.git"),  # git's package: the store's layer, its own rows in the map
    ("ralph.plan",),
    ("ralph.agents",),
)
