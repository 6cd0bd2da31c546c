"""Agent adapters by name: ADAPTERS is the one list of them; `ralph agents`, `--agent`'s help and
completion, and docs/agents.md's table (checked by tests/agents/test_adapter_table.py) follow it."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence

from ralph.agents.base import Adapter
from ralph.errors import InvalidInput

ADAPTERS = {
    "claude": ("ralph.agents.claude", "ClaudeAdapter"),
    "codex": ("ralph.agents.codex", "CodexAdapter"),
    "opencode": ("ralph.agents.opencode", "OpencodeAdapter"),
    "gemini": ("ralph.agents.gemini", "GeminiAdapter"),
    "command": ("ralph.agents.command", "CommandAdapter"),
}


def names_in_words() -> str:
    """The adapters' names as a sentence lists them: "claude, codex, ... or command"."""
    names = list(ADAPTERS)
    return ", ".join(names[:-1]) + " or " + names[-1]


def _split(value: str | Sequence[str] | None) -> list[str]:
    return shlex.split(value) if isinstance(value, str) else list(value or [])


def make_adapter(
    name: str | None,
    agent_cmd: str | Sequence[str] | None,
    model: str | None = None,
    extra_args: str | Sequence[str] | None = None,
) -> Adapter:
    """The adapter for `name`. For `command`, `agent_cmd` is the program and its arguments (a
    shell-like string, split but never run by a shell, or an argv list); for a named CLI it
    replaces the program (e.g. a path to the binary)."""
    name = name or ("command" if agent_cmd else None)
    if name is None:
        raise InvalidInput(
            "no agent chosen: pass --agent (and --agent-cmd for 'command') or set it in config"
        )
    if name not in ADAPTERS:
        raise InvalidInput(f"unknown agent {name!r} (known: {', '.join(ADAPTERS)})")
    module_name, class_name = ADAPTERS[name]
    import importlib

    # Callable, not type[Adapter]: a named CLI's adapter and `command`'s take different arguments.
    adapter_class: Callable[..., Adapter] = getattr(importlib.import_module(module_name), class_name)
    if name == "command":
        return adapter_class(_split(agent_cmd) + _split(extra_args))
    program = _split(agent_cmd)
    program_name = program[0] if program else None
    return adapter_class(model=model, extra_args=program[1:] + _split(extra_args), program=program_name)
