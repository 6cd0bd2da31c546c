"""An agent that fails without doing anything (it crashes at once, exits on a usage error) has not
failed its task: the run is retried after a short wait and spends no attempt; too many such runs
in a row end the loop with AGENT_FAILING (exit 12) and the agent's last error lines."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from ralph.agents.base import RunTracker
from ralph.loop.observe.journal import Journal
from ralph.loop.process.supervisor import RunResult, Supervisor
from ralph.loop.runs.agent_process import AgentResult
from ralph.loop.stages.agent_errors import AgentFailing, AgentFailures, Judgement, error_mark, without_state
from tests.support.construct import (
    add_tasks,
    assert_clean,
    construct,
    events,
    in_process,
    plan_records,
    subjects,
)
from tests.support.gitrepo import git
from tests.support.hooks import config_set
from tests.support.plans import SET_ASIDE_REJECTED_TOO_OFTEN, SET_ASIDE_TIMED_OUT, set_aside_for_decompose


def quick_retries(root: Path) -> None:
    config_set(root, "agent_retry_ms", "10ms")


def test_an_agent_that_crashes_three_times_then_works_spends_no_attempt(project):
    quick_retries(project)
    (task_id,) = add_tasks(project, "Fragile [crash-thrice]")
    done = construct(project)
    assert done.returncode == 0, done.stdout + done.stderr
    failed = [e for e in events(project) if e["event"] == "agent_failed"]
    assert [(e["item"], e["exit_code"], e["in_a_row"], e["judgement"]) for e in failed] == [
        (task_id, -9, n, "wait") for n in (1, 2, 3)
    ]
    waits = re.findall(
        r"the agent failed without doing anything \(killed by SIGKILL\); running it again in (\S+)s",
        done.stderr,
    )
    assert waits == ["0.01", "0.02", "0.04"]  # agent_retry_ms, doubling
    assert not any("attempt" in subject and "failed" in subject for subject in subjects(project))
    assert any(r["t"] == "accept" and r["id"] == task_id for r in plan_records(project))
    build = next(s for s in subjects(project) if s.startswith(f"ralph(build): {task_id}"))
    assert build == f"ralph(build): {task_id} Fragile [crash-thrice]"
    # its one passing build is its only attempt; nothing was decomposed
    assert not any(e["event"] == "task_killed" for e in events(project))
    assert_clean(project)


def test_agent_failures_run_again_count_against_the_token_budget(project):
    """A run that failed before changing anything is run again and costs no attempt; what it
    spent counts all the same: the next run starts only if the budget holds it."""
    quick_retries(project)
    add_tasks(project, "Crashes after spending [costly-crash-thrice]")

    done = construct(project, "--max-tokens", "2500", "--parallel", "1")

    assert done.returncode == 13, done.stdout + done.stderr
    assert done.stdout.startswith("ralph: MAX_TOKENS: the token budget (2,500) would be passed"), done.stdout
    spent = int(done.stdout.split("; tokens: ")[1].split(";")[0].replace(",", ""))
    assert 2000 <= spent <= 2500, done.stdout  # two failed runs: a third would pass it
    assert f"BUILD {spent:,} tokens" in done.stdout  # theirs, counted as any run's
    assert len([e for e in events(project) if e["event"] == "agent_failed"]) == 2


@pytest.mark.slow
def test_a_crash_beside_a_persons_uncommitted_edit_is_still_an_agent_failure(project):
    """The work tree's state before the run is the one the loop's snapshot found, a person's
    changed file included: the same after the crash, so the crash did nothing and spends no attempt."""
    quick_retries(project)
    (task_id,) = add_tasks(project, "Fragile [crash-thrice]")
    (project / "notes.txt").write_text("a person's notes, not committed\n")
    done = construct(project, "--allow-dirty")
    assert done.returncode == 0, done.stdout + done.stderr
    failed = [e for e in events(project) if e["event"] == "agent_failed"]
    assert [(e["item"], e["in_a_row"]) for e in failed] == [(task_id, n) for n in (1, 2, 3)]
    assert not any("attempt" in subject and "failed" in subject for subject in subjects(project))
    assert (project / "notes.txt").read_text() == "a person's notes, not committed\n"


def test_an_agent_that_always_crashes_ends_the_run_with_its_last_error_lines(project):
    quick_retries(project)
    config_set(project, "max_agent_failures", "4")
    ids = add_tasks(project, "Parse input [crash-always]", "Compute result [crash-always]")
    done = construct(project)
    assert done.returncode == 12, done.stdout + done.stderr
    report = done.stdout
    assert report.startswith("ralph: AGENT_FAILING: the agent failed 4 times in a row without doing anything")
    lines = report.split("the agent's last error lines:\n", 1)[1].splitlines()
    assert "  | fake agent: crashing" in lines
    error = next(line for line in lines if "bad flag --frobnicate" in line)
    assert "sk-fake0123456789abcdef" not in error and "[redacted]" in error  # redacted
    assert "\x1b" not in report and "\\x1b[2J" in error  # escaped for the terminal
    tasks = {r["id"]: r for r in plan_records(project) if r["t"] == "task"}
    assert sorted(tasks) == sorted(ids)  # nothing decomposed, nothing set aside
    assert all(task.get("attempts", 0) == 0 and not task.get("kill_reason") for task in tasks.values())
    # Two builds at once: the one whose run failed fourth ends the loop, and the other starts no run
    # after that (one in flight then ends uncounted; the report said "5 times" when the machine was
    # busy, and a fifth run started after the fourth failure).
    journal = events(project)
    failed = [e["in_a_row"] for e in journal if e["event"] == "agent_failed"]
    assert failed == [1, 2, 3, 4]
    fourth = next(n for n, e in enumerate(journal) if e["event"] == "agent_failed" and e["in_a_row"] == 4)
    assert not [e for e in journal[fourth:] if e["event"] == "agent_begin"]
    ended = [e for e in events(project) if e["event"] == "construct_end"]
    assert ended[-1]["outcome"] == "AGENT_FAILING"
    assert_clean(project)


@pytest.mark.slow
def test_a_crash_after_part_of_the_work_is_a_failed_attempt(project):
    quick_retries(project)
    (task_id,) = add_tasks(project, "Halfway [quit-once]")
    done = construct(project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"ralph(build): {task_id} attempt 1 failed" in subjects(project)
    assert not any(e["event"] == "agent_failed" for e in events(project))


# A gate that prints the failing work itself: its output differs from run to run in numbers, ids
# and paths only.
SHOW_WORK = """import pathlib, sys
said = [p.read_text().strip() for p in sorted(pathlib.Path("work").glob("*.txt"))]
bad = [text for text in said if text.startswith("FAIL")]
print("\\n".join(bad) or "all work ok")
sys.exit(1 if bad else 0)
"""


def showing_gate(root: Path) -> str:
    (root / "show_work.py").write_text(SHOW_WORK)
    git(root, "add", "show_work.py")
    git(root, "commit", "-qm", "a gate that shows the work")
    return f"{shlex.quote(sys.executable)} show_work.py"


def builds_of(root: Path, task_id: str) -> int:
    begun = [e for e in events(root) if e["event"] == "agent_begin" and e.get("stage") == "BUILD"]
    return sum(1 for e in begun if e.get("item") == task_id)


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_the_same_failure_twice_sends_the_task_to_decompose_with_both_failures
@pytest.mark.slow
def test_the_same_failure_twice_sends_the_task_to_decompose_with_both_failures(project):
    gate = showing_gate(project)
    (task_id,) = add_tasks(project, "Hard [fails-alike]")
    done = construct(project, "--gate", gate)
    assert done.returncode == 0, done.stdout + done.stderr
    assert builds_of(project, task_id) == 2  # no third identical run (max_attempts is 3)
    killed = [e for e in events(project) if e["event"] == "task_killed"]
    assert [(e["item"], e["kill_reason"]) for e in killed] == [(task_id, "repeated_failure")]
    prompt = next(
        (project / "build" / "ralph-logs").glob(f"ralph-*-decompose-{task_id}.prompt.md")
    ).read_text()
    assert "its last two builds failed the same way" in prompt
    first, second = prompt.split("the first failure", 1)[1].split("the second", 1)
    assert f"FAIL {task_id} attempt 1: no answer in /tmp/fake-" in first
    assert f"FAIL {task_id} attempt 2: no answer in /tmp/fake-" in second
    assert "What VERIFY said" in prompt and "(VERIFY never rejected it)" in prompt
    accepted = sorted(r["name"] for r in plan_records(project) if r["t"] == "accept")
    assert accepted == ["Hard (part 1)", "Hard (part 2)"]
    assert_clean(project)


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_the_same_failure_twice_at_the_depth_limit_asks_a_person
@pytest.mark.slow
def test_the_same_failure_twice_at_the_depth_limit_asks_a_person(project):
    gate = showing_gate(project)
    (task_id,) = add_tasks(project, "Deep [fails-alike]")
    config_set(project, "max_decompose_depth", "1")
    lines = (project / "plan.jsonl").read_text().splitlines()
    deep = [json.dumps({**json.loads(line), "depth": 1}) if task_id in line else line for line in lines]
    (project / "plan.jsonl").write_text("\n".join(deep) + "\n")
    git(project, "commit", "-qam", "the task was decomposed once already")
    done = construct(project, "--gate", gate)
    assert done.returncode == 9, done.stdout + done.stderr  # WAITING for the answer
    assert builds_of(project, task_id) == 2
    (question,) = [r for r in plan_records(project) if r.get("kind") == "question"]
    assert question["task"] == task_id and "failed the same way twice" in question["text"]
    assert f"FAIL {task_id} attempt 1" in question["text"] and f"FAIL {task_id} attempt 2" in question["text"]
    task = next(r for r in plan_records(project) if r.get("id") == task_id)
    assert task["s"] == "b" and task["blocked_by"] == question["id"]
    assert not any(e["event"] == "task_killed" for e in events(project))
    assert_clean(project)


# `make test` has it in process, in test_stages_in_process.py:
# test_decompose_is_told_what_happened_and_only_verifys_words_as_verifys
@pytest.mark.slow
def test_decompose_is_told_what_happened_and_only_verifys_words_as_verifys(project):
    """A kill for time is the loop's, not VERIFY's; a task set aside after rejections quotes what
    VERIFY said, and the loop's own words are not among them."""
    timed_out, rejected_too_often = SET_ASIDE_TIMED_OUT, SET_ASIDE_REJECTED_TOO_OFTEN
    records = set_aside_for_decompose()
    plan = project / "plan.jsonl"
    plan.write_text(plan.read_text() + "".join(json.dumps(record) + "\n" for record in records))
    git(project, "commit", "-qam", "two tasks set aside")
    construct(project, "--max-iterations", "1")
    logs = project / "build" / "ralph-logs"
    slow = next(logs.glob("ralph-*-decompose-t-slow00.prompt.md")).read_text()
    assert f"What happened: ralph killed its build: {timed_out}." in slow
    assert "(VERIFY never rejected it)" in slow and f"- {timed_out}" not in slow
    assert "why ralph set it aside" in slow and "why VERIFY last rejected it" not in slow
    picky = next(logs.glob("ralph-*-decompose-t-picky0.prompt.md")).read_text()
    assert f"What happened: ralph set it aside: {rejected_too_often}." in picky
    assert "It was built 2 times and rejected by VERIFY 2 times." in picky
    said = picky.split("what VERIFY said each time", 1)[1].split("~~~~\n", 1)[0]
    assert said.strip().splitlines()[1:] == ["- the sum is off by one", "- the sum is still off by one"]


