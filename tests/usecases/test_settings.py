"""The construct loop's settings resolved from their layers: flags over the config record over the
defaults, with each value checked (the `ralph config` command is in test_config.py)."""

from __future__ import annotations

import pytest

from ralph.errors import InvalidInput
from ralph.usecases.settings import Settings, read_user_config


def test_flags_override_the_config_record():
    config = {"t": "config", "timeout_ms": 1000, "max_iterations": 7, "agent_cmd": ["my-agent"], "gate": []}
    settings = Settings.resolve(
        "specs/x.md", config, {"timeout_s": 300.0, "max_iterations": None, "parallel": 2}
    )
    assert settings.timeout_s == 300 and settings.max_iterations == 7 and settings.parallel == 2
    assert settings.agent_cmd == ("my-agent",) and settings.gate == ()
    assert Settings.resolve("specs/x.md", {}, {}).gate == ("make", "verify")


@pytest.mark.parametrize(
    ("gate", "argv"),
    [("make check", ("make", "check")), ("pytest -k 'a b'", ("pytest", "-k", "a b")), ("", ())],
)
def test_the_config_gate_may_be_a_command_line_as_gate_takes_it(gate, argv):
    assert Settings.resolve("specs/x.md", {"t": "config", "gate": gate}, {}).gate == argv


def test_a_config_gate_with_unbalanced_quotes_is_refused_in_one_line():
    with pytest.raises(InvalidInput, match="cannot split the gate"):
        Settings.resolve("specs/x.md", {"t": "config", "gate": "make 'verify"}, {})


def test_the_users_file_turning_the_sandbox_off_beats_the_environments_default(tmp_path, monkeypatch):
    """$RALPH_SANDBOX (a machine's default, as a CI image may set it) is below every config layer:
    the user's own file turning the sandbox off wins, and the flag wins over both."""
    user_file = tmp_path / "config.toml"
    user_file.write_text('sandbox = "off"\n')
    monkeypatch.setenv("RALPH_SANDBOX", "required")
    assert Settings.resolve("specs/x.md", {}, {}).sandbox == "required"  # the default it sets
    user = read_user_config(user_file)
    assert Settings.resolve("specs/x.md", {}, {}, user).sandbox == "off"
    assert Settings.resolve("specs/x.md", {}, {"sandbox": "auto"}, user).sandbox == "auto"


def test_an_agent_named_on_the_command_line_ignores_the_configs_program():
    config = {
        "t": "config",
        "agent": "command",
        "agent_cmd": ["./evil.sh"],
        "model": "m",
        "agent_args": ["-x"],
    }
    settings = Settings.resolve("specs/x.md", config, {"agent": "claude", "gate": ()})
    assert settings.agent == "claude" and settings.agent_cmd is None
    assert settings.model is None and settings.agent_args is None and settings.gate == ()
    same = Settings.resolve("specs/x.md", {**config, "agent": "claude"}, {"agent": "claude"})
    assert same.agent_cmd is None and same.model == "m" and same.agent_args == ("-x",)
    chosen = Settings.resolve("specs/x.md", config, {"agent": "claude", "agent_cmd": ("/opt/claude",)})
    assert chosen.agent_cmd == ("/opt/claude",)
    assert Settings.resolve("specs/x.md", config, {}).agent_cmd == ("./evil.sh",)


def test_models_merge_stage_by_stage_whatever_names_the_agent():
    """For a stage, the first set of: --stage-model, the config's stage_models, --model, the
    config's model; an agent named by a flag while the config names none keeps the config's."""
    config = {"t": "config", "model": "config-model", "stage_models": {"VERIFY": "config-verify"}}
    flags = {"agent": "claude", "stage_models": {"BUILD": "flag-build"}, "model": None}
    settings = Settings.resolve("specs/x.md", config, flags)
    assert settings.agent == "claude"
    assert [settings.model_for(stage) for stage in ("BUILD", "VERIFY", "PLAN")] == [
        "flag-build",
        "config-verify",
        "config-model",
    ]
    general = Settings.resolve("specs/x.md", config, {**flags, "model": "flag-model"})
    assert [general.model_for(stage) for stage in ("BUILD", "VERIFY", "PLAN")] == [
        "flag-build",
        "config-verify",  # a stage's own model over the general one, though that is a flag
        "flag-model",
    ]
    both = Settings.resolve("specs/x.md", config, {"stage_models": {"VERIFY": "flag-verify"}})
    assert both.model_for("VERIFY") == "flag-verify" and both.model_for("CHECK") == "config-model"


