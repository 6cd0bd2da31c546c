"""Agent adapters by name."""

from __future__ import annotations

import shlex

from ralph.agents.base import Adapter
from ralph.errors import InvalidInput

ADAPTERS = ("command",)


def make_adapter(name: str | None, agent_cmd: str | list[str] | None, model: str | None = None) -> Adapter:
    """The adapter for `name`; `agent_cmd` is a shell-like string (split, never run by a shell)
    or an argv list."""
    name = name or ("command" if agent_cmd else None)
    if name is None:
        raise InvalidInput(
            "no agent chosen: pass --agent (and --agent-cmd for 'command') or set it in config"
        )
    if name == "command":
        from ralph.agents.command import CommandAdapter

        argv = shlex.split(agent_cmd) if isinstance(agent_cmd, str) else list(agent_cmd or [])
        return CommandAdapter(argv)
    raise InvalidInput(f"unknown agent {name!r} (known: {', '.join(ADAPTERS)})")
