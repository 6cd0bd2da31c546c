"""The stages ask their coordinator which items are theirs, through one code path for a run alone
and for runners sharing a remote; and each stage's `jobs` is what both the run and --dry-run take
their items from. The remote kind itself: test_many_machines.py."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from ralph.loop.share.coordinator import Solo
from tests.support.construct import add_tasks, construct, events, plan_records


class OnlyFirstIssue(Solo):
    """A coordinator that hands this run the first open issue only (another runner took the rest)
    and records what the stages asked of it."""

    asked: list[str] = []

    def each(self, stage, found, fresh, items):
        if stage != "INVESTIGATE":
            return iter(found)
        OnlyFirstIssue.asked.append(f"issues {[job.item for job in found]}")
        return iter(found[:1])

    def next_items(self, ready):
        batch = ready()
        OnlyFirstIssue.asked.append(f"next_items {batch}")
        return batch

    def finished(self, task_ids, max_attempts):
        OnlyFirstIssue.asked.append(f"finished {task_ids}")
        return {}

    def batches(self, limit):
        OnlyFirstIssue.asked.append(f"batches {limit}")
        yield None

    def release(self, quietly=False):
        OnlyFirstIssue.asked.append("release")


# `make test` has it in process, in test_stages_in_process.py:
# test_the_stages_take_only_the_items_their_coordinator_hands_out
@pytest.mark.slow
def test_the_stages_take_only_the_items_their_coordinator_hands_out(project, monkeypatch):
    from ralph.usecases import issues

    monkeypatch.setattr("ralph.loop.stages.workspace.Solo", OnlyFirstIssue)
    OnlyFirstIssue.asked = []
    add_tasks(project, "Existing work")
    first = issues.add(project, "The report prints nothing for empty input")["id"]
    other = issues.add(project, "Another runner investigates this one")["id"]

    done = construct(project, "--max-iterations", "1", "--parallel", "1")

    investigated = [
        e["item"] for e in events(project) if e["event"] == "agent_begin" and e["stage"] == "INVESTIGATE"
    ]
    assert investigated == [first], done.stdout + done.stderr
    open_issues = [r["id"] for r in plan_records(project) if r["t"] == "issue" and not r.get("resolved")]
    assert other in open_issues and first not in open_issues
    asked = OnlyFirstIssue.asked
    assert asked[0] == f"issues {[first, other]}"
    assert any(line.startswith("next_items ['t-") for line in asked)
    assert any(line.startswith("finished ['t-") for line in asked)
    assert "batches 1" in asked
    assert asked[-1] == "release"  # the run gives back what it holds, whatever ended it


def test_the_dry_run_lists_exactly_the_jobs_the_stages_would_start(project):
    from ralph.loop import dryrun
    from ralph.loop.stages import build as stage_build
    from ralph.loop.stages import investigate as stage_investigate
    from ralph.store.reader import read_plan
    from ralph.usecases import issues
    from ralph.usecases.settings import DEFAULTS

    first, second = add_tasks(project, "First", "Second", chain=True)
    issue = issues.add(project, "Look into the report")["id"]
    kept = issues.add(project, "A person keeps this one open")["id"]
    lines = (project / "plan.jsonl").read_text().splitlines()
    lines = [
        json.dumps({**json.loads(line), "keep_open": "a person's"}) if f'"{kept}"' in line else line
        for line in lines
    ]
    (project / "plan.jsonl").write_text("\n".join(lines) + "\n")
    settings = replace(DEFAULTS, spec="specs/app.md", gate=("true",), agent="command", agent_cmd="true")
    plan = read_plan(project)

    assert [job.item for job in stage_investigate.jobs(plan, settings)] == [issue]
    builds = stage_build.jobs(plan, settings)
    assert [job.item for job in builds] == [first]  # Second waits for First
    assert builds[0].gate == ["true"] and builds[0].values["task_id"] == first
    preview = dryrun.preview(project, settings)
    assert [(run.stage, run.item) for run in preview.runs] == [
        ("INVESTIGATE", issue),
        ("BUILD", first),
    ]
    assert second not in {run.item for run in preview.runs}
