"""The construct loop's settings: one frozen type holding every default once. The plan's config
record overrides the defaults; command-line flags override both."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ralph.durations import parse_duration  # noqa: F401 (the loop's flags parse with it)
from ralph.errors import InvalidInput


def split_command(text: str, what: str) -> tuple[str, ...]:
    """A command line split like a shell would split it (never run by one)."""
    import shlex

    try:
        return tuple(shlex.split(text))
    except ValueError as exc:  # unbalanced quotes
        raise InvalidInput(f"cannot split the {what} {text!r}: {exc}") from None


@dataclass(frozen=True)
class Settings:
    spec: str = ""
    agent: str | None = None
    agent_cmd: str | tuple[str, ...] | None = None
    agent_args: str | tuple[str, ...] | None = None
    model: str | None = None
    timeout_s: float = 300.0
    gate: tuple[str, ...] = ("make", "verify")
    gate_timeout_s: float = 600.0
    max_iterations: int = 10
    max_minutes: float | None = None
    max_attempts: int = 3
    max_decompose_depth: int = 3
    parallel: int = 4
    allow_dirty: bool = False
    grace_s: float = 3.0
    context_warn: float = 0.70
    context_compact: float = 0.85
    context_kill: float = 0.95
    context_window: int | None = None
    run_hooks: bool = False  # run the repository's pre-commit hook on each build, after the gate
    max_wait_s: float = 3600.0  # one wait for a rate or usage limit at most
    limit_backoff_s: float = 30.0  # the first wait for a limit that gives no reset time (doubles)
    max_cost_usd: float | None = None  # money budget; runs of unknown cost do not count towards it
    prices: dict | None = None  # model -> USD per million tokens, over ralph.loop.cost.PRICES
    remote: str | None = None  # the git remote runners on several machines share (ralph.loop.remote)
    runner: str | None = None  # this runner's name in its claims (default host-pid)
    claim_ttl_s: float | None = None  # a claim older than this may be taken over (default: the plan's)

    @classmethod
    def resolve(cls, spec: str, config: dict, flags: dict) -> Settings:
        """The defaults, then the config record's values, then the flags given (not None)."""
        given = {key: value for key, value in flags.items() if value is not None}
        configured = _from_config(config)
        if "agent" in given:
            # An agent named on the command line is that agent's own program: a program the
            # repository's config names (a script shipped in a cloned repository) never replaces it.
            configured.pop("agent_cmd", None)
            if configured.get("agent") != given["agent"]:
                configured.pop("agent_args", None)  # arguments and model of another agent
                configured.pop("model", None)
        values = {**configured, **given}
        unknown = set(values) - {f.name for f in fields(cls)}
        if unknown:
            raise InvalidInput(f"unknown setting(s): {', '.join(sorted(unknown))}")
        if isinstance(values.get("gate"), str):  # the config's gate as --gate takes it: "make verify"
            values["gate"] = split_command(values["gate"], "gate")
        for key in ("gate", "agent_cmd", "agent_args"):
            if isinstance(values.get(key), list):
                values[key] = tuple(values[key])
        settings = replace(DEFAULTS, spec=spec, **values)
        if settings.max_minutes is not None and not 0 < settings.max_minutes < float("inf"):
            raise InvalidInput(f"--max-minutes must be a number of minutes > 0, not {settings.max_minutes}")
        if settings.parallel < 1 or settings.max_iterations < 1 or settings.max_attempts < 1:
            raise InvalidInput("--parallel, --max-iterations and --max-attempts must be at least 1")
        return settings


DEFAULTS = Settings()

# Config record keys that name a setting differently (the config keeps durations in milliseconds).
_CONFIG_MS = {
    "timeout_ms": "timeout_s",
    "gate_timeout_ms": "gate_timeout_s",
    "max_wait_ms": "max_wait_s",
    "claim_ttl_ms": "claim_ttl_s",
}
_NOT_SETTINGS = {"t", "commit"}  # the record type; `commit` is for the state commands


def _from_config(config: dict) -> dict:
    names = {f.name for f in fields(Settings)}
    values: dict = {}
    for key, value in config.items():
        if value is None or key in _NOT_SETTINGS:
            continue
        if key in _CONFIG_MS:
            values[_CONFIG_MS[key]] = value / 1000
        elif key in names:
            values[key] = value
    return values
