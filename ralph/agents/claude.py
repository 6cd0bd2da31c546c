"""Claude Code (`claude`, npm @anthropic-ai/claude-code), headless with stream-json output."""

from __future__ import annotations

import os

from ralph.agents.base import CliAdapter, Invocation
from ralph.agents.claude_stream import parse_stream_json
from ralph.agents.events import Event


class ClaudeAdapter(CliAdapter):
    name = "claude"
    program = "claude"
    auth_hint = "log in by running `claude` once, or set ANTHROPIC_API_KEY"
    install_hint = "npm install -g @anthropic-ai/claude-code"
    state_paths = (".claude/", ".claude.json")
    reports_cost = True  # total_cost_usd in its result event
    default_context_window = 200_000

    def invocation(
        self, prompt: str, prompt_file: str, env: dict[str, str], model: str | None = None
    ) -> Invocation:
        model = model or self.model
        argv = [self.program, "-p", prompt, "--output-format", "stream-json", "--verbose"]
        argv.append("--dangerously-skip-permissions")
        if model:
            argv += ["--model", model]
        env = dict(env)
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            # As root, Claude Code refuses --dangerously-skip-permissions outside a sandbox it
            # is told about; ralph's runs are unattended by design.
            env["IS_SANDBOX"] = "1"  # exactly "1": other values are not accepted
        return Invocation(argv + self.extra_args, None, env)

    def parse_line(self, line: str) -> list[Event]:
        return parse_stream_json(line)
