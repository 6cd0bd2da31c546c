"""Questions through the real loop: a BUILD agent that needs a person's decision asks (`ralph ask`)
instead of guessing; its task and what depends on it wait while the rest is built; the run ends
WAITING with the questions first; an answer unblocks the task, whose next prompt carries it.
Scripted agents through the real CLI, real git."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.construct import (
    assert_clean,
    construct,
    events,
    in_process,
    plan_records,
    subjects,
)
from tests.support.gitrepo import git

# BUILD asks when its task's name says [ask] and its prompt holds no answer yet; [ask-other] asks
# about another task, which BUILD may not do. Every prompt is kept in $SEEN.
AGENT = """import json, os, pathlib, sys
sys.path.insert(0, os.environ["AGENT_KIT_DIR"]); from agent_kit import ralph
stage = os.environ["RALPH_STAGE"]
item = os.environ.get("RALPH_TASK_ID") or os.environ.get("RALPH_ISSUE_ID")
prompt = pathlib.Path(os.environ["RALPH_PROMPT_FILE"]).read_text()
seen = pathlib.Path(os.environ["SEEN"])
with open(seen / f"{stage}-{item}.txt", "a") as out:
    out.write(prompt + "\\n=====\\n")
first = prompt.splitlines()[0]
if stage == "BUILD":
    pathlib.Path("work").mkdir(exist_ok=True)
    pathlib.Path(f"work/{item}.txt").write_text("ok")
    if "[ask-other]" in first:
        ralph("ask", "May I?", "--task", "t-other")
    elif "[ask]" in first and "a person's answers" not in prompt:
        ralph("ask", "Blue or green? The spec does not say.")
    elif "[split]" in first:  # too big once answered: the gate fails until DECOMPOSE splits it
        pathlib.Path(f"work/{item}.txt").write_text("FAIL")
    else:
        ralph("task", "done")
elif stage == "VERIFY":
    ralph("task", "accept")
elif stage == "DECOMPOSE":
    for part in (1, 2):
        ralph("task", "add", json.dumps({"name": f"Part {part}", "parent": item}))
