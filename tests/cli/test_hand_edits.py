"""Hand edits are checked as strictly as commands: `ralph check` refuses a field no record takes
with the line `task add` gives, while a user's own `x-` fields pass; a `--spec` names a file."""

from __future__ import annotations

from tests.support.cli import Ralph
from tests.support.gitrepo import git

TYPO = "unknown field acept (did you mean accept?; "


def test_check_refuses_a_hand_typed_field_task_add_refuses_and_keeps_the_users_own(ralph: Ralph):
    refused = ralph("task", "add", '{"name": "x", "acept": "y"}', code=2)
    assert refused.stderr.startswith(f"ralph: task: {TYPO}allowed: id, name, accept,")
    plan = ralph.root / "plan.jsonl"
    plan.write_text(plan.read_text() + '{"t": "task", "id": "t-hand01", "name": "x", "acept": "y"}\n')
    line = len(plan.read_text().splitlines())
    before = plan.read_bytes()
    done = ralph("check", code=2)
    mine = "a field of your own starts with x-"
    assert done.stderr == f"plan.jsonl:{line}: task: {TYPO}allowed: see docs/plan-format.md; {mine})\n"
    assert ralph("query", "next", code=2).stderr.startswith(f"ralph: plan.jsonl:{line}: task: {TYPO}")
    assert plan.read_bytes() == before
    plan.write_bytes(before.replace(b'"acept"', b'"x-acept"'))
    assert ralph("check").stdout.startswith("plan.jsonl: ok")


def test_a_spec_given_to_a_command_must_exist(ralph: Ralph):
    head = git(ralph.root, "rev-parse", "HEAD")
    plan = (ralph.root / "plan.jsonl").read_bytes()
    said = "the spec specs/nope.md does not exist (a path from the repository's top)\n"
    done = ralph("task", "add", "--name", "x", "--spec", "specs/nope.md", code=2)
    assert done.stderr == f"ralph: task add: {said}"
    done = ralph("task", "add", '{"name": "x", "spec": "specs/nope.md"}', code=2)
    assert done.stderr == f"ralph: task add: {said}"
    done = ralph("task", "prioritize", "--spec", "specs/nope.md", code=2)
    assert done.stderr == f"ralph: task prioritize: {said}"
    assert git(ralph.root, "rev-parse", "HEAD") == head and (ralph.root / "plan.jsonl").read_bytes() == plan
    (ralph.root / "specs" / "yes.md").write_text("# yes\n")
    ralph("task", "add", "--name", "x", "--spec", "specs/yes.md")
    ralph("task", "prioritize", "--spec", "specs/yes.md")