# --- fair attempts after a rejection ---------------------------------------------------------


@pytest.mark.slow
def test_a_rejected_task_resubmitted_unchanged_is_judged_once_more_and_accepted(project):
    (task_id,) = add_tasks(project, "Right already [resubmit]")
    done = construct(project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert builds_of(project, task_id) == 2
    # By time: two runs in one second are named <stamp>-verify-<id> and <stamp>-verify-<id>-2.
    logs = (project / "build" / "ralph-logs").glob(f"ralph-*-verify-{task_id}*.prompt.md")
    verifies = sorted(logs, key=lambda path: path.stat().st_mtime_ns)
    assert len(verifies) == 2
    second = verifies[-1].read_text()
    assert "its builder resubmitted the same work unchanged" in second
    assert "the work file already says ok, which is what the criteria ask" in second
    said = subjects(project)
    assert f"ralph(build): {task_id} resubmitted unchanged, with its argument" in said
    assert not any(s.startswith(f"ralph(build): {task_id} attempt") for s in said)  # no no_changes
    assert any(r["t"] == "accept" and r["id"] == task_id for r in plan_records(project))
    rebuild = (project / "build" / "ralph-logs").glob(f"ralph-*-build-{task_id}*.prompt.md")
    prompt = max(rebuild, key=lambda path: path.stat().st_mtime).read_text()
    assert "what the verifiers said, oldest first (VERIFY rejected it 1 time)" in prompt
    assert "1. the fake verifier rejects the first build" in prompt
    assert f"task done {task_id} --unchanged" in prompt
    logged = in_process(["-C", str(project), "log", "--task", task_id], dict(os.environ)).stdout
    assert f"{task_id}  resubmitted: the work file already says ok, which is what the criteria ask" in logged
    assert_clean(project)


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_rebuilds_after_a_rejection_have_their_own_budget
@pytest.mark.slow
def test_rebuilds_after_a_rejection_have_their_own_budget(project):
    """The first build passed and counted as an attempt; VERIFY rejected it; a rebuild then changes
    nothing, the next fails the gate. They spend rebuilds (3 by default), not what is left of
    max_attempts."""
    (task_id,) = add_tasks(project, "Picky [reject-once] [lazy-rebuild]")
    done = construct(project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert builds_of(project, task_id) == 4
    said = subjects(project)
    assert f"ralph(build): {task_id} attempt 3 failed" in said  # max_attempts is 3: a rebuild is not one
    assert not any(e["event"] == "task_killed" for e in events(project))
    assert any(r["t"] == "accept" and r["id"] == task_id for r in plan_records(project))
    failed = git(project, "log", "-1", "--format=%H", f"--grep=^ralph(build): {task_id} attempt 3 failed")
    task = next(r for r in plan_records(project, failed.strip()) if r.get("id") == task_id)
    assert (task["attempts"], task["rebuilds"], task["verdict"]) == (3, 2, "gate_failed")


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_rebuilds_stop_at_max_rebuilds
@pytest.mark.slow
def test_rebuilds_stop_at_max_rebuilds(project):
    config_set(project, "max_rebuilds", "2")
    (task_id,) = add_tasks(project, "Picky [reject-once] [lazy-rebuild]")
    done = construct(project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert builds_of(project, task_id) == 3
    killed = [e for e in events(project) if e["event"] == "task_killed"]
    assert [(e["item"], e["kill_reason"]) for e in killed] == [(task_id, "doom_loop")]


# --- the judgement of one failed run, in process -------------------------------------------------
class Heard(Journal):
    """The journal and the console of AgentFailures: what each was told (a Journal that writes no
    file: its __init__ is not run)."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.said: list[str] = []

    def event(self, event: str, **fields: object) -> dict:
        self.events.append({"event": event, **fields})
        return self.events[-1]


def failures(limit: int = 5) -> tuple[AgentFailures, Heard]:
    heard = Heard()  # a supervisor that started nothing: never stopping
    return AgentFailures(limit, 0.001, heard, heard.said.append, Supervisor(), lambda: None), heard


def failed_run(said: str, exit_code: int = 1, turns: int = 0) -> AgentResult:
    """A run that ended with `exit_code`, its last line `said`; `turns`: the model's turns seen."""
    tracker = RunTracker()
    tracker.turns = turns
    log = Path("build/ralph-logs/ralph-run.log")
    return AgentResult(RunResult(exit_code, None, 0.1, log, [said]), tracker, log)


def test_a_usage_error_before_the_agent_did_anything_ends_the_run_after_two_runs():
    judge, heard = failures()
    usage = "error: unknown option '--frobnicate'"
    assert judge.judge(failed_run(usage, exit_code=2), "PLAN", None) is Judgement.AGAIN
    with pytest.raises(AgentFailing) as failing:
        judge.judge(failed_run(usage, exit_code=2), "PLAN", None)
    assert str(failing.value).startswith(
        "the agent failed the same way twice without doing anything (exit 2)"
    )
    assert usage in failing.value.lines
    assert [e["judgement"] for e in heard.events] == ["again", "agent_failing"]


def test_the_same_error_on_two_tasks_is_the_agents_whatever_the_task_is_called():
    judge, _ = failures()
    judge.good()  # the agent worked before: an error on one task is that task's
    first = failed_run("Error: cannot read t-aaaa1 (Parse input): EACCES", turns=3)
    assert judge.judge(first, "BUILD", "t-aaaa1", ["Parse input"]) is Judgement.TASK_ERROR
    second = failed_run("Error: cannot read t-bbbb2 (Compute result): EACCES", turns=3)
    with pytest.raises(AgentFailing) as failing:
        judge.judge(second, "BUILD", "t-bbbb2", ["Compute result"])
    assert "the same way on BUILD t-aaaa1 and on BUILD t-bbbb2" in str(failing.value)


def test_an_error_on_one_task_of_an_agent_that_works_is_that_tasks_and_ends_no_run():
    judge, _ = failures(limit=2)
    for number in range(1, 6):  # more than the limit: none of them counts against it
        said = f"git apply of commit {number:02d} failed: error: tally/words.py: patch does not apply"
        judged = judge.judge(failed_run(said, turns=2), "BUILD", f"t-replay{number:02d}")
        assert judged is Judgement.TASK_ERROR
    assert judge.in_a_row == 0


def test_an_error_with_no_turn_is_a_tasks_once_an_earlier_run_of_the_construct_did_something():
    judge, _ = failures()
    assert judge.judge(failed_run("cannot apply"), "BUILD", "t-one") is Judgement.AGAIN
    judge.good()
    assert judge.judge(failed_run("cannot apply"), "BUILD", "t-one") is Judgement.TASK_ERROR


def test_an_error_that_is_not_a_builds_is_run_again_once_then_ends_the_run():
    judge, _ = failures()
    judge.good()
    said = "Error: the verifier's tool crashed"
    assert judge.judge(failed_run(said, turns=4), "VERIFY", "t-one") is Judgement.AGAIN
    with pytest.raises(AgentFailing):
        judge.judge(failed_run(said, turns=4), "VERIFY", "t-one")


def test_a_crash_signal_is_waited_out_until_too_many_in_a_row():
    judge, heard = failures(limit=3)
    for _ in range(2):
        crashed = failed_run("Segmentation fault", exit_code=-11)
        assert judge.judge(crashed, "BUILD", "t-one") is Judgement.WAIT
        assert judge.wait(crashed, "BUILD", "t-one", Judgement.WAIT)
    assert "killed by SIGSEGV" in heard.said[0] and "running it again in 0.001s" in heard.said[0]
    with pytest.raises(AgentFailing) as failing:
        judge.judge(failed_run("Segmentation fault", exit_code=139), "BUILD", "t-two")  # 128 + 11
    assert str(failing.value).startswith("the agent failed 3 times in a row")


def test_two_runs_of_one_error_are_one_error_whatever_time_and_ids_they_print():
    one = error_mark(["2026-11-29T01:02:03Z request 0123abcd89ef failed after 1.5s in /tmp/x1"], ["t-a"])
    two = error_mark(["2026-11-30T11:12:13Z request fedc3210aa55 failed after 12s in /tmp/y2"], ["t-b"])
    assert one == two
    assert error_mark(["commit 07 does not apply"], []) != error_mark(["commit 08 does not apply"], [])


def test_a_usage_error_ends_the_run_after_two_runs_without_waiting_or_spending_an_attempt(project):
    """A usage error says the same on every task and changes nothing: not a crash to wait out and
    not the task's fault. The first task waits (another may bring what it lacks); the second says
    the same, and the run ends AGENT_FAILING after those two runs, with its lines."""
    config_set(project, "agent_retry_ms", "5m")  # a wait would hold the test for minutes
    add_tasks(project, "Parse input [usage-error]", "Compute result [usage-error]")

    done = construct(project, "--parallel", "1")

    assert done.returncode == 12, done.stdout + done.stderr
    builds = [e for e in events(project) if e["event"] == "agent_begin" and e["stage"] == "BUILD"]
    first, second = (build["item"] for build in builds)  # two runs, on the two tasks
    said = f"ralph: AGENT_FAILING: the agent failed the same way on BUILD {first} and on BUILD {second}"
    assert done.stdout.startswith(said), done.stdout
    assert "error: unknown option '--frobnicate' (see --help)" in done.stdout
    assert "running it again in" not in done.stderr  # no wait
    tasks = [r for r in plan_records(project) if r["t"] == "task"]
    assert all(task.get("attempts", 0) == 0 for task in tasks)
    assert_clean(project)


@pytest.mark.parametrize("seed", range(4))
def test_the_state_line_leaves_the_work_digest_as_splitting_the_lines_would_leave_it(seed):
    # The fingerprint of an agent's work ignores the plan's state line; found by a search rather
    # than a pass over the lines, it must drop exactly the lines bytes.splitlines would.
    import random

    state = b'{"t": "state"'
    pieces = [state + b', "iteration": 1}', b'{"t": "task"}', b"", b"x" + state, state, b" " + state]
    endings = [b"\n", b"\r\n", b"\r", b""]
    chosen = random.Random(seed)
    for _ in range(2000):
        data = b"".join(chosen.choice(pieces) + chosen.choice(endings) for _ in range(chosen.randint(0, 6)))
        split = b"".join(line for line in data.splitlines(True) if not line.startswith(state))
        assert without_state(data) == split, data
