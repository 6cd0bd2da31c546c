"""Every stage's runs, not only BUILD's: a run stopped by its time limit leaves its reason on the
item and is not rerun blindly; verifiers work in checkouts of their own, and what one does there
is its own. Scripted agents through the real CLI, real git."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import ralph_in_process
from tests.support.construct import add_tasks, assert_clean, construct, events, plan_records
from tests.support.gitrepo import git

# One agent for every test here: what it does per stage, and the markers in a task's name or an
# issue's text that make it misbehave. It writes what it saw to $SEEN (outside the repository).
# Each normal run calls ralph once (the name is read from the prompt), so runs end well within the
# short time limit these tests set, and a stop is either a hang or a context reported as full.
AGENT = """import json, os, pathlib, shlex, subprocess, time
import sys; sys.path.insert(0, os.environ["AGENT_KIT_DIR"]); from agent_kit import ralph
stage, seen = os.environ["RALPH_STAGE"], pathlib.Path(os.environ["SEEN"])
item = os.environ.get("RALPH_TASK_ID") or os.environ.get("RALPH_ISSUE_ID")
runs = len(list(seen.glob(f"{stage}-{item}-*.json"))) + 1
prompt = pathlib.Path(os.environ["RALPH_PROMPT_FILE"]).read_text()
name = prompt.splitlines()[0].split(f"{item}: ", 1)[-1]
what = {"cwd": os.getcwd(), "pwd": os.environ["PWD"], "root": os.environ["RALPH_ROOT"], "prompt": prompt}
(seen / f"{stage}-{item}-{runs}.json").write_text(json.dumps(what))

def full_context():  # a turn using 195,000 of the 200,000 tokens: ralph stops the run at once
    usage = {"input_tokens": 195000, "output_tokens": 1}
    print(json.dumps({"type": "assistant", "message": {"content": [], "usage": usage}}), flush=True)
    time.sleep(30)

if stage == "PLAN":  # the first run plans half the spec, then hangs; the next one finishes
    ralph("task", "add", json.dumps({"name": f"plan of run {runs}"}))
    if runs == 1:
        time.sleep(30)
elif stage == "INVESTIGATE":  # every issue here: half an investigation, then stopped
    ralph("task", "add", json.dumps({"name": f"half of {item}"}))
    full_context() if runs == 1 else time.sleep(30)
elif stage == "BUILD":
    pathlib.Path(f"work-{item}.txt").write_text(f"built {name}, run {runs}")
    ralph("task", "done")
