"""`ralph config`: read and change the plan's config record, one checked key at a time, and show
each setting in force with where it came from (default, the user's file, plan.jsonl)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ralph.errors import InvalidInput, Refused
from ralph.plan.declared import CONFIG_KEYS
from ralph.store.reader import plan_path, read_plan
from ralph.store.transaction import transaction
from ralph.usecases import config_values, settings
from ralph.usecases.sandbox_hide import hide_problem


def plan_config(root: Path) -> dict[str, Any]:
    """The config record's keys (without `t`); {} when there is no plan or no record."""
    if not plan_path(root).exists():
        return {}
    return {key: value for key, value in read_plan(root).config().items() if key != "t"}


def layers(root: Path) -> dict[str, Any]:
    """Every config key in force: {key: {"value": ..., "origin": ...}}. Keys the record holds
    that ralph does not know are listed too (origin plan.jsonl), as a hand editor wrote them."""
    config = plan_config(root)
    user_path = settings.user_config_path()
    user = settings.read_user_config(user_path)
    found = settings.layered(config, user, str(user_path))
    for key, value in config.items():
        found.setdefault(key, (value, settings.PLAN_ORIGIN))
    return {key: {"value": value, "origin": origin} for key, (value, origin) in found.items()}


def get(root: Path, key: str) -> dict[str, Any]:
    if key not in CONFIG_KEYS and key not in plan_config(root):
        config_values.key_of(key)  # raises, naming the key
    return {"key": key, **layers(root)[key]}


def set_value(root: Path, key: str, text: str, commit: bool | None = None) -> dict[str, Any]:
    """Check TEXT for KEY before taking the lock: a bad value changes nothing."""
    value = config_values.parse_value(key, text)
    config_values.refuse_plan_value(key, value)
    if key == "sandbox_hide" and isinstance(value, list):  # parse_value checked: a list of names
        problem = hide_problem(value, root)
        if problem:
            raise InvalidInput(problem)
    if key == "commit" and commit is None:
        commit = True  # `commit false` takes effect after its own change, which is committed
    with transaction(root, commit) as change:
        change.plan.set_config(key, value)
        change.message = f"ralph: config set {key}"
    return {"key": key, "value": value, "commit": change.commit}


def unset(root: Path, key: str, commit: bool | None = None) -> dict[str, Any]:
    if key not in plan_config(root):
        config_values.key_of(key)  # an unknown key is a typo (exit 2), a known one merely not set
        raise Refused(f"config key {key} is not set in plan.jsonl")
    with transaction(root, commit) as change:
        change.plan.unset_config(key)
        change.message = f"ralph: config unset {key}"
    return {"key": key, "unset": True, "commit": change.commit}
