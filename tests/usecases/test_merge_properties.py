"""The merge driver under random histories: two branches from one base, each changed by a random
sequence of real `ralph` commands (run in-process through the CLI), then merged by a real
`git merge` with the driver `ralph init` registered.

What "commute" means here (`commute`): the two sequences commute on their base when replaying
theirs' commands after ours' on one branch gives the same records as replaying ours' after
theirs' (compared as records by key, not bytes: the merge decides line order, the rules say
nothing of it). Then neither order is the right one and the merge must give that one answer: the
records of ours-then-theirs, clean, passing `ralph check`, with nothing left for git to resolve.
Otherwise the merge is either clean with the rules' answer (what ralph.plan.merge gives for the
three committed versions, byte for byte) and passes `ralph check`, or git leaves plan.jsonl
conflicted with markers that name each conflicting record, and nothing either side has is lost.

The fast test draws a few examples in `make verify`; the long run is marked slow (`make e2e`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from ralph.plan.loader import load
from ralph.plan.merge import merge_bytes, only_automatic
from tests.support.cli import Ralph
from tests.support.gitrepo import git

BASE_TASKS = ["t-b0", "t-b1", "t-b2", "t-b3"]
NEW_TASKS = ["t-n0", "t-n1"]  # ids either side may add: both adding one is a real case
TASKS = BASE_TASKS + NEW_TASKS
OPS = ["add", "add", "done", "done", "accept", "reject", "prioritize", "delete", "issue", "resolve", "config"]

OPERATIONS = st.lists(
    st.tuples(st.sampled_from(OPS), st.integers(0, len(TASKS) - 1), st.integers(0, 3)), max_size=6
)


@pytest.fixture(scope="session")
def _base_repo(_initialized_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The common base, made once per test process with real commands: tasks in every status,
    a dependency, an issue and a config record."""
    root = tmp_path_factory.mktemp("merge-base") / "repo"
    shutil.copytree(_initialized_repo, root, symlinks=True)
    with pytest.MonkeyPatch.context() as monkeypatch:
        from tests.support.gitrepo import isolate_git

        isolate_git(monkeypatch, tmp_path_factory.mktemp("gitconfig"))
        git(root, "update-index", "-q", "--refresh")
        ralph = Ralph(root)
        tasks = [
            {"id": "t-b0", "name": "Base zero"},
            {"id": "t-b1", "name": "Base one", "deps": ["t-b0"]},
            {"id": "t-b2", "name": "Base two"},
            {"id": "t-b3", "name": "Base three", "priority": "low"},
        ]
        ralph("task", "add", json.dumps(tasks))
        ralph("task", "done", "t-b2")
        ralph("task", "done", "t-b3")
        ralph("issue", "add", "Is the base sound?")
        set_config(root, "max_attempts", 3)
        git(root, "commit", "-qam", "config by hand")
    return root