"""


@pytest.fixture
def project(app_repo: Callable[[str], Path]) -> Path:
    return app_repo("# App\n\n- Colour it\n- Other work\n")


def run(project: Path, tmp_path: Path, *flags: str):
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    seen = tmp_path / "seen"
    seen.mkdir(exist_ok=True)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    return construct(project, *flags, agent=command, env={"SEEN": str(seen)})


def add(root: Path, *tasks: dict) -> None:
    from ralph.usecases import tasks as ops

    ops.add(root, [{"accept": "work file says ok", **task} for task in tasks])


def state_command(root: Path, *args: str):
    return in_process(["-C", str(root), *args], dict(os.environ))


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_a_question_blocks_its_task_and_dependents_the_rest_completes_then_waiting
# (the WAITING report: tests/cli/golden/reports/waiting.txt; ask, answer, questions: questions.yml)
@pytest.mark.slow
def test_a_question_blocks_its_task_and_dependents_the_rest_completes_then_waiting(project, tmp_path):
    add(
        project,
        {"id": "t-colour", "name": "Colour [ask]"},
        {"id": "t-other", "name": "Other work"},
        {"id": "t-after", "name": "After the colour", "deps": ["t-colour"]},
    )
    done = run(project, tmp_path)
    assert done.returncode == 9, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("ralph: WAITING: what is left waits for 1 answer:")
    assert lines[1].startswith("questions waiting for an answer (1")  # the questions come first
    assert "on t-colour: Blue or green? The spec does not say. (asked 20" in lines[2]
    assert "by BUILD agent, iteration 1, log build/ralph-logs/ralph-" in lines[2]
    assert lines[-1].startswith(
        "to resume: answer the questions above, then ralph construct specs/app.md --agent"
    )

    records = {r["id"]: r for r in plan_records(project) if r["t"] in ("task", "issue")}
    (question,) = [r for r in records.values() if r.get("kind") == "question"]
    assert "t-other" in {r["id"] for r in plan_records(project) if r["t"] == "accept"}
    assert records["t-colour"]["s"] == "b" and question["id"] in records["t-colour"]["blocked_reason"]
    assert records["t-colour"].get("attempts") is None  # asking is no failed attempt
    assert records["t-after"].get("s", "p") == "p"
    # the asking run's changes were set aside, not committed with another task's build
    assert not (project / "work" / "t-colour.txt").exists()
    assert any(e["event"] == "changes_set_aside" for e in events(project))
    assert f"ralph(build): t-colour waits for an answer to {question['id']}" in subjects(project)
    assert not list((tmp_path / "seen").glob("INVESTIGATE-*"))  # a question is not an issue
    assert not (tmp_path / "seen" / "BUILD-t-after.txt").exists()
    assert_clean(project)
    listed = state_command(project, "questions")
    assert listed.stdout.splitlines()[0].startswith(f"{question['id']}  task t-colour  since 20")

    answered = state_command(project, "answer", question["id"], "Green, like the logo.")
    assert answered.returncode == 0 and "t-colour is unblocked" in answered.stdout
    assert git(project, "log", "-1", "--format=%s").startswith(f"ralph: answer {question['id']}")
    again = run(project, tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    prompts = (tmp_path / "seen" / "BUILD-t-colour.txt").read_text().split("\n=====\n")
    assert "Green, like the logo." not in prompts[0]
    assert (
        "Q (" + question["id"] + "): Blue or green? The spec does not say.\nA: Green, like the logo."
        in prompts[1]
    )
    assert not [r for r in plan_records(project) if r["t"] == "issue"]  # accepted: its answers went with it
    assert_clean(project)


def test_build_may_not_ask_about_another_task(project, tmp_path):
    add(
        project,
        {"id": "t-nosy", "name": "Nosy [ask-other]"},
        {"id": "t-other", "name": "Other", "deps": ["t-nosy"]},
    )
    done = run(project, tmp_path, "--max-iterations", "1", "--max-attempts", "1")
    violations = [e for e in events(project) if e["event"] == "permission_violation"]
    assert any("about t-other in BUILD" in json.dumps(e) for e in violations), (done.stdout, violations)
    assert not [r for r in plan_records(project) if r.get("kind") == "question"]


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_subtasks_of_a_decomposed_task_carry_its_answered_questions
@pytest.mark.slow
def test_subtasks_of_a_decomposed_task_carry_its_answered_questions(project, tmp_path):
    add(project, {"id": "t-colour", "name": "Colour [ask][split]"})
    assert run(project, tmp_path).returncode == 9
    (question,) = [r for r in plan_records(project) if r.get("kind") == "question"]
    state_command(project, "answer", question["id"], "Green, like the logo.")

    done = run(project, tmp_path, "--max-attempts", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    (split,) = [s for s in subjects(project) if s.startswith("ralph(decompose): t-colour -> ")]
    parts = split.split(" -> ")[1].split(", ")
    answer = "Q (" + question["id"] + "): Blue or green? The spec does not say.\nA: Green, like the logo."
    assert answer in (tmp_path / "seen" / "DECOMPOSE-t-colour.txt").read_text()
    for part in parts:  # each part's BUILD prompt carries the parent's question and its answer
        assert answer in (tmp_path / "seen" / f"BUILD-{part}.txt").read_text()
    # while a part was open the answered question stayed; once all are accepted it went with them
    decomposed = git(project, "log", "--format=%H", "-1", "--grep", "ralph(decompose)", "--fixed-strings")
    then = {r.get("id"): r for r in plan_records(project, decomposed.strip())}
    assert question["id"] in then and all(then[part]["questions"] == [question["id"]] for part in parts)
    assert not [r for r in plan_records(project) if r["t"] == "issue"]
    assert_clean(project)


def test_a_parallel_builds_question_commit_is_not_recorded_as_its_build(project, tmp_path):
    """With --parallel the question is committed on the build's branch and merged like a build:
    its copy was recorded as the task's build `commit` (and journalled as its build merged),
    which a later VERIFY or DECOMPOSE would read as the task's built work."""
    add(project, {"id": "t-colour", "name": "Colour [ask]"}, {"id": "t-other", "name": "Other work"})
    done = run(project, tmp_path, "--parallel", "2")
    assert done.returncode == 9, done.stdout + done.stderr
    asked = [s for s in subjects(project) if s.startswith("ralph(build): t-colour waits for an answer")]
    assert len(asked) == 1  # the question was committed and merged
    colour = next(r for r in plan_records(project) if r.get("id") == "t-colour")
    assert colour["s"] == "b" and "commit" not in colour
    merged = {e["item"] for e in events(project) if e["event"] == "build_merged"}
    assert merged == {"t-other"}


