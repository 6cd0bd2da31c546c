"""Plans whose dependency chains are longer than Python's recursion limit still work: the commands run
in this process, whose stack the test runner has already deepened (a process of their own starts
with less of it used)."""

from __future__ import annotations

import json

from tests.support.cli import ralph_in_process
from tests.support.gitrepo import git


def test_a_chain_of_a_thousand_done_tasks(repo):
    lines = [
        {"t": "task", "id": f"t-c{n:04d}", "name": f"link {n}", "s": "d"}
        | ({"deps": [f"t-c{n - 1:04d}"]} if n else {})
        for n in range(1000)
    ]
    lines.append({"t": "task", "id": "t-last00", "name": "the end", "deps": ["t-c0999"]})
    (repo / "plan.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    git(repo, "commit", "-qam", "a long chain")
    nxt = ralph_in_process(repo, "query", "next")
    assert nxt.returncode == 0, nxt.stderr
    assert json.loads(nxt.stdout)["id"] == "t-last00"
    status = ralph_in_process(repo, "status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["done"] == 1000
    assert ralph_in_process(repo, "task", "done", "t-last00").returncode == 0
    assert ralph_in_process(repo, "task", "prioritize").returncode == 0
