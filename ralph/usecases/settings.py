"""The construct loop's settings: one frozen type holding every default once, and the config keys
that set them. Layers, lowest first: the defaults, the user's own file
($XDG_CONFIG_HOME/ralph/config.toml), the plan's config record, the command-line flags.

A value has one form in every layer: a gate, agent command or agent arguments is a command line
(split like a shell would, never run by one) or its argv; a duration (the *_ms keys) is a number of
milliseconds or a number with a unit (`90s`, `5m`, `1500ms`), as the flags take it: read, checked
and converted by ralph.usecases.config_values. This module is below the loop, so `ralph config`
reads and checks settings without loading the loop."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from ralph.errors import InvalidInput
from ralph.plan.declared import CONFIG_KEYS
from ralph.usecases.config_values import (
    SANDBOX_MODES,
    check_value,
    config_value,
    refuse_plan_value,
    setting_value,
    split_command,
)


def _declared(name: str) -> Any:
    """A config key's declared default as its setting holds it: durations in seconds, a command
    as its argv (declared defaults are plain words)."""
    key = CONFIG_KEYS[name]
    if key.kind == "duration":
        return key.default / 1000
    if key.kind == "command":
        return tuple(key.default.split())
    return key.default


@dataclass(frozen=True)
class Settings:
    spec: str = ""
    agent: str | None = None
    agent_cmd: str | tuple[str, ...] | None = None
    agent_args: str | tuple[str, ...] | None = None
    model: str | None = None
    timeout_s: float = _declared("timeout_ms")
    gate: tuple[str, ...] = _declared("gate")
    gate_timeout_s: float = _declared("gate_timeout_ms")
    max_iterations: int = _declared("max_iterations")
    max_minutes: float | None = None
    max_attempts: int = _declared("max_attempts")
    max_rebuilds: int = _declared("max_rebuilds")
    max_agent_failures: int = _declared("max_agent_failures")
    agent_retry_s: float = _declared("agent_retry_ms")
    max_decompose_depth: int = _declared("max_decompose_depth")
    max_new_items: int = _declared("max_new_items")
    parallel: int = _declared("parallel")
    allow_dirty: bool = False
    grace_s: float = 3.0
    context_warn: float = _declared("context_warn")
    context_compact: float = _declared("context_compact")
    context_kill: float = _declared("context_kill")
    context_window: int | None = None
    run_hooks: bool = _declared("run_hooks")
    spec_check: bool = _declared("spec_check")  # a spec is checked (ralph.usecases.spec_lint) before PLAN
    max_wait_s: float = _declared("max_wait_ms")
    limit_backoff_s: float = 30.0  # the first wait for a limit that gives no reset time (doubles)
    max_cost_usd: float | None = None  # money budget; runs of unknown cost do not count towards it
    max_tokens: int | None = None  # token budget of all agent runs
    prices: dict[str, Any] | None = None  # model -> USD per million tokens, over the genai-prices data
    # stage -> its models, over `model` (--stage-model): one, or an escalation (cheap first)
    stage_models: dict[str, tuple[str, ...]] | None = None
    hooks: dict[str, Any] | None = None  # hook event -> command run on it (ralph/loop/process/hooks.py)
    hook_timeout_s: float = _declared("hook_timeout_ms")
    remote: str | None = None  # the git remote runners on several machines share (ralph.loop.share.remote)
    runner: str | None = None  # this runner's name in its claims (default host-pid)
    claim_ttl_s: float | None = None  # a claim older than this may be taken over (default: the plan's)
    sandbox: str = _declared("sandbox")  # off, auto or required: the fence around agents and gates
    sandbox_hide: tuple[str, ...] = ()  # more files the runs see empty, beside the built-in ones
    docs_paths: tuple[str, ...] = ()  # more files a docs task may change (ralph.plan.type_rules)
    # The review before COMPLETE: True, the default aspects; False, none; or the aspects named.
    review: bool | tuple[str, ...] = _declared("review")

    @classmethod
    def resolve(
        cls, spec: str, config: dict[str, Any], flags: dict[str, Any], user: dict[str, Any] | None = None
    ) -> Settings:
        """The defaults, then the user's file, then the config record's values, then the flags
        given (not None)."""
        given = {key: value for key, value in flags.items() if value is not None}
        mine, plans = _from_config(user or {}, USER_FILE), _from_config(config, PLAN_ORIGIN)
        _drop_other_agents_models(given.get("agent") or plans.get("agent") or mine.get("agent"), mine, plans)
        configured = {**mine, **plans}
        if "agent" in given:
            # An agent named on the command line is that agent's own program: a program the
            # repository's config names (a script shipped in a cloned repository) never replaces it.
            configured.pop("agent_cmd", None)
            if configured.get("agent") != given["agent"]:
                configured.pop("agent_args", None)  # arguments of another agent
        # A stage's model is set stage by stage: a flag for BUILD keeps the config's VERIFY model.
        models = {
            **(mine.get("stage_models") or {}),
            **(plans.get("stage_models") or {}),
            **(given.get("stage_models") or {}),
        }
        for layer in (configured, given):
            layer.pop("stage_models", None)
        if models:
            given["stage_models"] = {stage: _escalation(chosen) for stage, chosen in models.items()}
        if configured.get("sandbox") is None and "sandbox" not in given and os.environ.get(SANDBOX_ENV):
            configured["sandbox"] = _sandbox_default()
        if given.get("review") is True and isinstance(configured.get("review"), list):
            given.pop("review")  # --review turns the review on: with the aspects the config names
        values = {**configured, **given}
        unknown = set(values) - {f.name for f in fields(cls)}
        if unknown:
            raise InvalidInput(
                f"unknown {'setting' if len(unknown) == 1 else 'settings'}: {', '.join(sorted(unknown))}"
            )
        for listed in ("sandbox_hide", "docs_paths", "review"):
            if isinstance(values.get(listed), list):
                values[listed] = tuple(values[listed])
        for key in COMMANDS:  # "make verify" as --gate takes it, or ["make", "verify"]
            if isinstance(values.get(key), str):
                values[key] = split_command(values[key], key)
            elif isinstance(values.get(key), list):
                values[key] = tuple(values[key])
        settings = replace(DEFAULTS, spec=spec, **values)
        if settings.max_minutes is not None and not 0 < settings.max_minutes < float("inf"):
            raise InvalidInput(f"--max-minutes must be a number of minutes > 0, not {settings.max_minutes}")
        if settings.parallel < 1 or settings.max_iterations < 1 or settings.max_attempts < 1:
            raise InvalidInput("--parallel, --max-iterations and --max-attempts must be at least 1")
        return settings

    def model_for(self, stage: str, failures: int = 0) -> str | None:
        """The model a stage's runs use, the first set of: --stage-model, the config's
        `stage_models`, --model, the config's `model` (None: the agent CLI's default). A stage
        given an escalation runs the model `failures` steps along it (the last one past its end):
        a task's BUILD after that many failed builds."""
        chosen = (self.stage_models or {}).get(str(stage))
        if not chosen:
            return self.model
        return chosen[min(max(failures, 0), len(chosen) - 1)]


