"""A scripted stand-in for a coding agent, for the demo. It follows the command adapter's
contract: RALPH_STAGE says what to do, RALPH_TASK_ID / RALPH_ISSUE_ID the item, and it changes
the plan only through the `ralph` commands. It prints Claude Code stream-json events, so ralph
counts its (made-up) tokens like a real agent's."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, TypedDict

SECTION = re.compile(r"^### (?P<file>\S+)\n(?P<body>.*?)(?=^### |\Z)", re.MULTILINE | re.DOTALL)


def ralph(*args: str) -> str:
    command = shlex.split(os.environ["RALPH_BIN"])
    return subprocess.run([*command, *args], check=True, capture_output=True, text=True).stdout


SPENT = {"input_tokens": 0, "output_tokens": 0}


def say(text: str, input_tokens: int = 1200) -> None:
    SPENT["input_tokens"] += input_tokens
    SPENT["output_tokens"] += 40
    message = {
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }
    print(json.dumps({"type": "assistant", "message": message}), flush=True)


class Section(TypedDict):
    """A `### FILE` section of a spec written for the demo agent."""

    check: str  # its `Check: COMMAND` line's command
    needs: list[str]  # the files its `Needs:` line names
    code: str  # its ```python block
    type: str | None  # its `Type:` line's task type (ralph task add --type), if it has one


class NotForMe(Exception):
    """The spec is not one the demo agent was written for: it is a script, not a model."""


WRITTEN_FOR = (
    "the demo agent is a script, not a model: it builds only specs written for it, where each"
    " `### FILE` section has a `Check: COMMAND` line and a ```python block (like ralph/demo/greeter.md);"
    " for any other spec use a real agent (ralph construct SPEC --agent claude, see `ralph agents`)"
)


def sections() -> dict[str, Section]:
    spec = os.environ["RALPH_SPEC"]
    found: dict[str, Section] = {}
    for match in SECTION.finditer(Path(spec).read_text(encoding="utf-8")):
        body, file = match.group("body"), match.group("file")
        check = re.search(r"^Check: (.+)$", body, re.MULTILINE)
        code = re.search(r"```python\n(.*?)```", body, re.DOTALL)
        if not (check and code):
            raise NotForMe(
                f"{spec}: its section ### {file} has no {'Check: line' if not check else '```python block'}"
            )
        needs = re.search(r"^Needs: (.+)$", body, re.MULTILINE)
        found[file] = {
            "check": check.group(1),
            "needs": [n.strip() for n in needs.group(1).split(",")] if needs else [],
            "code": code.group(1),
            "type": section_type(body),
        }
    if not found:
        raise NotForMe(f"{spec} has no ### FILE sections")
    return found


def section_type(body: str) -> str | None:
    kind = re.search(r"^Type: (\S+)$", body, re.MULTILINE)
    return kind.group(1) if kind else None


def typed(section: Section) -> dict[str, str]:
    """The `type` of a task for the section, as `ralph task add` takes it (none: no key)."""
    return {"type": section["type"]} if section["type"] else {}


def plan() -> None:
    ids: dict[str, str] = {}
    for file, section in sections().items():
        task = {
            "name": f"Write {file}",
            "accept": section["check"],
            "deps": [ids[n] for n in section["needs"]],
            **typed(section),
        }
        ids[file] = json.loads(ralph("task", "add", "--json", json.dumps(task)))["id"]
        say(f"planned {ids[file]}: write {file}" + (f" ({section['type']})" if section["type"] else ""))


def current_task() -> dict[str, Any]:
    """The task as `ralph task show` prints it (docs/json-output.md)."""
    task: dict[str, Any] = json.loads(ralph("task", "show", os.environ["RALPH_TASK_ID"]))
    return task


def build() -> None:
    task = current_task()
    if task["name"] == README_TASK:  # what the docs review found (review())
        write_readme()
        return
    file = task["name"].removeprefix("Write ")
    found = sections()
    if file not in found:
        raise NotForMe(
            f"task {task['id']} ({task['name']!r}) is not a `Write FILE` task of a section of the spec"
        )
    use_skills(task)
    Path(file).write_text(found[file]["code"], encoding="utf-8")
    say(f"wrote {file}", input_tokens=2400)
    ralph("task", "done")


# A line of the prompt's list of skills (ralph.loop.runs.skills.prompt_section): "- NAME: WHAT (PATH)".
SKILL_LINE = re.compile(r"^- (?P<name>[^:]+): .* \((?P<path>[^()]+/SKILL\.md)\)$", re.MULTILINE)


def use_skills(task: dict[str, Any]) -> None:
    """As a real agent does: read the body of each skill the BUILD prompt lists (ralph lists only
    those for the task's type), and say so; the demo's skill asks for nothing the spec's code
    lacks, so saying is all there is to do."""
    prompt = Path(os.environ["RALPH_PROMPT_FILE"]).read_text(encoding="utf-8")
    kind = task.get("type") or "untyped"
    listed = SKILL_LINE.findall(prompt)
    if not listed:
        say(f"no skill listed in the prompt of this {kind} task")
    for name, path in listed:
        body = Path(path).read_text(encoding="utf-8").split("---", 2)[-1].strip()
        rule = next((line for line in body.splitlines() if line and not line.startswith("#")), "")
        say(f"used the skill {name} ({path}), listed in the prompt of this {kind} task: {rule}")


def verify() -> None:
    task = current_task()
    check = subprocess.run(shlex.split(task["accept"]), capture_output=True, text=True)
    if check.returncode == 0:
        say(f"{task['id']}: `{task['accept']}` passes", input_tokens=1800)
        ralph("task", "accept")
    else:
        ralph("task", "reject", f"`{task['accept']}` failed: {check.stderr.strip()[-200:]}")


def check() -> None:
    """The spec check: a task for each section whose file is missing or fails its check."""
    for file, section in sections().items():
        if (
            Path(file).exists()
            and subprocess.run(shlex.split(section["check"]), capture_output=True).returncode == 0
        ):
            continue
        task = {"name": f"Write {file}", "accept": section["check"], **typed(section)}
        ralph("task", "add", json.dumps(task))
        say(f"the spec's {file} is missing or fails `{section['check']}`")
    say("checked every section of the spec against the code")


README_TASK = "Write README.md: how to use the greeter"
README = """# Greeter

    python3 cli.py Ada    # prints: Hello, Ada!

From Python: `from greet import greet; greet("Ada")`. Tests: `python3 -m unittest -q test_greet`.
"""


def review() -> None:
    """The review by aspect: the docs aspect finds that nothing tells a person how to use what
    was built (no README.md), in the first round only; every other aspect finds nothing."""
    prompt = Path(os.environ["RALPH_PROMPT_FILE"]).read_text(encoding="utf-8")
    aspect = re.search(r"^Stage: REVIEW\. Aspect: ([\w-]+)\.", prompt, re.MULTILINE)
    last = "the review's last round" in prompt
    if aspect and aspect.group(1) == "docs" and not last and not Path("README.md").exists():
        finding = {
            "name": README_TASK,
            "type": "docs",
            "accept": "python3 -c \"import pathlib; assert 'cli.py' in"
            " pathlib.Path('README.md').read_text()\"",
            "notes": "the change adds a library and a command, and no page says how to use them",
        }
        ralph("task", "add", json.dumps(finding))
        say("docs: nothing tells a person how to run the greeter; added a task for a README")
        return
    say(f"{aspect.group(1) if aspect else 'review'}: nothing found")


def write_readme() -> None:
    Path("README.md").write_text(README, encoding="utf-8")
    say("wrote README.md", input_tokens=900)
    ralph("task", "done")


def investigate() -> None:
    ralph("issue", "resolve", os.environ["RALPH_ISSUE_ID"], "--note", "the demo agent has nothing to add")


def decompose() -> None:
    task = current_task()
    for part in ("first half", "second half"):
        ralph("task", "add", json.dumps({"name": f"{task['name']} ({part})", "parent": task["id"]}))
    ralph("task", "delete", task["id"])


FAREWELL = """# Farewell

## Goal

A tiny farewell library beside the greeter: `farewell(name)` says goodbye with the words the
person chose while the spec was drafted, and a test keeps it so.

## Requirements

- [ ] `farewell.farewell("Ada")` returns `{words}, Ada!`
  Verify: python3 -c "import farewell; assert farewell.farewell('Ada') == '{words}, Ada!'"
- [ ] the unit test of the farewell passes
  Verify: python3 -m unittest -q test_farewell

## Constraints

Python's standard library only; the greeter's files stay as they are.

## Out of scope

A command-line entry point, and other languages.

## How to verify

`make verify` runs every `test_*.py`. The scripted demo agent builds one file per section below
and checks each with its `Check:` line.

### farewell.py
Check: python3 -c "import farewell; assert farewell.farewell('Ada') == '{words}, Ada!'"

```python
def farewell(name: str) -> str:
    \"\"\"Say goodbye to someone by name.\"\"\"
    return f"{words}, {{name}}!"
```

### test_farewell.py
Needs: farewell.py
Check: python3 -m unittest -q test_farewell

```python
import unittest

from farewell import farewell


class FarewellTest(unittest.TestCase):
    def test_says_goodbye_by_name(self):
        self.assertEqual(farewell("Ada"), "{words}, Ada!")


if __name__ == "__main__":
    unittest.main()
```
"""
QUESTION = "Which words should the farewell say?"


def draft() -> None:
    """A scripted draft (`ralph spec draft`): it asks once which words to use, then writes the
    farewell spec with the answer, which its prompt carries; feedback asking for "shout" makes the
    words upper case (a revision)."""
    prompt = Path(os.environ["RALPH_PROMPT_FILE"]).read_text(encoding="utf-8")
    answer = re.search(r"^A: (.+)$", prompt, re.MULTILINE)
    if answer is None:
        ralph("ask", QUESTION, "--choice", "Goodbye", "--choice", "See you")
        say(f"asked: {QUESTION}")
        return
    words = re.sub(r"[^\w ,.!-]", "", answer.group(1)).strip() or "Goodbye"  # it goes into code
    feedback = prompt.split("the person's feedback", 1)
    if len(feedback) == 2 and "shout" in feedback[1].lower():
        words = words.upper()
    Path(os.environ["RALPH_DRAFT_FILE"]).write_text(FAREWELL.format(words=words), encoding="utf-8")
    say(f"drafted the farewell spec: {words}, NAME!", input_tokens=2000)


def main() -> int:
    stage = os.environ["RALPH_STAGE"]
    stages = {
        "PLAN": plan,
        "BUILD": build,
        "VERIFY": verify,
        "INVESTIGATE": investigate,
        "DECOMPOSE": decompose,
        "CHECK": check,
        "REVIEW": review,
        "DRAFT": draft,
    }
    try:
        stages[stage]()
    except NotForMe as exc:
        print(f"demo agent: {exc}; {WRITTEN_FOR}", file=sys.stderr, flush=True)
        return 2
    result = {"type": "result", "subtype": "success", "is_error": False, "usage": SPENT}
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