def test_a_layer_that_names_another_agent_keeps_its_models_for_that_agent():
    user = {"agent": "codex", "model": "gpt-5", "stage_models": {"BUILD": "gpt-5-mini"}}
    config = {"t": "config", "agent": "claude", "stage_models": {"VERIFY": "claude-opus-4-5"}}
    settings = Settings.resolve("specs/x.md", config, {}, user)
    assert settings.agent == "claude" and settings.model is None
    assert settings.stage_models == {"VERIFY": ("claude-opus-4-5",)}
    unnamed = Settings.resolve("specs/x.md", config, {}, {"model": "claude-sonnet-4-5"})
    assert (
        unnamed.model_for("BUILD") == "claude-sonnet-4-5" and unnamed.model_for("VERIFY") == "claude-opus-4-5"
    )


def test_an_escalation_gives_a_task_s_later_builds_the_next_model_then_the_last():
    config = {"t": "config", "stage_models": {"BUILD": ["cheap", "middle", "strong"], "VERIFY": "judge"}}
    settings = Settings.resolve("specs/x.md", config, {"model": "general"})
    assert [settings.model_for("BUILD", failures) for failures in range(5)] == [
        "cheap",
        "middle",
        "strong",
        "strong",
        "strong",
    ]
    assert settings.model_for("VERIFY", 3) == "judge" and settings.model_for("PLAN", 3) == "general"
    flag = Settings.resolve("specs/x.md", config, {"stage_models": {"BUILD": ("a", "b")}})
    assert flag.stage_models == {"BUILD": ("a", "b"), "VERIFY": ("judge",)}


@pytest.mark.parametrize(
    ("models", "said"),
    [
        ({"BUILD": []}, "BUILD: [] is not a model name or a non-empty list of model names"),
        ({"BUILD": ["a", ""]}, "BUILD: ['a', ''] is not a model name or a non-empty list of model names"),
        ({"BUILD": 3}, "BUILD: 3 is not a model name or a non-empty list of model names"),
        ({"BUID": "a"}, "'BUID' is not a stage that runs an agent"),
    ],
)
def test_a_bad_stage_model_is_one_line_naming_the_key_and_the_stage(models, said):
    with pytest.raises(InvalidInput) as refused:
        Settings.resolve("specs/x.md", {}, {}, {"stage_models": models})
    assert str(refused.value).startswith("config key stage_models in the user's config file: " + said)


@pytest.mark.parametrize("minutes", [float("nan"), float("inf"), -1.0])
def test_a_time_budget_must_be_a_finite_number_of_minutes(minutes):
    with pytest.raises(InvalidInput, match="--max-minutes must be a number of minutes > 0"):
        Settings.resolve("specs/x.md", {}, {"max_minutes": minutes})


def test_review_is_true_false_or_a_list_of_aspects_and_review_on_keeps_the_config_s_list():
    from ralph.usecases.config_values import parse_value

    assert parse_value("review", "false") is False and parse_value("review", "on") is True
    assert parse_value("review", "goal, docs") == ["goal", "docs"]
    assert parse_value("review", '["tests"]') == ["tests"]
    with pytest.raises(InvalidInput, match="config key review: .* is not true, false, or a list of review"):
        parse_value("review", "../etc")
    assert Settings.resolve("specs/x.md", {}, {}).review is True
    listed = {"t": "config", "review": ["goal"]}
    assert Settings.resolve("specs/x.md", listed, {}).review == ("goal",)
    assert Settings.resolve("specs/x.md", listed, {"review": True}).review == ("goal",)
    assert Settings.resolve("specs/x.md", listed, {"review": False}).review is False
