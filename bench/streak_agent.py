"""The scripted agent of bench_bad_streak.py. Every run ends with a Claude Code stream-json `result`
event reporting $0.50 (BENCH_RUN_COST_USD), as a paid agent would.

BUILD appends a line to work/<task id without t->.py (a build always changes its file): "hopeless"
for a task of the hopeless family (ids starting t-hopeless), which the bench's gate reports
failing, naming the file; "ok" for the others. VERIFY accepts its task, or, when BENCH_REJECT is
set, rejects it with that reason every time. DECOMPOSE splits a task into two parts named after it
(t-hopeless -> t-hopeless-1, t-hopeless-2) and deletes it. INVESTIGATE resolves its issue; CHECK
finds nothing missing."""

import json
import os
import shlex
import subprocess
import sys

ralph = shlex.split(os.environ["RALPH_BIN"])
stage = os.environ["RALPH_STAGE"]
task = os.environ.get("RALPH_TASK_ID", "")


def call(*args: str) -> None:
    subprocess.run([*ralph, *args], check=True, capture_output=True)


def build() -> None:
    os.makedirs("work", exist_ok=True)
    said = "hopeless" if task.startswith("t-hopeless") else "ok"
    with open(os.path.join("work", task.removeprefix("t-") + ".py"), "a") as out:
        out.write(f"answer = None  # {said}\n")
    call("task", "done", task)


def decompose() -> None:
    parts = [{"id": f"{task}-{n}", "name": f"Part {n} of {task}", "parent": task} for n in (1, 2)]
    call("task", "add", json.dumps(parts))
    call("task", "delete", task)


if stage == "BUILD":
    build()
elif stage == "VERIFY" and os.environ.get("BENCH_REJECT"):
    call("task", "reject", task, os.environ["BENCH_REJECT"])
elif stage == "VERIFY":
    call("task", "accept", task)
elif stage == "DECOMPOSE":
    decompose()
elif stage == "INVESTIGATE":
    call("issue", "resolve", os.environ["RALPH_ISSUE_ID"], "--note", "not this bench's")
cost = float(os.environ.get("BENCH_RUN_COST_USD", "0.5"))
usage = {"input_tokens": 1000, "output_tokens": 100}
result = {"type": "result", "subtype": "success", "is_error": False, "total_cost_usd": cost, "usage": usage}
print(json.dumps({**result, "result": f"{stage} done"}), flush=True)
sys.exit(0)
