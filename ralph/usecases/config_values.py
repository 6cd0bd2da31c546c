"""A config key's values: read from the text `ralph config set` is given (parse_value), checked
wherever they come from (check_value: the user's file, the plan's config record, a flag), and
converted between the key's spelling and the setting's (durations in milliseconds or with a unit,
seconds in a setting; a command as a line or its argv). The plan's config may make the fence
stricter, never take it down (refuse_plan_value)."""

from __future__ import annotations

import re
from typing import Any

from ralph.durations import parse_duration
from ralph.errors import InvalidInput
from ralph.plan.declared import CONFIG_KEYS, ConfigKey
from ralph.plan.records import HookEvent
from ralph.plan.stage_declarations import STAGES

# The stages that run an agent: each may have a model of its own (config stage_models, --stage-model).
MODEL_STAGES = tuple(declared.name for declared in STAGES if declared.model)


def split_command(text: str, what: str) -> tuple[str, ...]:
    """A command line split like a shell would split it (never run by one)."""
    import shlex

    try:
        return tuple(shlex.split(text))
    except ValueError as exc:  # unbalanced quotes
        raise InvalidInput(f"cannot split the {what} {text!r}: {exc}") from None


SANDBOX_MODES = ("off", "auto", "required")

_ASPECT = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")  # as models.AspectName: a file's name too
_DURATION = re.compile(r"(\d*[1-9]\d*(\.\d+)?|\d+\.\d*[1-9]\d*)(ms|s|m|h)?")
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def key_of(name: str) -> ConfigKey:
    if name not in CONFIG_KEYS:
        known = ", ".join(CONFIG_KEYS)
        raise InvalidInput(f"unknown config key {name!r} (known: {known})")
    return CONFIG_KEYS[name]


def parse_value(name: str, text: str) -> object:
    """The value `ralph config set NAME TEXT` stores: TEXT read as that key takes it, checked."""
    import json

    kind = key_of(name).kind
    text = text.strip() if kind not in ("text", "command") else text
    value: object = text
    try:
        if kind == "duration":
            value = int(text) if text.isdigit() else text
        elif kind == "count":
            value = int(text)
        elif kind in ("number", "fraction"):
            value = float(text) if any(c in text for c in ".eE") else int(text)
        elif kind == "flag":
            if text.lower() not in _TRUE + _FALSE:
                raise ValueError
            value = text.lower() in _TRUE
        elif kind == "patterns":
            value = json.loads(text) if text.startswith("[") else [text]
        elif kind == "aspects":
            value = _aspects(text)
        elif kind in ("prices", "hooks", "models") or (kind == "command" and text.lstrip().startswith("[")):
            value = json.loads(text)
    except ValueError:
        raise InvalidInput(f"config key {name}: {text!r} is not {_KIND_WORDS[kind]}") from None
    check_value(name, value)
    return value


def _aspects(text: str) -> object:
    """`ralph config set review TEXT`: true or false, a JSON list, or names split by commas."""
    import json

    if text.lower() in _TRUE + _FALSE:
        return text.lower() in _TRUE
    if text.startswith("["):
        return json.loads(text)
    return [name.strip() for name in text.split(",") if name.strip()]


_KIND_WORDS = {
    "duration": "a duration: milliseconds or a number with a unit (300000, 90s, 5m, 1500ms)",
    "count": "an integer > 0",
    "number": "a number > 0",
    "fraction": "a number in (0, 1]",
    "command": 'a command line ("make verify") or a list of strings',
    "text": "a string",
    "flag": "true or false",
    "sandbox": "off, auto or required",
    "patterns": 'a list of file names or paths (globs: ".env.local", "*.secret", "~/.config/x/token")',
    "aspects": 'true, false, or a list of review aspect names (["goal", "docs"], or "goal,docs")',
    "prices": 'an object: model -> {"input": USD, "output": USD} per million tokens',
    "hooks": "an object: event ({}) -> command".format(", ".join(HookEvent)),
    "models": "an object: stage ({}) -> a model name, or a non-empty list of them (cheap first)".format(
        ", ".join(MODEL_STAGES)
    ),
}


def check_value(name: str, value: Any, where: str = "") -> None:
    """Refuse a value of the wrong form for its key, with one line naming the key."""
    kind = key_of(name).kind
    if not _valid(kind, value):
        at = f" in {where}" if where else ""
        bad = _bad_stage_model(value) if kind == "models" else None
        if bad is not None:  # the stage whose value is wrong, not the whole object
            raise InvalidInput(f"config key {name}{at}: {bad}")
        raise InvalidInput(f"config key {name}{at}: {value!r} is not {_KIND_WORDS[kind]}")
    if kind == "duration":
        seconds = setting_value(name, value)
        assert isinstance(seconds, int | float)  # a valid duration's, checked just above
        _check_bounds(name, seconds, value, where)
    if kind == "command" and isinstance(value, str):
        split_command(value, name)
    if kind == "hooks":
        for event, command in value.items():
            if isinstance(command, str):
                split_command(command, f"{name} {event}")


