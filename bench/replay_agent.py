"""The scripted agent of bench_replay.py: BUILD applies its task's commit as a patch and says
done, VERIFY accepts, DECOMPOSE hands the same patch to a subtask. The task's id says which
commit it is (t-replay07; t-replay07-d after a decomposition, with t-replay07-d-check);
BENCH_REPLAY holds each commit's subject as JSON ({"07": "subject"}), and BENCH_REPLAY_PATCHES
the folder of their patches (07.patch), outside the private /tmp ralph's sandbox gives agents."""

import json
import os
import re
import shlex
import subprocess
import sys

ralph = shlex.split(os.environ["RALPH_BIN"])
stage = os.environ["RALPH_STAGE"]
subjects = json.loads(os.environ["BENCH_REPLAY"])
patches = os.environ["BENCH_REPLAY_PATCHES"]


def commit_number(task_id: str) -> str:
    found = re.match(r"t-replay(\d+)", task_id)
    assert found, task_id
    return found.group(1)


def git_apply(patch: str, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "apply", *flags, "-"], input=patch, capture_output=True, text=True, check=False
    )


def report_error(text: str) -> None:
    """As Claude Code's stream-json tells of a run that worked, then ended in an error."""
    call = {"type": "tool_use", "name": "Bash", "input": {"command": "git apply"}}
    print(json.dumps({"type": "assistant", "message": {"content": [call]}}), flush=True)
    event = {"type": "result", "subtype": "error_during_execution", "is_error": True, "result": text}
    print(json.dumps(event), flush=True)


def build(task_id: str) -> int:
    if task_id.endswith("-check"):  # the second half of a decomposition: nothing to change
        subprocess.run([*ralph, "task", "done"], check=True, capture_output=True)
        return 0
    number = commit_number(task_id)
    with open(os.path.join(patches, f"{number}.patch"), encoding="utf-8") as file:
        patch = file.read()
    # A retry runs with the failed attempt's changes still in place: then the patch is applied
    # already (asked only when applying fails, so that the usual build runs git once, as the floor).
    applied = git_apply(patch)
    if applied.returncode != 0 and git_apply(patch, "--reverse", "--check").returncode != 0:
        # Said as Claude Code's stream-json says a run that ended in an error: a result with
        # is_error, then a non-zero exit. The change needs an earlier one: not this task's yet.
        said = f"git apply of commit {number} failed: {applied.stderr.strip()}"
        report_error(said)
        return 1
    subprocess.run([*ralph, "task", "done"], check=True, capture_output=True)
    return 0


def decompose(task_id: str) -> int:
    """A commit is not split: one subtask applies the same patch, and, since a decomposition
    needs at least two, a second one that changes nothing follows it."""
    subject = subjects[commit_number(task_id)]
    again = {"id": f"{task_id}-d", "name": f"{subject} (again)", "parent": task_id}
    check = {
        "id": f"{task_id}-d-check",
        "name": f"{subject} (confirm it is in)",
        "parent": task_id,
        "deps": [again["id"]],
        "no_code": True,
    }
    subprocess.run([*ralph, "task", "add", json.dumps([again, check])], check=True, capture_output=True)
    subprocess.run([*ralph, "task", "delete", task_id], check=True, capture_output=True)
    return 0


if stage == "BUILD":
    sys.exit(build(os.environ["RALPH_TASK_ID"]))
elif stage == "VERIFY":
    subprocess.run([*ralph, "task", "accept"], check=True, capture_output=True)
elif stage == "DECOMPOSE":
    sys.exit(decompose(os.environ["RALPH_TASK_ID"]))
elif stage in ("CHECK", "REVIEW"):  # the replay is the whole change: nothing missing, nothing to review
    pass
elif stage == "INVESTIGATE":  # the replay raises no issue; should one appear, it is not this agent's
    subprocess.run([*ralph, "issue", "resolve", os.environ["RALPH_ISSUE_ID"], "--note", "replay"], check=True)
sys.exit(0)
