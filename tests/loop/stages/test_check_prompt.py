"""What a spec check's prompt says of the accepted tasks (ralph/loop/stages/check.py prompt_values):
the last ones of its spec, read from a plan whose long history is not decoded for it."""

from __future__ import annotations

from ralph.loop.stages.check import LISTED_ACCEPTED, prompt_values
from ralph.plan.loader import load
from ralph.plan.plan import Plan


def accepted(n: int, spec: str | None) -> bytes:
    served = f', "spec": "{spec}"' if spec else ""
    return f'{{"t": "accept", "id": "t-acc{n:04d}", "name": "Task {n}"{served}}}\n'.encode()


def test_the_prompt_names_the_last_accepted_tasks_of_the_spec_and_how_many_there_are():
    lines = [accepted(n, ("specs/a.md", "specs/b.md", None)[n % 3]) for n in range(400)]
    plan = Plan(load(b"".join(lines), trusted=True))
    text = str(prompt_values(plan, plan.spec_view("specs/a.md"), 5)["accepted"])
    ours = [n for n in range(400) if n % 3 != 1]  # its own and those of no spec
    listed = [line for line in text.splitlines() if line.startswith("- t-acc")]
    assert listed == [f"- t-acc{n:04d} Task {n}" for n in ours[-LISTED_ACCEPTED:]]
    assert f"(the last {LISTED_ACCEPTED} of {len(ours)})" in text


def test_a_spec_with_few_accepted_tasks_lists_them_all_without_a_count():
    plan = Plan(load(accepted(1, "specs/a.md") + accepted(2, "specs/b.md"), trusted=True))
    text = str(prompt_values(plan, plan.spec_view("specs/a.md"), 5)["accepted"])
    assert "- t-acc0001 Task 1" in text
    assert "t-acc0002" not in text
    assert "(the last" not in text
