"""What the task and query commands share: a task id's form and the status filter options.
Here, not in ralph.cli.state: `ralph task done` need not load the other state commands."""

from __future__ import annotations

import re

from ralph.errors import InvalidInput
from ralph.plan.records import Status

TASK_ID = re.compile(r"t-[0-9a-z][0-9a-z_-]{0,39}")


def status_filter(pending: bool, done: bool, blocked: bool) -> Status | None:
    chosen = [status for status, wanted in zip(Status, (pending, done, blocked), strict=True) if wanted]
    if len(chosen) > 1:
        raise InvalidInput("choose one of --pending, --done, --blocked")
    return chosen[0] if chosen else None
