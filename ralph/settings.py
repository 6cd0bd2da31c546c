"""The construct loop's settings: the plan's config record, overridden by command-line flags."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ralph.errors import InvalidInput

DEFAULTS = {
    "timeout_ms": 300_000,
    "max_iterations": 10,
    "max_attempts": 3,
    "parallel": 4,
    "gate": ["make", "verify"],
    "gate_timeout_ms": 600_000,
    "context_warn": 0.70,
    "context_compact": 0.85,
    "context_kill": 0.95,
}
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def parse_duration(text: str) -> float:
    """Seconds from '300000' (milliseconds, as the config's timeout_ms), '90s', '5m', '1.5h'."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", str(text))
    if not match or float(match.group(1)) <= 0:
        raise InvalidInput(f"invalid duration {text!r}: use milliseconds or a unit, e.g. 300000, 90s, 5m")
    return float(match.group(1)) * _UNITS[match.group(2) or "ms"]


@dataclass
class Settings:
    spec: str
    agent: str | None = None
    agent_cmd: str | list[str] | None = None
    model: str | None = None
    agent_args: str | list[str] | None = None
    timeout_s: float = DEFAULTS["timeout_ms"] / 1000
    gate: list[str] = field(default_factory=lambda: list(DEFAULTS["gate"]))
    gate_timeout_s: float = DEFAULTS["gate_timeout_ms"] / 1000
    max_iterations: int = DEFAULTS["max_iterations"]
    max_minutes: float | None = None
    max_attempts: int = DEFAULTS["max_attempts"]
    parallel: int = DEFAULTS["parallel"]
    allow_dirty: bool = False
    grace_s: float = 3.0
    context: dict = field(default_factory=dict)

    @classmethod
    def resolve(cls, spec: str, config: dict, flags: dict) -> Settings:
        """Config record values, then flags (those not None) on top."""
        merged = {**DEFAULTS, **{k: v for k, v in config.items() if v is not None}}
        settings = cls(
            spec=spec,
            agent=merged.get("agent"),
            agent_cmd=merged.get("agent_cmd"),
            model=merged.get("model"),
            timeout_s=merged["timeout_ms"] / 1000,
            gate=list(merged["gate"]),
            gate_timeout_s=merged["gate_timeout_ms"] / 1000,
            max_iterations=merged["max_iterations"],
            max_minutes=merged.get("max_minutes"),
            max_attempts=merged["max_attempts"],
            parallel=merged["parallel"],
            agent_args=merged.get("agent_args"),
            context={
                k: merged[k]
                for k in ("context_warn", "context_compact", "context_kill", "context_window")
                if k in merged
            },
        )
        for key, value in flags.items():
            if value is None:
                continue
            if key == "timeout":
                settings.timeout_s = parse_duration(value)
            else:
                setattr(settings, key, value)
        if settings.parallel < 1 or settings.max_iterations < 1:
            raise InvalidInput("--parallel and --max-iterations must be at least 1")
        return settings
