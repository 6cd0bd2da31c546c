"""ralph.cli.filters: the form of a task id the task commands accept, and the status filters."""

from __future__ import annotations

import pytest

from ralph.cli.filters import TASK_ID, status_filter
from ralph.errors import InvalidInput
from ralph.plan.records import Status


@pytest.mark.parametrize("task_id", ["t-a", "t-0x9", "t-abc_def-1", "t-" + "a" * 40])
def test_task_ids_ralph_makes_and_people_write_match(task_id):
    assert TASK_ID.fullmatch(task_id)


@pytest.mark.parametrize("text", ["t-", "T-abc", "t-Abc", "t--x", "x-abc", "t-" + "a" * 41, "t-a b"])
def test_other_words_are_not_task_ids(text):
    assert not TASK_ID.fullmatch(text)


def test_each_flag_chooses_its_status_and_none_chooses_all():
    assert status_filter(True, False, False) is Status.PENDING
    assert status_filter(False, True, False) is Status.DONE
    assert status_filter(False, False, True) is Status.BLOCKED
    assert status_filter(False, False, False) is None


def test_two_flags_at_once_are_refused():
    with pytest.raises(InvalidInput, match="choose one of --pending, --done, --blocked"):
        status_filter(True, True, False)