# BUILD writes work/<its name as a file name>.txt: "FAIL" for a [hopeless] task, which the gate
# (check_work.py) then names, "ok" for the others; DECOMPOSE makes two parts that keep the marker.
FAMILY_AGENT = """import json, os, pathlib, re, sys
sys.path.insert(0, os.environ["AGENT_KIT_DIR"]); from agent_kit import ralph
stage, item = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID")
name = json.loads(ralph("task", "show", item))["name"] if item else ""
if stage == "BUILD":
    pathlib.Path("work").mkdir(exist_ok=True)
    own = re.sub(r"[^a-z0-9]+", "-", name.split(" [")[0].lower()).strip("-")
    pathlib.Path("work", own + ".txt").write_text("FAIL" if "[hopeless]" in name else "ok")
    ralph("task", "done", item)
elif stage == "VERIFY":
    ralph("task", "accept", item)
elif stage == "DECOMPOSE":
    parts = [{"name": f"{name.split(' [')[0]} part {n} [hopeless]", "parent": item} for n in ("one", "two")]
    ralph("task", "add", json.dumps(parts))
    ralph("task", "delete", item)
"""


@pytest.mark.slow
def test_parts_built_side_by_side_that_fail_as_their_parent_ask_one_question_and_status_says_what_waits(
    project, tmp_path
):
    """At the default --parallel, the two parts of a task whose failure survives its split are built
    side by side and both fail as it did: one question for the family, with both failures, no
    second split, the other work accepted, and `ralph status` names each part and what it waits for."""
    add(project, {"id": "t-hopeless", "name": "Hopeless [hopeless]"}, {"id": "t-good", "name": "Good"})
    agent = tmp_path / "family_agent.py"
    agent.write_text(FAMILY_AGENT)

    done = construct(project, agent=f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}")

    assert done.returncode == 9, done.stdout + done.stderr  # WAITING
    records = plan_records(project)
    (question,) = [r for r in records if r.get("kind") == "question"]
    parts = [r for r in records if r["t"] == "task"]
    assert question["family"] == "t-hopeless" and len(parts) == 2
    assert all(part["family"] == "t-hopeless" and part["blocked_by"] == question["id"] for part in parts)
    assert "FAILED: hopeless.txt" in question["text"] and "FAILED: hopeless-part-" in question["text"]
    assert [r["id"] for r in records if r["t"] == "accept"] == ["t-good"]
    decomposed = [
        e["item"] for e in events(project) if e["event"] == "agent_begin" and e["stage"] == "DECOMPOSE"
    ]
    assert decomposed == ["t-hopeless"]  # its parts were not split again
    shown = state_command(project, "status").stdout.splitlines()
    assert shown[1].startswith("stage WAITING") and "2 blocked" in shown[2]
    waiting = shown[shown.index("waiting for a person:") + 1 :][:2]
    (other,) = [part["id"] for part in parts if part["id"] != question["task"]]
    assert {line.split(question["id"])[0] for line in waiting} == {
        f"  {question['task']}: waiting for the answer to question ",
        f"  {other}: waits with its family (t-hopeless) for the answer to question ",
    }
    assert_clean(project)