@pytest.fixture(scope="session")
def _scratch_repo(_base_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("merge-scratch") / "repo"
    shutil.copytree(_base_repo, root, symlinks=True)
    return root


def set_config(root: Path, field: str, value: object) -> None:
    """A person's edit of the config record (no command changes it): that one line rewritten, or
    appended."""
    plan = root / "plan.jsonl"
    lines = plan.read_text().splitlines(keepends=True)
    for number, line in enumerate(lines):
        if line.strip() and json.loads(line)["t"] == "config":
            lines[number] = json.dumps({**json.loads(line), field: value}) + "\n"
            break
    else:
        lines.append(json.dumps({"t": "config", field: value}) + "\n")
    plan.write_text("".join(lines))


def run(root: Path, operations: list[tuple[str, int, int]], side: str) -> list:
    """Apply the operations with real commands; return the ones that did something (a refused
    command, exit 1, changes nothing), in a form another branch can replay: an added issue's
    command ends with the id it got."""
    ralph = Ralph(root)
    done = []
    for op, i, j in operations:
        if op == "resolve":
            records = load((root / "plan.jsonl").read_bytes()).records()
            issues = [line.record["id"] for line in records if line.record["t"] == "issue"]
            command = ["issue", "resolve", issues[i % len(issues)]] if issues else None
        else:
            command = command_for(op, TASKS[i], j, side)
        if command is None:
            continue
        if command[0] == "config":
            set_config(root, command[1], command[2])
            done.append(command)
            continue
        # Uncommitted: the branch gets one commit of the side's plan (a commit per command would
        # triple the time of an example and change nothing git merges).
        result = ralph(*command, "--no-commit", code=None)
        assert result.exit_code in (0, 1), (command, result.exit_code, result.stderr)
        if result.exit_code == 0:
            done.append(command + ([json.loads(result.stdout)["id"]] if op == "issue" else []))
    return done


def command_for(op: str, task_id: str, j: int, side: str) -> list | None:
    if op == "add":
        name = "Same name" if j % 2 else f"Added on {side}"
        deps = [BASE_TASKS[j]] if j >= 2 and BASE_TASKS[j] != task_id else []  # never on itself
        return ["task", "add", json.dumps({"id": task_id, "name": name, "deps": deps})]
    if op == "done":
        return ["task", "done", task_id]
    if op == "accept":
        return ["task", "accept", task_id]
    if op == "reject":
        return ["task", "reject", task_id, "not yet" if j % 2 else f"{side} says no"]
    if op == "prioritize":
        return ["task", "prioritize"]
    if op == "delete":
        return ["task", "delete", task_id, *(["--force"] if j % 2 else [])]
    if op == "issue":
        return ["issue", "add", "--json", "Shared question" if j % 2 else f"A question from {side}"]
    if op == "config":
        return ["config", "max_attempts" if j % 2 else "gate", j + 4 if j % 2 else ["make", side]]
    return None


def replay(root: Path, start: bytes, commands: list) -> bytes:
    """`commands` replayed, uncommitted, on a plan.jsonl that starts as `start`. An issue gets a
    new id when it is added again: the result names it by the id it had on its own branch."""
    (root / "plan.jsonl").write_bytes(start)
    ralph = Ralph(root)
    renamed: dict[str, str] = {}  # the id on its branch -> the id the replay gave it
    for command in commands:
        if command[0] == "config":
            set_config(root, command[1], command[2])
        elif command[:2] == ["issue", "add"]:
            result = ralph(*command[:-1], "--no-commit", code=0)
            renamed[command[-1]] = json.loads(result.stdout)["id"]
        elif command[:2] == ["issue", "resolve"]:
            ralph("issue", "resolve", renamed.get(command[2], command[2]), "--no-commit", code=None)
        else:
            ralph(*command, "--no-commit", code=None)
    data = (root / "plan.jsonl").read_bytes()
    for original, new in renamed.items():
        data = data.replace(new.encode(), original.encode())
    return data


def keyed(data: bytes) -> dict:
    """The plan as records by key (tasks and issues by id, config and state by type) and its facts
    (accept and reject records) as a sorted list: what two versions must agree on to be equal."""
    records, facts = {}, []
    for line in load(data).records():
        record = line.record
        if record["t"] in ("task", "issue"):
            records[record["id"]] = record
        elif record["t"] in ("config", "state"):
            records[record["t"]] = record
        else:
            facts.append(json.dumps(record, sort_keys=True))
    return {"records": records, "facts": sorted(set(facts))}


def touched(base: dict, side: dict) -> set[str]:
    """The keys of the records a side added, changed or removed, and of the tasks its new facts
    (accept, reject records) are about."""
    keys = {
        key
        for key in base["records"].keys() | side["records"].keys()
        if base["records"].get(key) != side["records"].get(key)
    }
    return keys | {json.loads(fact)["id"] for fact in set(side["facts"]) - set(base["facts"])}


def commute(scratch: Path, base: bytes, ours: bytes, theirs: bytes, ours_done: list, theirs_done: list):
    """The records of ours-then-theirs when the two sequences commute, else None. They commute
    when each touches records the other leaves alone (`touched`) and replaying theirs' commands
    after ours' gives what replaying ours' after theirs' gives. (Disjoint records alone is not
    enough: one side deleting a task the other makes a new task depend on touches two records.)"""
    if touched(keyed(base), keyed(ours)) & touched(keyed(base), keyed(theirs)):
        return None
    ours_then_theirs = keyed(replay(scratch, ours, theirs_done))
    theirs_then_ours = keyed(replay(scratch, theirs, ours_done))
    return ours_then_theirs if ours_then_theirs == theirs_then_ours else None


def conflicted_paths(root: Path) -> str:
    return git(root, "diff", "--name-only", "--diff-filter=U")


def check_merge(base_repo: Path, scratch: Path, ours_ops: list, theirs_ops: list) -> str:
    """One example, in a fresh copy of the base repository; `scratch` is a repository for the
    replays (uncommitted: its plan.jsonl is overwritten each time). Returns which case it was."""
    with tempfile.TemporaryDirectory(prefix="ralph-merge-prop-") as folder:
        root = Path(folder) / "repo"
        shutil.copytree(base_repo, root, symlinks=True)
        git(root, "update-index", "-q", "--refresh")
        base = (root / "plan.jsonl").read_bytes()
        git(root, "checkout", "-qb", "theirs")
        theirs_done = run(root, theirs_ops, "theirs")
        git(root, "commit", "-qam", "theirs", "--allow-empty")
        theirs = (root / "plan.jsonl").read_bytes()
        git(root, "checkout", "-q", "main")
        ours_done = run(root, ours_ops, "ours")
        git(root, "commit", "-qam", "ours", "--allow-empty")
        ours = (root / "plan.jsonl").read_bytes()

        merging = subprocess.run(
            ["git", "merge", "--no-edit", "theirs"], cwd=root, capture_output=True, text=True
        )
        merged = (root / "plan.jsonl").read_bytes()
        expected = commute(scratch, base, ours, theirs, ours_done, theirs_done)
        ralph = Ralph(root)
        if expected is not None:
            assert merging.returncode == 0, merging.stdout + merging.stderr
            assert keyed(merged) == expected
            assert ralph("check", code=None).exit_code == 0, merged.decode()
            assert git(root, "status", "--porcelain") == ""
            return "commute"
        rules = merge_bytes(base, ours, theirs)
        if merging.returncode == 0:
            assert not rules.conflicts
            assert merged == rules.data
            assert ralph("check", code=None).exit_code == 0
            assert git(root, "status", "--porcelain") == ""
            return "clean"
        assert rules.conflicts, merging.stdout + merging.stderr
        assert conflicted_paths(root) == "plan.jsonl\n"
        assert_conflict_is_complete(root, merged, base, ours, theirs)
        return "conflict"


def assert_conflict_is_complete(root: Path, merged: bytes, base: bytes, ours: bytes, theirs: bytes) -> None:
    """Markers name each conflicting record, `ralph check` names each marker by line, and every
    record of either side is in the file unless the rules dropped it (accepted on either side, or
    deleted on one side and left as it was on the other)."""
    text = merged.decode()
    lines = text.splitlines()
    openings = [number for number, line in enumerate(lines, 1) if line.startswith("<<<<<<< ours, ")]
    for number in openings:
        closing = next(line for line in lines[number:] if line.startswith(">>>>>>> theirs, "))
        what = closing.removeprefix(">>>>>>> theirs, ")
        assert what in lines[number - 1], (lines[number - 1], closing)
        key = what.split()[-1]
        between = lines[number : lines.index(closing, number)]
        assert any(key in line for line in between if line != "=======") or what.startswith("the "), between
    check = Ralph(root)("check", code=None)
    assert check.exit_code == 2
    for number in openings:
        assert f"plan.jsonl:{number}: unresolved git merge conflict marker" in check.stderr, check.stderr
    base_records = keyed(base)["records"]
    sides = [keyed(side) for side in (ours, theirs)]
    accepted = {json.loads(fact)["id"] for side in sides for fact in side["facts"] if '"accept"' in fact}
    for this, other in (sides, sides[::-1]):
        for key, record in this["records"].items():
            if key in accepted or key in ("config", "state"):
                continue
            base_record = base_records.get(key)
            deleted_there = key not in other["records"] and (
                base_record == record or (base_record is not None and only_automatic(base_record, record))
            )
            assert f'"id": "{key}"' in text or deleted_there, (key, text)
        for fact in this["facts"]:
            record = json.loads(fact)
            assert f'"id": "{record["id"]}"' in text and record["t"] in text, (fact, text)


FUNCTION_FIXTURES = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@settings(FUNCTION_FIXTURES, max_examples=5)
@given(ours_ops=OPERATIONS, theirs_ops=OPERATIONS)
# Found by the long run: a base task deleted, then a new task with its id added depending on it.
@example(ours_ops=[], theirs_ops=[("delete", 2, 0), ("add", 2, 2)])
def test_random_command_histories_merge_by_the_rules(_base_repo, _scratch_repo, ours_ops, theirs_ops):
    event(check_merge(_base_repo, _scratch_repo, ours_ops, theirs_ops))


@pytest.mark.slow
@settings(FUNCTION_FIXTURES, max_examples=300)
@given(ours_ops=OPERATIONS, theirs_ops=OPERATIONS)
def test_random_command_histories_merge_by_the_rules_long_run(
    _base_repo, _scratch_repo, ours_ops, theirs_ops
):
    event(check_merge(_base_repo, _scratch_repo, ours_ops, theirs_ops))
