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


def _required(pattern: str, body: str, flags: int) -> str:
    found = re.search(pattern, body, flags)
    assert found is not None, f"a section of the demo's spec lacks {pattern}"
    return found.group(1)


def sections() -> dict[str, dict]:
    spec = Path(os.environ["RALPH_SPEC"]).read_text(encoding="utf-8")
    found = {}
    for match in SECTION.finditer(spec):
        body = match.group("body")
        needs = re.search(r"^Needs: (.+)$", body, re.MULTILINE)
        found[match.group("file")] = {
            "check": _required(r"^Check: (.+)$", body, re.MULTILINE),
            "needs": [n.strip() for n in needs.group(1).split(",")] if needs else [],
            "code": _required(r"```python\n(.*?)```", body, re.DOTALL),
        }
    return found


def plan() -> None:
    ids: dict[str, str] = {}
    for file, section in sections().items():
        task = {
            "name": f"Write {file}",
            "accept": section["check"],
            "deps": [ids[n] for n in section["needs"]],
        }
        ids[file] = json.loads(ralph("task", "add", "--json", json.dumps(task)))["id"]
        say(f"planned {ids[file]}: write {file}")


def current_task() -> dict:
    return json.loads(ralph("task", "show", os.environ["RALPH_TASK_ID"]))


def build() -> None:
    task = current_task()
    file = task["name"].removeprefix("Write ")
    Path(file).write_text(sections()[file]["code"], encoding="utf-8")
    say(f"wrote {file}", input_tokens=2400)
    ralph("task", "done")


def verify() -> None:
    task = current_task()
    check = subprocess.run(shlex.split(task["accept"]), capture_output=True, text=True)
    if check.returncode == 0:
        say(f"{task['id']}: `{task['accept']}` passes", input_tokens=1800)
        ralph("task", "accept")
    else:
        ralph("task", "reject", f"`{task['accept']}` failed: {check.stderr.strip()[-200:]}")


def investigate() -> None:
    ralph("issue", "resolve", os.environ["RALPH_ISSUE_ID"], "--note", "the demo agent has nothing to add")


def decompose() -> None:
    task = current_task()
    for part in ("first half", "second half"):
        ralph("task", "add", json.dumps({"name": f"{task['name']} ({part})", "parent": task["id"]}))
    ralph("task", "delete", task["id"])


def main() -> int:
    stage = os.environ["RALPH_STAGE"]
    stages = {
        "PLAN": plan,
        "BUILD": build,
        "VERIFY": verify,
        "INVESTIGATE": investigate,
        "DECOMPOSE": decompose,
    }
    stages[stage]()
    result = {"type": "result", "subtype": "success", "is_error": False, "usage": SPENT}
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
