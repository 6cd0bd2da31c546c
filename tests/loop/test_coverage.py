"""Coverage: a real construct run builds a task with a scope; the final report, `ralph log --task`
(text and --json) and the HTML report each put its scope beside the files its build changed
(planned and touched, planned and untouched, touched and unplanned), per task and in total."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralph.usecases import tasks
from tests.support.cli import ralph_in_process
from tests.support.construct import construct
from tests.support.reports import scope_section_at


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_the_report_puts_a_scoped_tasks_scope_beside_the_files_its_build_changed (the loop's
# builds, the final report's lines) and cli/test_log.py:
# test_log_and_report_put_a_scoped_tasks_scope_beside_the_files_its_build_changed (`ralph log
# --task`, text and --json, and the HTML report from the committed plan)
@pytest.mark.slow
def test_each_report_puts_a_scoped_tasks_scope_beside_the_files_its_build_changed(project: Path):
    scoped, free = (
        task["id"]
        for task in tasks.add(
            project,
            [
                {"name": "Scoped", "accept": "ok", "scope": ["work/**", "docs/"]},
                {"name": "Free", "accept": "ok"},  # no scope: nothing to compare
            ],
        )
    )

    done = construct(project)

    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    at = scope_section_at(lines, scoped)
    assert free not in lines[at + 2]

    told = ralph_in_process(project, "log", "--task", scoped)
    assert told.returncode == 0, told.stderr
    assert told.stdout.splitlines()[-4:] == [
        "  scope: work/**, docs/",
        f"    planned and touched: work/{scoped}.txt",
        "    planned and untouched: docs/",
        "    touched and unplanned: -",
    ]
    story = json.loads(ralph_in_process(project, "log", "--task", scoped, "--json").stdout.splitlines()[-1])
    assert story["coverage"] == {
        "scope": ["work/**", "docs/"],
        "touched": [f"work/{scoped}.txt"],
        "untouched": ["docs/"],
        "unplanned": [],
    }
    assert "coverage" not in json.loads(
        ralph_in_process(project, "log", "--task", free, "--json").stdout.splitlines()[-1]
    )

    page = ralph_in_process(project, "report").stdout
    section = page.split("<h2>Scope and files</h2>", 1)[1]
    assert (
        f'<td data-label="task">{scoped}</td><td data-label="scope">work/**, docs/</td>'
        f'<td data-label="planned and touched">work/{scoped}.txt</td>'
        '<td data-label="planned and untouched">docs/</td><td data-label="touched and unplanned">-</td>'
    ) in section
    assert '<th data-label="task">in all (1 tasks)</th>' in section and free not in section