DEFAULTS = Settings()


def _escalation(chosen: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """A stage's model as the setting holds it: its escalation, one model or more."""
    return (chosen,) if isinstance(chosen, str) else tuple(chosen)


def _drop_other_agents_models(agent: str | None, *layers: dict[str, Any]) -> None:
    """A config layer's models (`model`, `stage_models`) are for the agent that layer names: a
    layer that names another agent than the one in force keeps them for its own. A layer that
    names none sets models for whichever agent runs, named by a flag or another layer."""
    for layer in layers:
        if layer.get("agent") not in (None, agent):
            layer.pop("model", None)
            layer.pop("stage_models", None)


SANDBOX_ENV = "RALPH_SANDBOX"  # the default mode, below every config layer and flag (the tests' off)


def _sandbox_default() -> str:
    mode = os.environ[SANDBOX_ENV]
    if mode not in SANDBOX_MODES:
        raise InvalidInput(f"${SANDBOX_ENV}: {mode!r} is not one of {', '.join(SANDBOX_MODES)}")
    return mode


PLAN_ORIGIN = "plan.jsonl"
USER_FILE = "the user's config file"
DEFAULT_ORIGIN = "default"
FLAG_ORIGIN = "flag"
COMMANDS = ("gate", "agent_cmd", "agent_args")


# Every key the config record and the user's file take, with its kind, default and meaning, as
# ralph/plan/models.py declares them. Durations keep their _ms names: a plain number is
# milliseconds, so configs written before units were accepted mean what they meant.
PLAN_ONLY = {name for name, key in CONFIG_KEYS.items() if key.setting is None}  # this repository's history


def _from_config(config: dict[str, Any], where: str) -> dict[str, Any]:
    """The settings a config layer sets; a known key with a bad value is refused, naming it.
    Unknown keys are left alone: the record keeps a hand editor's extra fields."""
    values: dict[str, Any] = {}
    for name, value in config.items():
        key = CONFIG_KEYS.get(name)
        if value is None or key is None or key.setting is None:
            continue
        check_value(name, value, where)
        if where == PLAN_ORIGIN:
            refuse_plan_value(name, value)
        values[key.setting] = setting_value(name, value)
    return values


def defaults() -> dict[str, Any]:
    """Each config key's default, as the key spells it (None: no default)."""
    return {name: key.default for name, key in CONFIG_KEYS.items()}


def layered(
    config: dict[str, Any], user: dict[str, Any], user_path: str, flags: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Each config key's value in force and where it came from: {key: (value, origin)}. `flags`
    are given by config key (a flag's value in its config form)."""
    result = {name: (value, DEFAULT_ORIGIN) for name, value in defaults().items()}
    for layer, origin in ((user, user_path), (config, PLAN_ORIGIN), (flags or {}, FLAG_ORIGIN)):
        for name, value in layer.items():
            if name in CONFIG_KEYS and value is not None:
                result[name] = (value, origin)
    return result


def flag_layer(flags: dict[str, Any]) -> dict[str, Any]:
    """Command-line flags given (by setting name) as the config keys they override."""
    return {
        name: config_value(name, flags[key.setting])
        for name, key in CONFIG_KEYS.items()
        if key.setting and flags.get(key.setting) is not None
    }


# --- the user's own defaults -------------------------------------------------------------------


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "ralph" / "config.toml"


def read_user_config(path: Path | None = None) -> dict[str, Any]:
    """The user's defaults, checked like the config record ({} when there is no file)."""
    import tomllib

    path = path or user_config_path()
    try:
        with path.open("rb") as handle:
            values = tomllib.load(handle)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:  # TOML is UTF-8
        raise InvalidInput(f"{path}: not UTF-8 (byte {exc.start}): TOML files are UTF-8") from None
    for name, value in values.items():
        if name in PLAN_ONLY:
            raise InvalidInput(f"{path}: config key {name} belongs in the plan's config record only")
        if name not in CONFIG_KEYS:  # in the user's own file, an unknown key is a typo: say so
            raise InvalidInput(f"{path}: unknown config key {name!r}")
        check_value(name, value, str(path))
    return values
