"""The state commands end to end on a real repository: commits, status, exit codes."""

import json
from pathlib import Path

import pytest

from tests.support.cli import ralph_process
from tests.support.gitrepo import git


def test_add_done_accept_commits_each_change_alone(ralph, repo):
    (repo / "user-work.txt").write_text("not ralph's\n")
    git(repo, "add", "user-work.txt")
    (repo / "README").write_text("edited but unstaged\n")

    added = json.loads(
        ralph("task", "add", '{"name": "Add login form", "accept": "form renders"}', "--json").stdout
    )
    ralph("task", "done")
    ralph("task", "accept")

    log = git(repo, "log", "--format=%s", "-3").splitlines()
    assert log == [
        f"ralph: task accept {added['id']} Add login form",
        f"ralph: task done {added['id']} Add login form",
        f"ralph: task add {added['id']} Add login form",
    ]
    for commit in ("HEAD", "HEAD~1", "HEAD~2"):
        assert git(repo, "show", "--name-only", "--format=", commit).split() == ["plan.jsonl"]
    status = git(repo, "status", "--porcelain").splitlines()
    assert "A  user-work.txt" in status
    assert " M README" in status
    assert not any("plan.jsonl" in line for line in status)


def test_refused_and_invalid_exit_codes(ralph):
    assert "no task t-zzzzzz" in ralph("task", "done", "t-zzzzzz", code=1).stderr
    assert "invalid JSON" in ralph("task", "add", "{nope", code=2).stderr
    assert "nothing to accept" in ralph("task", "accept", code=1).stderr


def test_a_bug_is_one_line_with_exit_70_and_the_traceback_in_a_file(repo, monkeypatch):
    from ralph.usecases import reads
    from tests.support.cli import Ralph

    def broken(*args, **kwargs):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(reads, "status", broken)
    result = Ralph(repo)("status", code=70)
    assert result.stderr.startswith("ralph: internal error: ZeroDivisionError: simulated bug (traceback: ")
    assert len(result.stderr.splitlines()) == 1
    log = result.stderr.rsplit("traceback: ", 1)[1].rstrip(")\n")
    assert "ZeroDivisionError" in Path(log).read_text()
    again = Ralph(repo)("status", code=70).stderr.rsplit("traceback: ", 1)[1].rstrip(")\n")
    assert again != log and Path(log).exists()  # within the same second too: one file per crash


def test_error_columns_count_from_the_start_of_an_indented_line(ralph, repo):
    (repo / "plan.jsonl").write_text('   {"t": "task", "id": "t-zz0001", "name": x}\n')
    result = ralph("check", code=2)
    assert result.stderr == "plan.jsonl:1: invalid JSON: Expecting value (column 44)\n"


def test_task_add_takes_a_negative_number_as_bad_json_not_as_an_option(ralph):
    result = ralph("task", "add", "-5", code=2)
    assert result.stderr == 'ralph: task must be a JSON object with at least a "name", not int\n'


# --- user text cannot drive the terminal ---------------------------------------------------------

# What users, agents and files put in plan.jsonl reaches the screen through these commands; control
# characters in it must arrive escaped, each message staying one line.
HOSTILE_NAME = "a\u001b]0;x\u0007b\rc"  # an OSC sequence that retitles the terminal, then a carriage return
HOSTILE_SHOWN = "a\\x1b]0;x\\x07b\\rc"
RAW_CONTROLS = ("\x1b", "\x07", "\r", "\x9b")


def assert_safe(text: str) -> None:
    assert not any(control in text for control in RAW_CONTROLS), repr(text)
    assert "\n" not in text.rstrip("\n") and text.endswith("\n"), repr(text)  # exactly one line


def one_line(text: str) -> str:
    assert_safe(text)
    return text.rstrip("\n")


@pytest.mark.parametrize(
    ("field", "shown"),
    [("\n", "\\n"), ("\u001b]0;pwned\u0007", "\\x1b]0;pwned\\x07"), ("\u009b2J", "\\x9b2J")],
    ids=["newline", "osc-title", "c1-csi"],
)
def test_a_field_name_with_control_characters_is_one_escaped_error_line(ralph, field, shown):
    result = ralph("task", "add", "--", json.dumps({field: None}), code=2)
    assert result.stdout == ""
    line = one_line(result.stderr)
    assert line.startswith(f"ralph: task: unknown field {shown} (allowed: ")


