"""Golden files for what people see: stdout, stderr and exit code of every command, and every --help.

Each tests/cli/golden/cli/*.yml is one scenario in a fresh repository:

    fixture: repo            # `repo` (initialized, the default), `bare` (git init only) or
                             # `unregistered` (initialized, as a fresh clone: no merge driver config)
    plan: |                  # optional: plan.jsonl content written before the steps
      {"t": "task", ...}
    files:                   # optional: other files written in the repository before the steps
      theirs.jsonl: |
        {"t": "task", ...}
    show_plan: true          # optional: the golden file records plan.jsonl after the steps too
    setup:                   # optional: steps that must exit 0; their output is not recorded
      - [task, add, '{"id": "t-aaaaaa", "name": "x"}']
    steps:                   # the steps whose output the golden file records
      - [task, done, t-aaaaaa]
      - {args: [task, add, --stdin], input: '{"name": "y"}'}

Ids are given explicitly where a command takes them. Ids ralph generates (issues, `task add
--name`) are replaced by <i1>, <t1>, ... in order of appearance, and a step may name them that way.
The repository path is replaced by <repo>, and <repo> in a step's arguments is the repository.

tests/cli/golden/help/*.yml hold `ralph ... --help` for every command of the click tree; a command
without one fails test_every_command_has_a_help_golden. Regenerate with `pytest --update-goldens`
(run it twice after adding a command: the first run creates the missing files).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from pytest_golden.plugin import GoldenTestFixture

from ralph.cli.main import cli


def git(root: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=check)
    return done.stdout if done.returncode == 0 else ""


GOLDEN = Path(__file__).parent / "golden"
GENERATED_ID = re.compile(r"\b([ti])-[0-9a-z]{6}\b")


def invoke(args: list[str], input: str | None = None):
    """The real CLI in-process, as `ralph`, with a fixed help width."""
    return CliRunner().invoke(cli, args, input=input, prog_name="ralph", terminal_width=80)


class Scenario:
    def __init__(self, root: Path, explicit: set[str]):
        self.root = root
        self.explicit = explicit  # ids that appear in the scenario's own input
        self.placeholders: dict[str, str] = {}  # generated id -> <t1>

    def args(self, args: list[str]) -> list[str]:
        back = {name: real for real, name in self.placeholders.items()}
        return [
            re.sub(r"<[ti]\d+>", lambda m: back.get(m.group(), m.group()), arg).replace(
                "<repo>", str(self.root)
            )
            for arg in args
        ]

    def clean(self, text: str) -> str:
        for generated in GENERATED_ID.finditer(text):
            found = generated.group()
            if found not in self.explicit and found not in self.placeholders:
                count = sum(1 for name in self.placeholders.values() if name[1] == found[0])
                self.placeholders[found] = f"<{found[0]}{count + 1}>"
        text = GENERATED_ID.sub(lambda m: self.placeholders.get(m.group(), m.group()), text)
        for path in {str(self.root.resolve()), str(self.root)}:
            text = text.replace(path, "<repo>")
        return text

    def run(self, step: list[str] | dict) -> dict:
        args, input = (step, None) if isinstance(step, list) else (step["args"], step.get("input"))
        result = invoke(["-C", str(self.root), *self.args(args)], input=input)
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return {
            "exit_code": result.exit_code,
            "stdout": self.clean(result.stdout),
            "stderr": self.clean(result.stderr),
        }


@pytest.mark.golden_test("golden/cli/*.yml")
def test_cli_output(golden: GoldenTestFixture, request: pytest.FixtureRequest):
    root = request.getfixturevalue("bare_repo" if golden.get("fixture") == "bare" else "repo")
    if golden.get("fixture") == "unregistered":  # git does not clone its config
        git(root, "config", "--remove-section", "merge.ralph")
    if golden.get("plan") is not None:
        (root / "plan.jsonl").write_text(golden["plan"], encoding="utf-8")
    for name, text in (golden.get("files") or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)  # build/ralph-logs/events.jsonl
        (root / name).write_text(text, encoding="utf-8")
    steps = golden.get("setup") or []
    explicit: set[str] = set()
    for step in [*steps, *golden["steps"]]:
        words = step if isinstance(step, list) else [*step["args"], step.get("input") or ""]
        explicit |= {m.group() for word in words for m in GENERATED_ID.finditer(word)}
    for text in [golden.get("plan") or "", *(golden.get("files") or {}).values()]:
        explicit |= {m.group() for m in GENERATED_ID.finditer(text)}
    scenario = Scenario(root, explicit)
    start = git(root, "rev-parse", "-q", "--verify", "HEAD", check=False).strip()
    for step in steps:
        result = scenario.run(step)
        assert result["exit_code"] == 0, (step, result)
    results = [scenario.run(step) for step in golden["steps"]]
    assert results == golden.out["results"]
    if golden.get("show_plan"):  # the file the steps left, where that is what people see
        assert (root / "plan.jsonl").read_text(encoding="utf-8") == golden.out["plan_after"]
    # The commits the steps made (setup's too), oldest first: one per change, plan.jsonl alone.
    # One git run for both: each commit is a NUL, its subject, then the files it changed.
    span = f"{start}..HEAD" if start else "HEAD"
    log = (
        ""
        if not (root / ".git").exists()
        else git(root, "log", "--reverse", "--format=%x00%s", "--name-only", span, check=False)
    )
    commits = [entry.split("\n", 1) for entry in log.split("\0")[1:]]
    subjects = "".join(f"{subject}\n" for subject, *_ in commits)
    assert scenario.clean(subjects).splitlines() == golden.out["commits"]
    if commits and golden.get("fixture") != "bare":
        assert {name for _, *files in commits for name in "".join(files).split()} == {"plan.jsonl"}


# --- --help ------------------------------------------------------------------------------------


def command_paths(command: click.Command = cli, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command of the tree, groups included, as the words that invoke it."""
    found = [path]
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):  # lazily loaded commands too
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            found.extend(command_paths(sub, (*path, name)))
    return found


def help_file(path: tuple[str, ...]) -> Path:
    return GOLDEN / "help" / ("_".join(("ralph", *path)) + ".yml")


@pytest.mark.golden_test("golden/help/*.yml")
def test_help(golden: GoldenTestFixture):
    command = golden["command"].split()[1:]
    result = invoke([*command, "--help"])
    assert result.exit_code == 0, result.output
    assert result.stdout == golden.out["stdout"]


def test_every_command_has_a_help_golden(request: pytest.FixtureRequest):
    wanted = {help_file(path): " ".join(("ralph", *path)) for path in command_paths()}
    missing = [file for file in wanted if not file.exists()]
    if missing and request.config.getoption("--update-goldens"):
        for file in missing:
            file.write_text(f"command: {wanted[file]}\n", encoding="utf-8")
        pytest.fail(f"created {len(missing)} help golden file(s); run `pytest --update-goldens` again")
    assert not missing, f"no help golden for: {', '.join(wanted[f] for f in missing)}"
    stale = sorted(set((GOLDEN / "help").glob("*.yml")) - set(wanted))
    assert not stale, f"help golden for a command that no longer exists: {[f.name for f in stale]}"
