"""The generic adapter: run any program, never through a shell.

The prompt goes to the program's stdin (then EOF) and into the file named by
RALPH_PROMPT_FILE. Lines of its output that are Claude Code stream-json events are read for
token usage, like the real CLI's.
"""

from __future__ import annotations

from ralph.agents.base import Adapter, Invocation
from ralph.agents.claude_stream import parse_stream_json
from ralph.agents.events import Event
from ralph.errors import InvalidInput


class CommandAdapter(Adapter):
    name = "command"

    def __init__(self, argv: list[str]):
        if not argv:
            raise InvalidInput(
                "the command agent needs a program: --agent-cmd 'prog args' or config agent_cmd"
            )
        self.argv = argv

    def invocation(
        self, prompt: str, prompt_file: str, env: dict[str, str], model: str | None = None
    ) -> Invocation:
        # The run's model reaches the program as $RALPH_MODEL (ralph's environment), not in its argv.
        return Invocation(list(self.argv), prompt.encode("utf-8"), env)

    def parse_line(self, line: str) -> list[Event]:
        return parse_stream_json(line)
