"""Every command the README shows works: each line of its shell blocks, and each `ralph ...` it names
in its text, is a make target of the Makefile, an install command from the clone, or a ralph
command whose subcommands and flags the CLI takes; the cheap ones run for real, in README order, in
a new repository. The README stays a newcomer's page (under 10 KB), its set-up commands are two
and its test command is what CI runs, and no link of the README or docs/ leads nowhere."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import click
import pytest

from ralph.cli.main import cli
from tests.support.cli import ralph_in_process
from tests.support.gitrepo import git
from tests.support.specs import write_spec

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```sh\n(.*?)^```", README, re.S | re.M)
# What runs for real in a new repository; every other ralph command is checked against the CLI's
# tree only (a model account, a running loop or an id it cannot know).
RUN = {("init",), ("spec", "check"), ("status",), ("questions",), ("doctor",)}


def block_commands(blocks: list[str] = BLOCKS) -> list[list[str]]:
    """Each command line of the shell blocks, split as a shell would, its comment dropped."""
    found = []
    for block in blocks:
        for line in block.splitlines():
            argv = shlex.split(line, comments=True)
            if argv:
                found.append(argv)
    return found


def inline_commands() -> list[list[str]]:
    """The `ralph ...` the README's text names in code spans."""
    return [shlex.split(span) for span in re.findall(r"(?<!`)`(ralph [^`]+)`", README)]


def resolve(argv: list[str], named: bool = False) -> tuple[str, ...]:
    """The path of the ralph command argv names ("spec", "check"), after click parsed its
    arguments and flags as the command would; a pytest failure naming what it does not take.
    `named`: the text names the command (`ralph spec draft`), so nothing after it is required."""
    assert argv[0] == "ralph", argv
    # Contexts made as click makes them (make_context): a bare click.Context would leave the
    # command's help option without the root's `-h` (click keeps it), for the tests after this one.
    command: click.Command = cli
    ctx = cli.make_context("ralph", [], resilient_parsing=True)
    path: list[str] = []
    args = argv[1:]
    while isinstance(command, click.Group) and args and not args[0].startswith("-"):
        sub = command.get_command(ctx, args[0])
        if sub is None:
            pytest.fail(f"the README names `ralph {' '.join([*path, args[0]])}`: no such command")
        path.append(args.pop(0))
        command = sub
        if isinstance(command, click.Group):
            ctx = command.make_context(path[-1], [], parent=ctx, resilient_parsing=True)
    if "--help" in args or "-h" in args or (named and not args):
        return tuple(path)
    try:
        command.make_context(path[-1] if path else "ralph", list(args), parent=ctx)
    except click.UsageError as exc:
        pytest.fail(f"the README's `{shlex.join(argv)}`: {exc.format_message()}")
    return tuple(path)


def check_other(argv: list[str]) -> None:
    """A command that is not ralph's: a make target, the install from the clone, the venv."""
    if argv[0] == "make":
        (target,) = argv[1:]
        assert re.search(rf"^{re.escape(target)}:", MAKEFILE, re.M), f"no make target {target}"
    elif argv[:2] in (["pipx", "install"], ["pip", "install"], ["uv", "tool"]):
        # The install from the clone: tests/test_distribution.py builds and runs that wheel.
        assert argv[-1] == "." and argv[-2] == "install", argv
        scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
        assert scripts == {"ralph": "ralph.cli.main:main"}
    elif argv[0] == "source":
        assert argv[1:] == [".venv/bin/activate"]  # the Makefile's venv, made by python -m venv
        assert "VENV ?= .venv" in MAKEFILE and "python3 -m venv $(VENV)" in MAKEFILE
    else:
        pytest.fail(f"the README shows `{shlex.join(argv)}`: teach tests/test_readme.py to check it")


def test_every_command_in_the_readme_exists_with_the_flags_it_shows():
    shown, named = block_commands(), inline_commands()
    assert len([argv for argv in shown if argv[0] == "ralph"]) >= 8 and len(named) >= 10
    for argv in shown:
        if argv[0] == "ralph":
            resolve(argv)
        else:
            check_other(argv)
    for argv in named:
        resolve(argv, named=True)


@pytest.mark.parametrize(
    ("shown", "wrong"),
    [
        ("ralph construct specs/x.md --max-dollars 5", "No such option '--max-dollars'"),
        ("ralph spec draught x idea", "no such command"),
        ("ralph answer", "Missing argument"),
        ("ralph status --verbose", "No such option '--verbose'"),
    ],
)
def test_a_flag_or_command_that_does_not_exist_fails_the_check(shown, wrong):
    with pytest.raises(pytest.fail.Exception, match=wrong):
        resolve(shlex.split(shown))


def test_a_make_target_that_does_not_exist_fails_the_check():
    with pytest.raises(AssertionError, match="no make target"):
        check_other(["make", "demos"])


def test_the_cheap_commands_run_for_real_in_readme_order(tmp_path):
    """In a new project, as the README goes: init, the spec the agent would draft (a stand-in,
    committed as accepting commits it), its check, then the commands for a run that stopped."""
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    (project / "README").write_text("a project\n")
    git(project, "add", "README")
    git(project, "commit", "-qm", "initial")
    ran = []
    for argv in block_commands():
        if argv[0] != "ralph":
            continue
        path = resolve(argv)
        if path == ("spec", "draft"):
            spec = write_spec(project, f"specs/{argv[3]}.md")
            git(project, "add", str(spec))
            git(project, "commit", "-qm", "the accepted spec")
        elif path in RUN:
            done = ralph_in_process(project, *argv[1:])
            assert done.returncode == 0, (argv, done.stdout, done.stderr)
            ran.append(path)
    assert set(ran) == RUN  # each of them is still in the README
    assert (project / "plan.jsonl").is_file()
    assert ralph_in_process(project, "spec", "check", "specs/login.md").stdout.startswith(
        "specs/login.md: ok"
    )


def test_the_readme_is_short_sets_up_in_two_commands_and_tests_as_ci_does():
    assert len(README.encode("utf-8")) < 10_000
    first = block_commands(BLOCKS[:1])
    assert first == [["make", "demo"], ["make", "verify"]]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make verify$", ci, re.M)  # the README's test command is what CI runs
    assert "-m ralph.demo" in MAKEFILE.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "specs/architecture.md" in README and "| package |" not in README  # the module table moved


def test_every_relative_link_of_the_readme_and_docs_leads_to_a_file():
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (doc.parent / target.split("#", 1)[0]).resolve()
            assert path.exists(), f"{doc.relative_to(ROOT)}: the link {target} leads nowhere"
