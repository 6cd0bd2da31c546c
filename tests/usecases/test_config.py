"""`ralph config`: the config record changed one checked key at a time, with a commit each; the
layers (defaults, the user's file, plan.jsonl, flags) and where each value came from."""

from __future__ import annotations

import json
import os

import pytest

from ralph.errors import InvalidInput
from ralph.usecases.settings import Settings, read_user_config, user_config_path
from tests.support.gitrepo import git


def commits(root) -> int:
    return int(git(root, "rev-list", "--count", "HEAD"))


def config_record(root) -> dict:
    lines = [json.loads(line) for line in (root / "plan.jsonl").read_text().splitlines() if line.strip()]
    return next((record for record in lines if record.get("t") == "config"), {})


def test_set_get_unset_each_change_one_commit_of_the_config_record(ralph, repo):
    before = commits(repo)
    ralph("config", "set", "timeout_ms", "5m")
    ralph("config", "set", "gate", "make check")
    ralph("config", "set", "agent_cmd", '["python", "agent.py"]')
    ralph("config", "set", "parallel", "2")
    assert config_record(repo) == {
        "t": "config", "timeout_ms": "5m", "gate": "make check",
        "agent_cmd": ["python", "agent.py"], "parallel": 2,
    }  # fmt: skip
    assert commits(repo) == before + 4
    assert git(repo, "log", "-1", "--format=%s") == "ralph: config set parallel\n"
    assert git(repo, "status", "--porcelain") == ""
    assert ralph("config", "get", "gate").stdout == "make check\n"
    assert ralph("config", "get", "agent_cmd").stdout == '["python", "agent.py"]\n'
    got = json.loads(ralph("config", "get", "timeout_ms", "--json").stdout)
    assert (got["key"], got["value"], got["origin"]) == ("timeout_ms", "5m", "plan.jsonl")
    ralph("config", "unset", "gate")
    assert "gate" not in config_record(repo)
    assert ralph("config", "get", "gate").stdout == "make verify\n"  # the default again
    assert commits(repo) == before + 5


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("set", "parallel", "0"), "parallel"),
        (("set", "parallel", "two"), "parallel"),
        (("set", "timeout_ms", "5 minutes"), "timeout_ms"),
        (("set", "context_kill", "1.5"), "context_kill"),
        (("set", "gate", "make 'verify"), "gate"),
        (("set", "gate", '["make", 3]'), "gate"),
        (("set", "run_hooks", "maybe"), "run_hooks"),
        (("set", "prices", '{"m": {"input": 1}}'), "prices"),
        (("set", "hooks", '{"on_done": "notify-send done"}'), "hooks"),
        (("set", "hooks", '{"run_ended": "notify-send \'done"}'), "hooks"),
        (("set", "hook_timeout_ms", "0s"), "hook_timeout_ms"),
        (("set", "claim_ttl_ms", "1"), "claim_ttl_ms"),
        (("set", "timeout_ms", "8000h"), "timeout_ms"),
        (("set", "stage_models", '{"BUILD": []}'), "stage_models"),
        (("set", "stage_models", '{"BUILD": ["claude-haiku-4-5", 4]}'), "stage_models"),
        (("set", "stage_models", '{"BUILD": ""}'), "stage_models"),
        (("set", "paralel", "2"), "paralel"),
        (("get", "paralel"), "paralel"),
        (("unset", "paralel"), "paralel"),
    ],
)
def test_an_unknown_key_or_a_bad_value_is_one_line_naming_it_and_changes_nothing(ralph, repo, args, named):
    ralph("config", "set", "parallel", "3")
    before, head = (repo / "plan.jsonl").read_bytes(), commits(repo)
    result = ralph("config", *args, code=2)
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and named in result.stderr
    assert (repo / "plan.jsonl").read_bytes() == before and commits(repo) == head


def test_a_stage_model_may_be_an_escalation_list(ralph, repo):
    ralph("config", "set", "stage_models", '{"BUILD": ["claude-haiku-4-5", "claude-sonnet-4-5"]}')
    assert config_record(repo)["stage_models"] == {"BUILD": ["claude-haiku-4-5", "claude-sonnet-4-5"]}
    refused = ralph("config", "set", "stage_models", '{"VERIFY": "m", "BUILD": []}', code=2)
    assert refused.stderr == (
        "ralph: config key stage_models: BUILD: [] is not a model name or a non-empty list of model names\n"
    )


def test_the_plan_reads_a_claim_ttl_in_either_form(ralph, repo):
    from ralph.store.reader import read_plan

    assert read_plan(repo).claim_ttl_s() == 1800  # the default
    assert json.loads(ralph("config", "get", "claim_ttl_ms", "--json").stdout)["value"] == 1800000
    ralph("config", "set", "claim_ttl_ms", "5m")
    assert read_plan(repo).claim_ttl_s() == 300
    ralph("config", "set", "claim_ttl_ms", "90000")
    assert read_plan(repo).claim_ttl_s() == 90


def test_turning_commits_off_is_itself_committed_and_then_commands_stop_committing(ralph, repo):
    before = commits(repo)
    ralph("config", "set", "commit", "false")
    assert commits(repo) == before + 1 and git(repo, "status", "--porcelain") == ""
    ralph("config", "set", "parallel", "2")
    assert commits(repo) == before + 1 and "plan.jsonl" in git(repo, "status", "--porcelain")


