"""The question commands as functions (ralph/usecases/questions.py): an agent's question blocks its task
until a person answers; who asked is told by the run. The loop's side is in
tests/loop/test_questions.py, what people read in the questions golden."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralph.errors import InvalidInput
from ralph.usecases import questions, tasks
from tests.support.gitrepo import git, said
from tests.support.present import present


def message(root: Path) -> str:
    return said(root)


def test_who_asks_is_the_agent_of_a_run_with_its_log_or_a_person():
    env = {
        "RALPH_STAGE": "BUILD",
        "RALPH_ITERATION": "2",
        "RALPH_PROMPT_FILE": "/r/build/ralph-logs/ralph-20261120-090000-build-t-a.prompt.md",
    }
    assert (
        questions.who_asks(env)
        == "BUILD agent, iteration 2, log build/ralph-logs/ralph-20261120-090000-build-t-a.log"
    )
    assert questions.who_asks({"RALPH_STAGE": "VERIFY"}) == "VERIFY agent, iteration ?"
    assert questions.who_asks({"USER": "ana"}) == "ana (not in a construct run)"
    assert questions.who_asks({}) == "a person (not in a construct run)"


def test_a_question_blocks_its_task_until_answered_each_in_a_commit(repo):
    (task,) = tasks.add(repo, [{"name": "Store sessions"}])
    question = questions.ask(repo, "Cookie or token?", task["id"], "BUILD agent, iteration 1")
    assert question["id"].startswith("i-") and question["task"] == task["id"]
    assert question["asked_by"] == "BUILD agent, iteration 1" and question["asked_at"].endswith("+00:00")
    assert (
        message(repo) == f"ralph: ask {question['id']} Cookie or token?\n\nblocks {task['id']} until answered"
    )
    assert [q["id"] for q in questions.open_questions(repo)] == [question["id"]]
    answered, freed = questions.answer(repo, question["id"], "a cookie")
    unblocked = present(freed)
    assert (
        answered["id"] == question["id"] and unblocked["id"] == task["id"] and unblocked.get("s", "p") == "p"
    )
    assert message(repo) == f"ralph: answer {question['id']} Cookie or token?; {task['id']} unblocked"
    assert questions.open_questions(repo) == []


def test_a_question_must_name_the_task_it_blocks(repo):
    head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(InvalidInput, match="name the task the question blocks"):
        questions.ask(repo, "Which database?", None, "ana")
    assert git(repo, "rev-parse", "HEAD") == head