elif stage == "VERIFY":
    if "[pause]" in name:  # until two [pause] verifiers have started (at most 20 s): a handshake
        together = seen / "together"
        together.mkdir(exist_ok=True)
        (together / f"{item}-{runs}").touch()
        deadline = time.monotonic() + 20
        while len(list(together.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    if "[full-once]" in name and runs == 1:
        full_context()
    if "[hang]" in name:
        time.sleep(30)
    if "[edit]" in name and runs == 1:
        pathlib.Path("check_work.py").write_text("print('verifier was here')")
    left = pathlib.Path("leftovers", "by-a-verifier.txt")  # ignored, where a test asks (see below)
    what["found_left"] = left.exists()
    (seen / f"{stage}-{item}-{runs}.json").write_text(json.dumps(what))
    if "[leave-ignored]" in name:
        left.parent.mkdir(parents=True, exist_ok=True)
        left.write_text("a test run's leftovers")
    if "[swap-for-link]" in name and runs == 1:  # its checkout: a link elsewhere
        elsewhere = pathlib.Path(os.environ["ELSEWHERE"])
        os.chdir("/")
        subprocess.run(["rm", "-rf", what["cwd"]], check=True)
        os.symlink(elsewhere, what["cwd"])
        os.chdir(what["cwd"])
    if "[reject]" in name:  # a different reason each time: the same one twice would ask a person
        why = ["still wrong", "the totals are off", "the names come out unsorted"][(runs - 1) % 3]
        ralph("task", "reject", f"reason {runs}: {why}")
    else:
        ralph("task", "accept")
elif stage == "DECOMPOSE":
    parts = [{"name": f"part {n} of {item}", "parent": item} for n in (1, 2)]
    ralph("task", "add", json.dumps(parts))
    if "[full-split]" in name:
        full_context()
"""
TIMEOUT = "2s"  # a normal run here takes a few tenths of a second, even on a busy machine


@pytest.fixture
def project(app_repo: Callable[[str], Path]) -> Path:
    return app_repo("# App\n\n- Do it\n")


def run(project: Path, tmp_path: Path, *flags: str):
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    seen = tmp_path / "seen"
    seen.mkdir(exist_ok=True)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    return construct(project, "--gate", "", *flags, agent=command, env={"SEEN": str(seen)})


def seen(tmp_path: Path, stage: str, item: str) -> list[dict]:
    """What the agent saw on each run of `stage` for `item`, in order."""
    found = sorted(
        (tmp_path / "seen").glob(f"{stage}-{item}-*.json"), key=lambda p: int(p.stem.rsplit("-", 1)[1])
    )
    return [json.loads(path.read_text()) for path in found]


def record(project: Path, item: str) -> dict:
    return next(r for r in plan_records(project) if r.get("id") == item and r["t"] in ("task", "issue"))


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_a_hanging_investigator_is_stopped_recorded_told_and_parked_at_the_limit
# (a stopped run's plan kept beside its log: the DECOMPOSE test below; `ralph status`'s kept-open
# count: tests/cli/golden/cli/status_waiting.yml)
@pytest.mark.slow
def test_a_hanging_investigator_is_stopped_recorded_told_and_parked_at_the_limit(project, tmp_path):
    from ralph.usecases import issues

    issue = issues.add(project, "Does it hang?")["id"]
    (other,) = add_tasks(project, "Other work")
    done = run(project, tmp_path, "--timeout", TIMEOUT, "--max-attempts", "2")
    assert done.returncode == 5 and "blocked: a person must decide" in done.stdout, done.stdout + done.stderr

    runs = seen(tmp_path, "INVESTIGATE", issue)
    assert len(runs) == 2  # the limit, then no more runs
    stops = [e for e in events(project) if e["event"] == "issue_stopped"]
    assert [(e["item"], e["kill_reason"], e["stops"], e["parked"]) for e in stops] == [
        (issue, "context_limit", 1, False),
        (issue, "timeout", 2, True),
    ]
    first_log = stops[0]["log"]
    assert "earlier INVESTIGATE run" not in runs[0]["prompt"]
    assert first_log in runs[1]["prompt"]
    said = "1 earlier INVESTIGATE run of this issue was stopped, the last one by context_limit"
    assert said in runs[1]["prompt"]

    parked = record(project, issue)
    assert (
        parked["kills"] == 2 and parked["kill_reason"] == "timeout" and parked["kill_log"] == stops[1]["log"]
    )
    assert parked["kill_log"].startswith("build/ralph-logs/") and (project / parked["kill_log"]).is_file()
    assert parked["keep_open"].startswith("INVESTIGATE was stopped 2 times (timeout")
    # What the stopped runs added is not kept (no duplicate every run), but saved beside their logs.
    names = [r["name"] for r in plan_records(project) if r["t"] in ("task", "accept")]
    assert names == ["Other work"] and other in {r["id"] for r in plan_records(project) if r["t"] == "accept"}
    assert f"half of {issue}" in (project / first_log.replace(".log", ".plan.jsonl")).read_text()

    report = done.stdout
    assert (
        "stopped (2):" in report
        and f"{issue} INVESTIGATE stopped (timeout), kept open for a person" in report
    )
    assert f"{issue} issue: Does it hang? (kept open: INVESTIGATE was stopped 2 times" in report
    status = ralph_in_process(project, "status").stdout
    assert (
        "issues: 1 open, 1 kept open" in status and f"  {issue}: kept open: INVESTIGATE was stopped" in status
    )
    assert_clean(project)


# `make test` has it in process, in test_stages_in_process.py:
# test_a_verifier_stopped_once_leaves_the_reason_and_the_next_one_is_told
@pytest.mark.slow
def test_a_verifier_stopped_once_leaves_the_reason_and_the_next_one_is_told(project, tmp_path):
    (task,) = add_tasks(project, "Big to check [full-once]")
    done = run(project, tmp_path, "--timeout", TIMEOUT, "--max-attempts", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    stops = [e for e in events(project) if e["event"] == "verify_stopped"]
    assert [(e["item"], e["kill_reason"], e["stops"], e["set_aside"]) for e in stops] == [
        (task, "context_limit", 1, False)
    ]
    first_verify = git(project, "log", "--format=%H", "--grep=^ralph(verify)").split()[-1]
    after_stop = plan_records(project, first_verify)
    kept = next(r for r in after_stop if r.get("id") == task)
    assert kept["s"] == "d" and (kept["verify_kills"], kept["verify_kill_reason"]) == (1, "context_limit")
    assert kept["verify_kill_log"] == stops[0]["log"]
    first, second = seen(tmp_path, "VERIFY", task)
    assert stops[0]["log"] in second["prompt"] and "earlier VERIFY run" not in first["prompt"]
    assert "1 earlier VERIFY run of this task was stopped, the last one by context_limit" in second["prompt"]
    assert f"{task} VERIFY stopped (context_limit), verified again next time (1 of 2)" in done.stdout
    assert [r["id"] for r in plan_records(project) if r["t"] == "accept"] == [task]


# `make test` has it in process, in test_stages_in_process.py:
# test_a_verifier_stopped_at_the_limit_sets_the_task_aside_and_the_rest_goes_on
# (a build's patch from real git beside a log: the rejected-too-often test below)
@pytest.mark.slow
def test_a_verifier_stopped_at_the_limit_sets_the_task_aside_and_the_rest_goes_on(project, tmp_path):
    hangs, fine = add_tasks(project, "Never checked [hang]", "Fine")
    done = run(project, tmp_path, "--timeout", TIMEOUT, "--max-attempts", "1", "--max-iterations", "1")
    assert done.returncode == 3, done.stdout + done.stderr
    assert len(seen(tmp_path, "VERIFY", hangs)) == 1
    assert [r["id"] for r in plan_records(project) if r["t"] == "accept"] == [fine]
    aside = record(project, hangs)
    assert aside["s"] == "p" and aside["kill_reason"] == "timeout"
    assert aside["kill_log"].startswith("build/ralph-logs/") and "-verify-" in aside["kill_log"]
    patch = (project / aside["kill_log"]).with_suffix(".patch").read_text()
    assert f"work-{hangs}.txt" in patch and "plan.jsonl" not in patch  # the build, still in the code
    assert f"{hangs} VERIFY stopped (timeout), set aside for DECOMPOSE" in done.stdout
    assert (  # why, in words, and the log to read
        f"{hangs} pending: Never checked [hang] (set aside for DECOMPOSE: VERIFY was stopped 1 times"
        f" (timeout); split it into tasks one run can check; log {aside['kill_log']})"
    ) in done.stdout
    assert_clean(project)


@pytest.mark.slow
def test_a_task_rejected_too_often_goes_to_decompose_with_its_log_reasons_and_patch(project, tmp_path):
    (task,) = add_tasks(project, "Contested [reject]")
    done = run(project, tmp_path, "--max-attempts", "2", "--max-iterations", "3")
    assert done.returncode == 3, done.stdout + done.stderr
    killed = next(e for e in events(project) if e["event"] == "task_killed")
    aside_commit = git(project, "log", "-1", "--format=%H", f"--grep=^ralph(build): {task} set aside").strip()
    aside = next(r for r in plan_records(project, aside_commit) if r.get("id") == task)
    assert aside["kill_reason"] == "doom_loop" and aside["kill_log"] == killed["log"]
    assert aside["kill_log"].startswith("build/ralph-logs/") and "-rejected-" in aside["kill_log"]
    log = (project / aside["kill_log"]).read_text()
    assert (
        "1. reason 1: still wrong" in log and "2. reason 2: the totals are off" in log and "-verify-" in log
    )
    patch = project / aside["kill_log"].replace(".log", ".patch")
    assert f"work-{task}.txt" in patch.read_text()
    (prompt,) = [run["prompt"] for run in seen(tmp_path, "DECOMPOSE", task)]
    assert aside["kill_log"] in prompt and "2. reason 2: the totals are off" in prompt  # the log's head
    assert "- reason 1: still wrong" in prompt and "- reason 2: the totals are off" in prompt
    assert str(patch.relative_to(project)) in prompt


def test_verifiers_work_in_checkouts_of_their_own_and_one_that_edits_keeps_nothing(project, tmp_path):
    from ralph.usecases import tasks

    editor, other = add_tasks(project, "Edits [edit] [pause]", "Checks [pause]")
    for task in (editor, other):
        tasks.done(project, task)  # straight to VERIFY
    head = git(project, "rev-parse", "HEAD").strip()
    done = run(project, tmp_path, "--parallel", "2")
    assert done.returncode == 0, done.stdout + done.stderr

    first_edit, second_edit = seen(tmp_path, "VERIFY", editor)
    (checked,) = seen(tmp_path, "VERIFY", other)
    checkouts = {Path(run["cwd"]).resolve() for run in (first_edit, second_edit, checked)}
    assert len(checkouts) == 3 and project.resolve() not in checkouts
    for run_ in (first_edit, second_edit, checked):
        assert run_["root"] == run_["pwd"] and Path(run_["pwd"]).resolve() == Path(run_["cwd"]).resolve()
        assert run_["pwd"] in run_["prompt"]  # its prompt names its own checkout
    assert not any(path.exists() for path in checkouts)  # removed after their runs
    assert len(git(project, "worktree", "list").splitlines()) == 1
    runs = [e for e in events(project) if e["event"].startswith("agent_") and e["stage"] == "VERIFY"]
    begins = sorted(e["ts"] for e in runs if e["event"] == "agent_begin")
    ends = sorted(e["ts"] for e in runs if e["event"] == "agent_end")
    assert begins[1] < ends[0], "the two verifiers ran at once"

    (violation,) = [e for e in events(project) if e["event"] == "permission_violation"]
    assert violation["items"] == [editor] and violation["checkout"] == first_edit["pwd"]
    assert any("changed code in VERIFY: check_work.py" in did for did in violation["did"])
    assert "verifier was here" in (project / violation["log"].replace(".log", ".patch")).read_text()
    verdicts = [
        (e["item"], e.get("verdict"), e.get("violation")) for e in events(project) if e["event"] == "verdict"
    ]
    assert sorted(verdicts[:2]) == sorted([(editor, None, True), (other, "accepted", None)])
    assert verdicts[2:] == [(editor, "accepted", None)]  # its verdict came with the next, clean run
    assert "verifier was here" not in (project / "check_work.py").read_text()
    assert "verifier was here" not in git(project, "log", "-p", f"{head}..HEAD")
    assert_clean(project)


def ignoring_leftovers(project: Path) -> None:
    with (project / ".gitignore").open("a") as ignore:
        ignore.write("/leftovers/\n")
    git(project, "commit", "-qam", "leftovers are ignored")


@pytest.mark.slow
def test_verifiers_one_after_another_share_one_checkout_cleaned_between_them(project, tmp_path):
    """One `git worktree add` for a fork/join, not one per task: each verifier finds the checkout
    as a fresh one would be (what the one before left, ignored files too, is gone) and its own
    copy of the plan; the checkout is removed at the end."""
    from ralph.usecases import tasks

    ignoring_leftovers(project)
    ids = add_tasks(project, "One [leave-ignored]", "Two [leave-ignored]", "Three")
    for task in ids:
        tasks.done(project, task)
    done = run(project, tmp_path, "--parallel", "1")
    assert done.returncode == 0, done.stdout + done.stderr

    runs = [seen(tmp_path, "VERIFY", task)[0] for task in ids]
    assert len({Path(run_["cwd"]).resolve() for run_ in runs}) == 1  # one checkout, lent three times
    assert project.resolve() != Path(runs[0]["cwd"]).resolve()
    assert [run_["found_left"] for run_ in runs] == [False, False, False]  # cleaned between loans
    verdicts = [(e["item"], e.get("verdict")) for e in events(project) if e["event"] == "verdict"]
    assert verdicts == [(task, "accepted") for task in ids]
    assert not Path(runs[0]["cwd"]).exists()
    assert len(git(project, "worktree", "list").splitlines()) == 1
    assert_clean(project)


@pytest.mark.slow
def test_a_verifier_that_changed_its_checkout_leaves_it_to_no_other(project, tmp_path):
    """A checkout a verifier changed (a violation) is removed, not cleaned and lent again: the
    next verifier gets a fresh one."""
    from ralph.usecases import tasks

    editor, other = add_tasks(project, "Edits [edit]", "Checks")
    for task in (editor, other):
        tasks.done(project, task)
    done = run(project, tmp_path, "--parallel", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    first, then = seen(tmp_path, "VERIFY", editor)[0], seen(tmp_path, "VERIFY", other)[0]
    assert Path(first["cwd"]).resolve() != Path(then["cwd"]).resolve()
    assert "verifier was here" not in (project / "check_work.py").read_text()


def test_a_checkout_swapped_for_a_link_is_never_cleaned_through_it(project, tmp_path):
    """A verifier (unfenced) that replaced its checkout with a link to another folder: ralph
    cleans nothing there (`git clean` through the link would take that folder's ignored files),
    removes the link and lends the next verifier a new checkout."""
    from ralph.usecases import tasks

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q")
    (elsewhere / ".gitignore").write_text("precious.txt\n")
    (elsewhere / "precious.txt").write_text("a person's file")
    swapper, other = add_tasks(project, "Swaps [swap-for-link]", "Checks")
    for task in (swapper, other):
        tasks.done(project, task)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    (tmp_path / "seen").mkdir()
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    env = {"SEEN": str(tmp_path / "seen"), "ELSEWHERE": str(elsewhere)}
    done = construct(project, "--gate", "", "--parallel", "1", "--sandbox", "off", agent=command, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (elsewhere / "precious.txt").read_text() == "a person's file"
    first, then = seen(tmp_path, "VERIFY", swapper)[0], seen(tmp_path, "VERIFY", other)[0]
    assert first["cwd"] != then["cwd"]
    assert not Path(first["cwd"]).is_symlink() and not Path(first["cwd"]).exists()
    assert len(git(project, "worktree", "list").splitlines()) == 1


def test_a_decomposition_stopped_half_way_is_undone_and_counts_as_failed(project, tmp_path):
    plan = project / "plan.jsonl"
    killed = {"t": "task", "id": "t-split0", "name": "Split me [full-split]", "kill_reason": "timeout"}
    plan.write_text(plan.read_text() + json.dumps(killed) + "\n")
    git(project, "commit", "-qam", "a task killed earlier")
    done = run(project, tmp_path, "--timeout", TIMEOUT, "--max-iterations", "1")
    assert done.returncode in (3, 5), done.stdout + done.stderr
    assert len(seen(tmp_path, "DECOMPOSE", "t-split0")) == 2  # twice, then blocked for a person
    tasks = [r for r in plan_records(project) if r["t"] == "task"]
    assert [(t["id"], t["s"], t["decompose_failures"]) for t in tasks] == [("t-split0", "b", 2)]
    assert (
        tasks[0]["blocked_reason"]
        == "DECOMPOSE failed 2 times: was stopped (context_limit) before it finished"
    )
    assert done.stdout.count("t-split0 DECOMPOSE stopped (context_limit), undone") == 2
    saved = [e["plan"] for e in events(project) if e["event"] == "plan_changes_set_aside"]
    assert len(saved) == 2 and "part 1 of t-split0" in (project / saved[0]).read_text()
    assert_clean(project)


# `make test` has it in process, in test_stages_in_process.py:
# test_loop_a_stopped_plan_run_ends_stuck_says_why_on_the_spec_and_a_finished_one_clears_it
# (its plan kept beside its log, as PlanAccess.undo_since keeps every stage's: the DECOMPOSE test above)
@pytest.mark.slow
def test_a_stopped_plan_run_keeps_nothing_says_why_and_a_finished_one_clears_it(project, tmp_path):
    done = run(project, tmp_path, "--timeout", TIMEOUT)
    assert done.returncode == 5, done.stdout + done.stderr
    assert "STUCK: the PLAN run was stopped and nothing of it kept" in done.stdout
    assert [e for e in events(project) if e["event"] == "construct_end"][-1]["ending"] == "plan_stopped"
    assert "specs/app.md PLAN stopped (timeout), nothing of it kept; log build/ralph-logs/" in done.stdout
    records = plan_records(project)
    assert [r for r in records if r["t"] == "task"] == []  # half a plan is not built as the whole spec
    (spec,) = [r for r in records if r["t"] == "spec"]
    assert spec["kill_reason"] == "timeout" and spec["kill_log"].startswith("build/ralph-logs/")
    kept = project / spec["kill_log"].replace(".log", ".plan.jsonl")
    assert "plan of run 1" in kept.read_text()
    assert [e["kill_reason"] for e in events(project) if e["event"] == "plan_stopped"] == ["timeout"]
    assert_clean(project)

    again = run(project, tmp_path, "--timeout", TIMEOUT)
    assert again.returncode == 0, again.stdout + again.stderr
    (spec,) = [r for r in plan_records(project) if r["t"] == "spec"]
    assert "kill_reason" not in spec and "kill_log" not in spec
    assert [r["name"] for r in plan_records(project) if r["t"] == "accept"] == ["plan of run 2"]