def test_unsetting_a_key_that_is_not_set_is_refused(ralph):
    assert "not set" in ralph("config", "unset", "model", code=1).stderr


def test_a_value_has_one_form_in_the_config_and_on_the_command_line():
    config = {"t": "config", "gate": "make check", "agent_cmd": "python 'my agent.py'", "agent_args": ["-v"]}
    settings = Settings.resolve("specs/x.md", {**config, "timeout_ms": "5m", "gate_timeout_ms": "90s"}, {})
    assert settings.gate == ("make", "check")
    assert settings.agent_cmd == ("python", "my agent.py")
    assert settings.agent_args == ("-v",)
    assert (settings.timeout_s, settings.gate_timeout_s) == (300, 90)
    # A config written before units were accepted means what it meant: milliseconds.
    assert Settings.resolve("specs/x.md", {"claim_ttl_ms": "30m"}, {}).claim_ttl_s == 1800
    old = Settings.resolve("specs/x.md", {"timeout_ms": 300000, "max_wait_ms": "1500ms"}, {})
    assert (old.timeout_s, old.max_wait_s) == (300, 1.5)


def write_user_config(text: str):
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_users_file_is_below_the_plans_config_which_is_below_the_flags(ralph, repo):
    path = write_user_config('model = "opus"\ntimeout_ms = "2m"\nmax_attempts = 5\ngate = ["make", "t"]\n')
    assert str(path).startswith(os.environ["XDG_CONFIG_HOME"])
    ralph("config", "set", "timeout_ms", "3m")
    user = read_user_config()
    settings = Settings.resolve("specs/x.md", {"timeout_ms": "3m"}, {"max_attempts": 7}, user)
    assert (settings.model, settings.timeout_s, settings.max_attempts) == ("opus", 180, 7)
    assert settings.gate == ("make", "t")
    listed = ralph("config", "list", "--origin").stdout.splitlines()
    assert f'model = "opus"  ({path})' in listed
    assert 'timeout_ms = "3m"  (plan.jsonl)' in listed
    assert "max_iterations = 10  (default)" in listed
    assert "max_iterations = 10" in ralph("config", "list").stdout.splitlines()
    found = json.loads(ralph("config", "list", "--json").stdout)["config"]
    assert found["gate"] == {"value": ["make", "t"], "origin": str(path)}


def test_the_dry_run_says_which_values_came_from_flags(ralph, repo):
    write_user_config('model = "opus"\n')
    ralph("config", "set", "max_attempts", "4")
    (repo / "specs" / "x.md").write_text("# x\n## Requirements\n- [ ] x — verify: `x`\n")  # one to plan
    # Exit 1: the real run would refuse (no `make verify` here, specs/x.md uncommitted), as it lists.
    out = ralph("construct", "specs/x.md", "--dry-run", "--json", "--agent", "command", "--agent-cmd", "true",
                "--timeout", "90s", code=1).stdout  # fmt: skip
    origins = json.loads(out)["origins"]
    assert origins == {
        "agent": "flag", "agent_cmd": "flag", "timeout_ms": "flag", "max_attempts": "plan.jsonl",
        "model": str(user_config_path()),
    }  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        "parallel = 0\n",
        "gate = 3\n",
        "paralel = 2\n",
        "commit = false\n",
        'model = "x\n',
        "timeout_ms = inf\n",  # TOML's infinity: the agent would never be stopped
        "claim_ttl_ms = 1\n",  # every claim would be taken over at once
        'claim_ttl_ms = "59s"\n',
        'gate_timeout_ms = "169h"\n',
        'hook_timeout_ms = "500ms"\n',
    ],
)
def test_a_bad_users_file_is_refused_in_one_line_naming_the_file(ralph, text):
    path = write_user_config(text)
    with pytest.raises(InvalidInput, match=str(path)):
        read_user_config()
    result = ralph("config", "list", code=2)
    assert str(path) in result.stderr and len(result.stderr.splitlines()) == 1


def test_hooks_take_each_event_the_format_names_and_a_command_in_either_form(ralph, repo):
    from ralph.plan.models import Hooks
    from ralph.plan.records import HookEvent

    assert set(Hooks.model_fields) == set(HookEvent)
    hooks = {"run_ended": "notify-send ralph 'run ended'", "any": ["curl", "-d", "@-", "https://ntfy.sh/x"]}
    ralph("config", "set", "hooks", json.dumps(hooks))
    ralph("config", "set", "hook_timeout_ms", "30s")
    assert config_record(repo) == {"t": "config", "hooks": hooks, "hook_timeout_ms": "30s"}
    ralph("check")
    settings = Settings.resolve("specs/x.md", config_record(repo), {})
    assert (settings.hooks, settings.hook_timeout_s) == (hooks, 30)


def test_durations_at_their_bounds_are_taken():
    """From 1s to a week each; a claim TTL from a minute (docs/plan-format.md)."""
    settings = Settings.resolve(
        "specs/x.md", {"claim_ttl_ms": "1m", "timeout_ms": "1s", "gate_timeout_ms": "168h"}, {}
    )
    assert (settings.claim_ttl_s, settings.timeout_s, settings.gate_timeout_s) == (60, 1, 168 * 3600)
    with pytest.raises(
        InvalidInput, match="claim_ttl_ms in plan.jsonl: '59s' is out of range: from 60s to 168h"
    ):
        Settings.resolve("specs/x.md", {"claim_ttl_ms": "59s"}, {})
