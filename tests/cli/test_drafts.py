"""`ralph spec draft NAME "idea"`: a scripted agent drafts a spec, asks through ralph, revises it
with feedback; the person accepts (specs/NAME.md committed alone, with the questions and answers)
or rejects (nothing left). Without a terminal it ends WAITING (exit 9) until `ralph answer` or a
decision flag; on a terminal it asks at once and shows the draft."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from ralph.loop.process.sandbox import unavailable_reason
from tests.support.cli import Ralph
from tests.support.construct import wait_for
from tests.support.gitrepo import git, said
from tests.support.terminal import terminal

AGENT_SCRIPT = Path(__file__).parents[1] / "support" / "scripts" / "draft_agent.py"
AGENT = ["--agent", "command", "--agent-cmd", shlex.join([sys.executable, str(AGENT_SCRIPT)])]
IDEA = "a farewell function beside the greeter"
DRAFT = Path("build/ralph-logs/drafts/farewell/draft.md")


def only_question(ralph: Ralph) -> dict:
    (line,) = ralph("questions", "--json").stdout.splitlines()
    return json.loads(line)


def test_without_a_terminal_it_waits_for_the_answer_then_for_a_decision_then_commits_only_the_spec(ralph):
    (ralph.root / "mine.txt").write_text("a person's file, not committed\n")
    asked = ralph("spec", "draft", "farewell", IDEA, *AGENT, code=9)
    assert "ralph: WAITING: the draft of specs/farewell.md waits for 1 answer(s):" in asked.stdout
    assert "      - Goodbye\n      - See you\n" in asked.stdout
    question = only_question(ralph)
    assert question["draft"] == "farewell" and question["choices"] == ["Goodbye", "See you"]
    assert "task" not in question  # it blocks no task
    ralph("check")  # a valid plan record
    assert "    choices: Goodbye | See you\n" in ralph("questions").stdout
    assert said(ralph.root) == "ralph: spec draft farewell: 1 question(s) for a person"
    assert not (ralph.root / "specs" / "farewell.md").exists()

    again = ralph("spec", "draft", "farewell", code=9)  # nothing answered: nothing run
    assert "waits for 1 answer(s)" in again.stdout
    ralph("answer", question["id"], "See you")
    decide = ralph("spec", "draft", "farewell", code=9)  # the same agent, remembered
    assert "waits for your decision: read build/ralph-logs/drafts/farewell/draft.md" in decide.stdout
    assert "See you, Ada!" in (ralph.root / DRAFT).read_text()
    assert not (ralph.root / "specs" / "farewell.md").exists()  # nothing before acceptance

    ralph("spec", "draft", "farewell", "--revise", "shout it", code=9)
    assert "SEE YOU, Ada!" in (ralph.root / DRAFT).read_text()
    draft = (ralph.root / DRAFT).read_text()

    done = ralph("spec", "draft", "farewell", "--accept")
    assert done.stdout.splitlines() == [
        "accepted: wrote and committed specs/farewell.md",
        "specs/farewell.md: ok (2 requirements, each with a way to verify it)",  # ralph spec check's
        "next: ralph construct specs/farewell.md --dry-run    # what the first run would do",
    ]
    assert done.stderr == ""
    assert (ralph.root / "specs" / "farewell.md").read_text() == draft
    assert git(ralph.root, "show", "--name-only", "--format=", "HEAD").split() == [
        "plan.jsonl",
        "specs/farewell.md",
    ]
    assert said(ralph.root) == (
        "ralph: spec specs/farewell.md: drafted by command, accepted\n\n"
        f"Idea: {IDEA}\n\n"
        "Questions asked while drafting, with the answers:\n"
        f"- Q ({question['id']}): Which words should the farewell say?\n"
        "  A: See you"
    )
    assert ralph("questions").stdout == ""  # the draft's questions left the plan with it
    assert git(ralph.root, "status", "--porcelain") == "?? mine.txt\n"  # never swept in
    assert not (ralph.root / DRAFT).exists()
    refused = ralph("spec", "draft", "farewell", "again", code=1)
    assert (
        refused.stderr
        == "ralph: specs/farewell.md exists: edit it, or draft another name (nothing was drafted)\n"
    )


def test_accepting_a_spec_construct_would_refuse_shows_each_problem_and_offers_no_run(ralph, monkeypatch):
    monkeypatch.setenv("DRAFT_AGENT", "unchecked")
    ralph("spec", "draft", "farewell", IDEA, *AGENT, code=9)  # waits for the decision
    done = ralph("spec", "draft", "farewell", "--accept")  # accepted all the same: the person decided
    assert (ralph.root / "specs" / "farewell.md").is_file()
    assert done.stderr == (
        "ralph: specs/farewell.md:5: this requirement has no way to verify it: add 'verify: <a command"
        " and what it prints, a test, a thing to look at>' on its line or on a line under it\n"
    )
    assert done.stdout.splitlines() == [
        "accepted: wrote and committed specs/farewell.md",
        "next: fix what is above in specs/farewell.md, then: ralph spec check specs/farewell.md"
        "    # construct refuses it until then",
    ]


def test_reject_leaves_nothing(ralph):
    head = git(ralph.root, "rev-parse", "HEAD").strip()
    ralph("spec", "draft", "farewell", IDEA, *AGENT, code=9)
    ralph("spec", "draft", "farewell", "--reject")
    assert ralph("questions").stdout == ""
    assert not (ralph.root / "specs" / "farewell.md").exists()
    assert not (ralph.root / "build" / "ralph-logs" / "drafts" / "farewell.json").exists()
    # The question's commit and the one that takes it out: the plan is as it was.
    assert git(ralph.root, "diff", head, "HEAD") == ""
    assert ralph("spec", "draft", "farewell", "--reject", code=1).stderr.startswith(
        "ralph: no draft of specs/farewell.md"
    )


def test_a_spec_of_the_name_is_never_overwritten_and_bad_input_is_one_line(ralph):
    (ralph.root / "specs" / "farewell.md").write_text("mine\n")
    done = ralph("spec", "draft", "farewell", IDEA, *AGENT, code=1)
    assert (
        done.stderr
        == "ralph: specs/farewell.md exists: edit it, or draft another name (nothing was drafted)\n"
    )
    assert ralph("spec", "draft", "../x", IDEA, code=2).stderr.startswith("ralph: bad spec name '../x'")
    assert ralph("spec", "draft", "other", code=2).stderr == (
        'ralph: say what specs/other.md should be about: ralph spec draft other "the idea"\n'
    )
    assert (ralph.root / "specs" / "farewell.md").read_text() == "mine\n"


@pytest.mark.parametrize(
    ("mode", "problem"),
    [
        ("file", "the drafting agent changed files beyond its draft (code.py): undone"),
        (
            "task",
            "the drafting agent changed the plan beyond its questions (1 record(s) that are no questions",
        ),
        ("link", "build/ralph-logs/drafts/farewell/draft.md is not a file the draft can be read from"),
        ("nothing", "the drafting agent ended without a draft in build/ralph-logs/drafts/farewell/draft.md"),
    ],
)
def test_what_a_hostile_agent_leaves_is_refused_and_undone(ralph, monkeypatch, mode, problem):
    monkeypatch.setenv("DRAFT_AGENT", mode)
    (ralph.root / "secret.txt").write_text("SECRET\n")
    plan = (ralph.root / "plan.jsonl").read_bytes()
    done = ralph("spec", "draft", "farewell", IDEA, *AGENT, code=1)
    assert done.stderr.splitlines()[-1].startswith(f"ralph: {problem}"), done.stderr
    assert "SECRET" not in done.stdout + done.stderr
    assert (ralph.root / "plan.jsonl").read_bytes() == plan
    assert not (ralph.root / "code.py").exists()
    assert not (ralph.root / "specs" / "farewell.md").exists()
    ralph("spec", "draft", "farewell", "--accept", code=1)  # nothing to accept


def test_on_a_terminal_it_asks_at_once_shows_the_draft_revises_edits_and_accepts(repo, monkeypatch):
    monkeypatch.setenv("PAGER", "cat")  # the draft is paged; cat pages nothing (terminal() passes it on)
    monkeypatch.setenv("EDITOR", "sed -i s/Ada/Bob/g")  # a person's edit in $EDITOR
    argv = [sys.executable, "-m", "ralph", "-C", str(repo), "spec", "draft", "farewell", IDEA, *AGENT]
    screen = terminal(argv)

    def reply(after: str, count: int, text: str) -> None:
        wait_for(lambda: screen.seen().count(after) >= count, f"{after!r} shown {count} time(s)", 120)
        os.write(screen.leader, text.encode() + b"\r")

    reply("1-2, or your own answer", 1, "2")
    reply("re[j]ect", 1, "r")
    reply("what should change", 1, "shout it")
    reply("re[j]ect", 2, "e")
    reply("re[j]ect", 3, "a")
    reply("now? [y/N]", 1, "n")
    shown = screen.finish()
    assert screen.running.returncode == 0, shown
    assert "Which words should the farewell say?" in shown
    assert "1) Goodbye" in shown and "2) See you" in shown
    assert 'return f"See you, {name}!"' in shown  # the first draft, shown
    assert "SEE YOU, Bob!" in shown  # the revised one, edited, shown again
    assert "SEE YOU, Bob!" in (repo / "specs" / "farewell.md").read_text()
    assert "accepted: wrote and committed specs/farewell.md" in shown
    assert "next: ralph construct specs/farewell.md --dry-run" in shown  # not started: nothing built
    assert "  A: See you" in said(repo)
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [
        "plan.jsonl",
        "specs/farewell.md",
    ]


def test_a_draft_is_shown_escaped_on_the_terminal(repo, monkeypatch):
    monkeypatch.setenv("DRAFT_AGENT", "escape")
    monkeypatch.setenv("PAGER", "cat")
    argv = [sys.executable, "-m", "ralph", "-C", str(repo), "spec", "draft", "farewell", IDEA, *AGENT]
    screen = terminal(argv)
    wait_for(lambda: "re[j]ect" in screen.seen(), "the decision's prompt", 120)
    os.write(screen.leader, b"j\r")
    shown = screen.finish()
    assert "\x1b]0;owned" not in shown and "\x1b[2J" not in shown
    assert "\\x1b]0;owned\\x07" in shown
    assert "rejected: the draft of specs/farewell.md is gone; nothing was written" in shown
    assert not (repo / "specs" / "farewell.md").exists()


@pytest.mark.skipif(unavailable_reason()[0] is None, reason="no sandbox here")
def test_fenced_the_agent_can_write_its_draft_and_ask_but_no_code(ralph, monkeypatch):
    asked = ralph("spec", "draft", "farewell", IDEA, *AGENT, "--sandbox", "required", code=9)
    assert "waits for 1 answer(s)" in asked.stdout  # `ralph ask` works inside the fence
    ralph("answer", only_question(ralph)["id"], "Goodbye")
    ralph("spec", "draft", "farewell", code=9)  # the fence is remembered with the agent
    assert "Goodbye, Ada!" in (ralph.root / DRAFT).read_text()  # its draft folder is writable
    ralph("spec", "draft", "farewell", "--reject")

    monkeypatch.setenv("DRAFT_AGENT", "file")
    done = ralph("spec", "draft", "farewell", IDEA, *AGENT, "--sandbox", "required", code=1)
    # A new top-level name is the one thing the fence cannot stop (ralph.loop.process.sandbox.Fence): ralph
    # finds it after the run and undoes it, draft and all.
    assert done.stderr.splitlines()[-1].startswith(
        "ralph: the drafting agent changed files beyond its draft (code.py): undone"
    )
    assert not (ralph.root / "code.py").exists()
    assert not (ralph.root / DRAFT).exists()


def test_a_signal_stops_the_agent_and_its_child_and_leaves_the_plan_as_committed(repo, tmp_path):
    import signal
    import subprocess

    from tests.support.construct import default_signals, gone

    pids = tmp_path / "pids"
    env = {**os.environ, "DRAFT_AGENT": "hang", "DRAFT_PIDS": str(pids)}
    argv = [sys.executable, "-m", "ralph", "-C", str(repo), "spec", "draft", "farewell", IDEA, *AGENT]
    running = subprocess.Popen(  # with SIGTERM's default action, whatever this test inherited
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=default_signals,
    )  # fmt: skip
    wait_for(
        lambda: pids.exists() and pids.read_text().endswith("\n"),
        "the agent asked and started its child",
        120,
    )
    agent, child = (int(pid) for pid in pids.read_text().split())
    running.send_signal(signal.SIGTERM)
    _, err = running.communicate(timeout=120)
    assert running.returncode == 128 + signal.SIGTERM, err
    assert err.decode().splitlines()[-1] == (
        "ralph: interrupted: the drafting run was stopped; run the same command again to go on"
    )
    assert gone(agent) and gone(child)
    assert git(repo, "status", "--porcelain") == ""  # the question it asked went with it
    assert Ralph(repo)("questions").stdout == ""


@pytest.mark.slow
def test_on_a_terminal_accepting_offers_construct_which_builds_the_spec_with_the_same_agent(
    repo, monkeypatch
):
    monkeypatch.setenv("PAGER", "cat")
    (repo / ".gitignore").write_text((repo / ".gitignore").read_text() + "__pycache__/\n")
    git(repo, "commit", "-qam", "ignore bytecode")  # the demo agent's checks import what it built
    Ralph(repo)("config", "set", "gate", "")
    argv = [sys.executable, "-m", "ralph", "-C", str(repo), "spec", "draft", "farewell", IDEA, *AGENT]
    screen = terminal(argv)
    for prompt, text in (("or your own answer", "1"), ("re[j]ect", "a"), ("now? [y/N]", "y")):
        wait_for(lambda prompt=prompt: prompt in screen.seen(), f"{prompt!r} shown", 120)
        os.write(screen.leader, text.encode() + b"\r")
    shown = screen.finish()
    assert screen.running.returncode == 0, shown
    assert "ralph: COMPLETE" in shown
    assert (repo / "farewell.py").read_text().strip().endswith('return f"Goodbye, {name}!"')