# Sane bounds on the durations a config sets, in seconds: none is infinite (TOML has `inf`) or
# longer than a week, and none is so short that it can only fail. A claim may be taken over once it
# is older than its TTL, while its build still runs: at least a minute. A wait before running a
# failed agent again bounds nothing, so any wait will do (a millisecond for a test).
_WEEK_S = 7 * 24 * 3600.0
_DURATION_BOUNDS = {"claim_ttl_ms": (60.0, _WEEK_S), "agent_retry_ms": (0.001, _WEEK_S)}
_DEFAULT_BOUNDS = (1.0, _WEEK_S)


def _check_bounds(name: str, seconds: float, value: object, where: str) -> None:
    low, high = _DURATION_BOUNDS.get(name, _DEFAULT_BOUNDS)
    if not low <= seconds <= high:
        at = f" in {where}" if where else ""
        raise InvalidInput(
            f"config key {name}{at}: {value!r} is out of range: from {low:g}s to {high / 3600:g}h"
        )


def _valid(kind: str, value: Any) -> bool:  # a JSON value: the checks here say which
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "duration":
        return (number and value > 0) or (isinstance(value, str) and bool(_DURATION.fullmatch(value)))
    if kind == "count":
        return isinstance(value, int) and not isinstance(value, bool) and value > 0
    if kind == "number":
        return number and 0 < value < float("inf")
    if kind == "fraction":
        return number and 0 < value <= 1
    if kind == "command":
        return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    if kind == "text":
        return isinstance(value, str)
    if kind == "flag":
        return isinstance(value, bool)
    if kind == "sandbox":
        return value in SANDBOX_MODES
    if kind == "patterns":
        return isinstance(value, list) and all(isinstance(v, str) and v for v in value)
    if kind == "aspects":
        return isinstance(value, bool) or (
            isinstance(value, list) and all(isinstance(v, str) and _ASPECT.fullmatch(v) for v in value)
        )
    if kind == "models":
        return isinstance(value, dict) and all(k in MODEL_STAGES and _models(v) for k, v in value.items())
    if kind == "hooks":
        events = set(HookEvent)
        return isinstance(value, dict) and all(k in events and _valid("command", v) for k, v in value.items())
    return isinstance(value, dict) and all(_price(v) for v in value.values())  # prices


def _bad_stage_model(value: object) -> str | None:
    """What is wrong with one stage of a stage_models object, or None (not an object at all)."""
    if not isinstance(value, dict):
        return None
    for stage, chosen in value.items():
        if stage not in MODEL_STAGES:
            return f"{stage!r} is not a stage that runs an agent ({', '.join(MODEL_STAGES)})"
        if not _models(chosen):
            return f"{stage}: {chosen!r} is not a model name or a non-empty list of model names"
    return None


def _models(value: object) -> bool:
    """A stage's model: a name, or a non-empty list of names (an escalation)."""
    if isinstance(value, list):
        return bool(value) and all(isinstance(name, str) and name for name in value)
    return isinstance(value, str) and bool(value)


def _price(value: object) -> bool:
    allowed = {"input", "output", "cache_read", "cache_creation"}
    return (
        isinstance(value, dict)
        and {"input", "output"} <= set(value) <= allowed
        and all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in value.values())
    )


def refuse_plan_value(name: str, value: object) -> None:
    """plan.jsonl is written by the repository and by its agents (`ralph config set`): it may make
    the fence stricter, never take it down."""
    if name == "sandbox" and value == "off":
        raise InvalidInput(
            "config key sandbox in plan.jsonl: off is not taken from the plan, which the repository"
            " and its agents write; turn the sandbox off in your own config file or with --sandbox=off"
        )


def setting_value(name: str, value: Any) -> object:
    """A config value as its setting holds it: durations in seconds, the rest as they are."""
    if CONFIG_KEYS[name].kind == "duration":
        return parse_duration(str(value)) if isinstance(value, str) else value / 1000
    return value


def config_value(name: str, setting: Any) -> object:
    """A setting's value as the config key spells it (a default shown by `ralph config list`)."""
    if setting is None:
        return None
    kind = CONFIG_KEYS[name].kind
    if kind == "duration":
        return round(setting * 1000)
    if kind == "command":
        import shlex

        return shlex.join(setting) if isinstance(setting, tuple | list) else setting
    if kind == "patterns" or (kind == "aspects" and isinstance(setting, tuple)):
        return list(setting)
    return setting
