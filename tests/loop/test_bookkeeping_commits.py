"""The loop's bookkeeping commits: a run from a spec makes one commit per unit of work (its start,
the plan with its priorities, each build, each VERIFY batch, its end), not one more for the
priorities the plan gets."""

from __future__ import annotations

import json

import pytest

from tests.support.construct import construct, subjects
from tests.support.gitrepo import git


@pytest.mark.slow
def test_a_planned_run_commits_the_plan_with_its_priorities_in_one_commit(project):
    before = len(subjects(project))
    done = construct(project)
    assert done.returncode == 0, done.stdout + done.stderr
    run = subjects(project)[: len(subjects(project)) - before]
    assert not [s for s in run if s.startswith("ralph: task prioritize")], run
    (plan_subject,) = [s for s in run if s.startswith("ralph(plan): ")]
    assert plan_subject.startswith("ralph(plan): specs/app.md: 3 tasks (") and plan_subject.endswith(" low)")
    kinds = [s.split(":")[0].split(" ")[0] for s in reversed(run)]
    assert kinds == ["ralph", "ralph(plan)", *["ralph(build)"] * 3, *kinds[5:-1], "ralph"]
    assert len(run) <= 8  # start, plan, 3 builds, VERIFY (one batch per chained task), end
    planned = git(project, "show", f"HEAD~{len(run) - 2}:plan.jsonl")
    tasks = [json.loads(line) for line in planned.splitlines() if '"t": "task"' in line]
    assert len(tasks) == 3 and all(task.get("priority") for task in tasks)