def test_an_escape_sequence_in_a_field_name_reaches_a_real_stderr_escaped(repo):
    done = ralph_process(repo, "task", "add", "--", '{"\\u001b]0;pwned\\u0007": 1, "\\u000A": null}')
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    line = one_line(done.stderr)
    assert line.startswith("ralph: task: unknown fields ")
    assert "\\x1b]0;pwned\\x07" in line and "\\n" in line


def test_names_and_texts_are_shown_escaped_and_json_stays_exact(ralph):
    added = ralph("task", "add", json.dumps({"name": HOSTILE_NAME}))
    assert one_line(added.stdout).endswith(f": {HOSTILE_SHOWN}")
    (task_id,) = [record["id"] for record in map(json.loads, ralph("query", "tasks").stdout.splitlines())]

    assert one_line(ralph("task", "list").stdout) == f"{task_id}  pending  {HOSTILE_SHOWN}"
    status = ralph("status").stdout.splitlines(keepends=True)
    assert len(status) == 5 and status[0] == "run: not running (no run yet)\n"
    for line in status:
        assert_safe(line)
    assert status[-1] == f"next: {task_id} {HOSTILE_SHOWN}\n"
    assert one_line(ralph("task", "done").stdout) == f"done {task_id}: {HOSTILE_SHOWN}"
    assert (
        one_line(ralph("task", "reject", "no").stdout)
        == f"rejected {task_id}: {HOSTILE_SHOWN} (pending again)"
    )
    ralph("task", "done")
    assert one_line(ralph("task", "accept").stdout) == f"accepted {task_id}: {HOSTILE_SHOWN}"

    other = json.loads(ralph("task", "add", "--json", "--name", "x\u009b2Jy").stdout)
    assert other["name"] == "x\u009b2Jy"  # JSON output: the exact value, escaped as JSON
    shown = ralph("task", "show", other["id"]).stdout
    assert_safe(shown)
    assert json.loads(shown)["name"] == "x\u009b2Jy"
    assert one_line(ralph("task", "delete", other["id"]).stdout) == f"deleted {other['id']}: x\\x9b2Jy"

    issue = ralph("issue", "add", "why\n\u001b[2J?").stdout
    assert one_line(issue).endswith(": why\\n\\x1b[2J?")
    issue_id = issue.split()[1].rstrip(":")
    assert one_line(ralph("issue", "list").stdout) == f"{issue_id}  why\\n\\x1b[2J?"
    assert json.loads(ralph("query", "issues").stdout)["text"] == "why\n\u001b[2J?"
    assert one_line(ralph("issue", "resolve", issue_id).stdout) == f"resolved {issue_id}: why\\n\\x1b[2J?"


def test_construct_that_cannot_start_the_agent_says_so_in_one_stderr_line(repo):
    (repo / "specs" / "x.md").write_text("# X\n\n- anything\n")
    git(repo, "add", "specs/x.md")
    git(repo, "commit", "-qm", "a spec")
    done = ralph_process(
        repo,
        "construct",
        "specs/x.md",
        "--agent",
        "command",
        "--agent-cmd",
        "/nonexistent/agent",
        timeout=120,
    )
    assert done.returncode == 6, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "ralph: AGENT_UNAVAILABLE: the agent program '/nonexistent/agent' is not installed or not executable:"
        " check --agent-cmd"
    ]


@pytest.mark.parametrize(
    ("agent", "package"),
    [
        ("claude", "@anthropic-ai/claude-code"),
        ("codex", "@openai/codex"),
        ("opencode", "opencode-ai"),
        ("gemini", "@google/gemini-cli"),
    ],
)
def test_an_agent_cli_that_is_not_installed_says_how_to_install_it(
    repo, tmp_path, monkeypatch, agent, package
):
    import shutil

    from tests.support.cli import Ralph

    only_git = tmp_path / "bin"
    only_git.mkdir()
    (only_git / "git").symlink_to(shutil.which("git"))
    monkeypatch.setenv("PATH", str(only_git))
    (repo / "specs" / "x.md").write_text("# X\n")
    result = Ralph(repo)("construct", "specs/x.md", "--agent", agent, code=6)
    assert result.stderr == (
        f"ralph: AGENT_UNAVAILABLE: the agent program {agent!r} is not installed or not executable:"
        f" install it with `npm install -g {package}`\n"
    )
