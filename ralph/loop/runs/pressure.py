"""Context pressure: how full the agent's context window is, from the token counts it reports.

The fill of a model turn is its input + cache-creation + cache-read tokens over the model's
context window. Tiers (thresholds from the settings): warn (log and journal, the agent goes
on), compact (stop, and continue the item in a fresh run that opens with a compacted context),
kill (stop; the task is killed with kill_reason "context_limit" and decomposed). A compaction
whose first turn is still above AFTER_COMPACT_LIMIT counts as failed: kill.
"""

from __future__ import annotations

from collections.abc import Callable

from ralph.agents.base import Usage
from ralph.plan.records import StopReason
from ralph.usecases.settings import Settings

AFTER_COMPACT_LIMIT = 0.80


class Pressure:
    def __init__(
        self,
        settings: Settings,
        window: int,
        after_compaction: bool,
        on_warn: Callable[[float], None],
        on_compacted: Callable[[float], None],
    ):
        self.warn = settings.context_warn
        self.compact = settings.context_compact
        self.kill = settings.context_kill
        self.window = window
        self.after_compaction = after_compaction
        self.on_warn, self.on_compacted = on_warn, on_compacted
        self.fill = 0.0
        self.turns = 0
        self.warned = False

    def check(self, usage: Usage) -> StopReason | None:
        """Called after each model turn; returns a reason to stop the agent, or None."""
        window = usage.context_window or self.window
        self.fill = usage.last_turn_context / window if window else 0.0
        self.turns += 1
        if self.after_compaction and self.turns == 1:
            self.on_compacted(self.fill)
            if self.fill > AFTER_COMPACT_LIMIT:
                return StopReason.CONTEXT_LIMIT
        if self.fill >= self.kill:
            return StopReason.CONTEXT_LIMIT
        if self.fill >= self.compact:
            return StopReason.CONTEXT_COMPACT
        if self.fill >= self.warn and not self.warned:
            self.warned = True
            self.on_warn(self.fill)
        return None
