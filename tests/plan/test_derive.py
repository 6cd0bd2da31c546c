"""What the state commands read is derived from the one declaration (ralph/plan/models.py): the
generated ralph/plan/declared.py is current, and what it derives means what the models say."""

from __future__ import annotations

import copy
from pathlib import Path

import ralph
from ralph.plan import declared, derive
from ralph.plan.models import Config, Task, json_schema
from ralph.plan.records import IssueView, TaskView
from ralph.usecases import config_values, settings

DECLARED_FILE = Path(ralph.__file__).parent / "plan" / "declared.py"


def test_declared_py_is_derived_from_the_models():
    assert DECLARED_FILE.read_text(encoding="utf-8") == derive.module_text(json_schema()), (
        "ralph/plan/declared.py is out of date with ralph/plan/models.py: run make schema"
    )


def test_the_fields_task_add_takes_are_the_ones_the_models_mark_as_given():
    marked = [
        name
        for name, field in Task.model_fields.items()
        if isinstance(field.json_schema_extra, dict) and field.json_schema_extra.get("x-from-user")
    ]
    assert list(declared.TASK_FIELDS_FROM_USER) == marked
    assert {"id", "name", "deps", "scope"} <= set(marked) and not {"s", "attempts", "verdict"} & set(marked)


def test_every_config_field_is_a_key_and_each_default_is_the_settings_default():
    assert list(declared.CONFIG_KEYS) == [name for name in Config.model_fields if name != "t"]
    for name, key in declared.CONFIG_KEYS.items():
        assert key.description, name
        loop_default = getattr(settings.DEFAULTS, key.setting) if key.setting else None
        if loop_default is not None:  # claim_ttl_s None: the plan's own, read by the plan
            assert config_values.config_value(name, loop_default) == key.default, name
    assert settings.DEFAULTS.timeout_s == 300 and settings.DEFAULTS.gate == ("make", "verify")
    assert settings.defaults()["claim_ttl_ms"] == 1_800_000 and {"commit"} == settings.PLAN_ONLY


def test_a_field_added_to_the_declaration_reaches_intake_keys_and_views():
    """Adding a field is one edit: derive a schema with a new given task field with a default, a
    new config key and an issue field, and the derived module has each."""
    schema = copy.deepcopy(json_schema())
    defs = schema["$defs"]
    defs["Task"]["properties"]["due"] = {"type": "string", "default": "someday", "x-from-user": True}
    defs["Config"]["properties"]["max_tokens"] = {
        "type": "integer",
        "description": "token budget",
        "x-kind": "count",
        "x-default": None,
        "x-setting": "",
    }
    namespace: dict = {}
    exec(compile(derive.module_text(schema), "declared", "exec"), namespace)  # noqa: S102
    assert namespace["TASK_FIELDS_FROM_USER"][-1] == "due"
    assert namespace["CONFIG_KEYS"]["max_tokens"] == ("max_tokens", "count", None, "token budget")
    view = namespace["TaskFields"]({"t": "task", "id": "t-a", "name": "A"})
    assert view.due == "someday" and view.deps == [] and view.attempts == 0 and view.priority is None
    assert namespace["TaskFields"]({"due": "friday"}).due == "friday"


def test_the_views_read_every_declared_field_with_its_default():
    task = TaskView({"t": "task", "id": "t-a", "name": "A", "depth": None, "verdict": "gate_failed"})
    assert (task.id, task.name, task.depth, task.attempts, task.deps, task.notes) == (
        "t-a",
        "A",
        0,
        0,
        [],
        None,
    )
    assert task.verdict == "gate_failed" and task.verdict.name == "GATE_FAILED"
    issue = IssueView({"t": "issue", "id": "i-a", "text": "why?"})
    assert (issue.text, issue.kills, issue.keep_open, issue.kind) == ("why?", 0, None, None)
    for name in Task.model_fields:
        if name != "t":
            assert hasattr(TaskView, name), name
