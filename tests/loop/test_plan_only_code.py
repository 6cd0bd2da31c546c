"""Issue 33, "plan-only stages cannot change code": a change to code made during a PLAN run (as
INVESTIGATE, DECOMPOSE and CHECK: ralph.loop.runs.permissions.PLAN_ONLY_STAGES) is its agent's
permission violation, undone and kept as a patch beside its log, and PLAN runs again; in the
sandbox the agent cannot write the work tree but for plan.jsonl (and new top-level names, which
are then its own), so a person's edit under what it saw read-only stays theirs. Unfenced, nothing
tells a person's edit from the agent's: it is undone too, and never lost (the patch keeps it).
Real processes: ralph's loop in this process, the scripted agent, bwrap where it is installed."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ralph.loop.process.sandbox import unavailable_reason
from tests.support.construct import construct, events, plan_records, wait_for, with_app_spec
from tests.support.gitrepo import git

# The agent knows its first PLAN run by the PLAN logs ralph has made (its own is there already):
# inside the sandbox it can write nothing that outlives the run but plan.jsonl.
PLANNER = """import json, os, pathlib, sys, time
sys.path.insert(0, os.environ["AGENT_KIT_DIR"])
from agent_kit import ralph

CODE = "print('the plan agent was here')\\n"
stage, mode = os.environ["RALPH_STAGE"], os.environ["PLANNER"]


def attempt(name, action):
    try:
        action()
    except OSError as exc:
        print(f"TRIED {name} blocked {exc.strerror}", flush=True)
        return
    print(f"TRIED {name} ok", flush=True)


def append(path, text):
    with open(path, "a") as handle:
        handle.write(text)


def loop_pid():
    git_dir = pathlib.Path(".git")  # the construct lock names the loop's process: `pid N, since T`
    return (git_dir / "ralph-construct.lock").read_text().split(",")[0].split()[1]


def writes_code():
    attempt("new_file", lambda: pathlib.Path("helper.py").write_text(CODE))
    attempt("edit_tracked", lambda: append("README", CODE))
    attempt("new_in_folder", lambda: pathlib.Path("specs", "notes.py").write_text(CODE))
    if mode != "attacks":
        return
    attempt("remove_tracked", lambda: os.remove("README"))
    attempt("rename_folder", lambda: os.rename("specs", "specs-moved"))
    attempt("replace_lock", lambda: os.remove("plan.jsonl.lock"))
    attempt("hard_link", lambda: os.link("README", "readme-link"))
    # a folder of its own whose ignore rule hides it, and its code, from git; and one in the place
    # of a tracked link (a link cannot be mounted over: the folder's entry is the run's to replace)
    attempt("hidden_folder", lambda: hide("hidden", "conftest.py"))
    attempt("link_replaced", lambda: os.remove("specs-link") or hide("specs-link", "conftest.py"))


def hide(folder, name):
    pathlib.Path(folder).mkdir()
    pathlib.Path(folder, ".gitignore").write_text("*\\n")
    pathlib.Path(folder, name).write_text(CODE)


# After its own ralph commands (which clear what has the names of their temporary files): a file
# named like one, and a link for the loop's next write of plan.jsonl to go through.
def uses_ralphs_names():
    attempt("temp_named", lambda: pathlib.Path(".plan.jsonl.9.tmp").write_text(CODE))
    link = pathlib.Path(f".plan.jsonl.{loop_pid()}.tmp")
    attempt("temp_link", lambda: link.symlink_to(os.environ["VICTIM"]))


if stage == "PLAN":
    first = len(list(pathlib.Path("build", "ralph-logs").glob("*-plan*.log"))) == 1
    if first and mode == "waits":  # a person edits meanwhile; the test says when to go on
        print("PLANNER waiting", flush=True)
        while not pathlib.Path(os.environ["WAIT_DIR"], "go").exists():
            time.sleep(0.02)
    elif first:
        writes_code()
    for name in ("Parse input", "Print report"):
        ralph("task", "add", "--json", json.dumps({"name": name, "accept": "work file says ok"}))
    if first and mode == "attacks":
        uses_ralphs_names()
elif stage == "INVESTIGATE":  # reproduces the issue with a script of its own the first time
    if len(list(pathlib.Path("build", "ralph-logs").glob("*-investigate-*.log"))) == 1:
        attempt("new_file", lambda: pathlib.Path("repro.py").write_text(CODE))
    ralph("issue", "resolve", os.environ["RALPH_ISSUE_ID"], "--note", "out of scope")
elif stage == "BUILD":
    task = os.environ["RALPH_TASK_ID"]
    pathlib.Path("work").mkdir(exist_ok=True)
    pathlib.Path("work", task + ".txt").write_text("ok " + task)
    ralph("task", "done")
elif stage == "VERIFY":
    ralph("task", "accept")
"""
CODE = "print('the plan agent was here')\n"
README = "a project\n"  # as the repository fixture commits it

needs_bwrap = pytest.mark.skipif(
    unavailable_reason()[0] is None, reason=f"no sandbox here: {unavailable_reason()[1]}"
)


@pytest.fixture
def app(repo: Path) -> Path:
    return with_app_spec(repo, "# App\n\n- Parse input\n- Print report\n")


def run(app: Path, tmp_path: Path, mode: str, sandbox: str, wait: bool = True, **env: str):
    agent = tmp_path / "planner.py"
    agent.write_text(PLANNER)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"
    return construct(app, f"--sandbox={sandbox}", agent=command, wait=wait, env={"PLANNER": mode, **env})


def tried(app: Path) -> dict[str, str]:
    """What the agent's attempts came to ("ok" or "blocked"), from the logs ralph kept."""
    found = {}
    for log in (app / "build" / "ralph-logs").glob("*-plan*.log"):
        for line in log.read_text().splitlines():
            if line.startswith("TRIED "):
                found[line.split()[1]] = line.split()[2]
    return found


def violations(app: Path) -> list[dict]:
    return [e for e in events(app) if e["event"] == "permission_violation"]


def accepted(app: Path) -> list[str]:
    return sorted(r["name"] for r in plan_records(app, "HEAD") if r["t"] == "accept")


def plan_logs(app: Path) -> int:
    return len(list((app / "build" / "ralph-logs").glob("*-plan*.log")))


def test_code_a_plan_agent_writes_is_undone_kept_as_a_patch_and_plan_runs_again(app, tmp_path):
    done = run(app, tmp_path, "writes-code", "off")

    assert done.returncode == 0, done.stdout + done.stderr  # the run went on, to COMPLETE
    assert tried(app) == {"new_file": "ok", "edit_tracked": "ok", "new_in_folder": "ok"}
    (violation,) = violations(app)
    assert violation["stage"] == "PLAN"
    assert violation["did"] == ["changed code in PLAN: README, helper.py, specs/notes.py"]
    patch = app / violation["patch"]
    assert patch.read_text().count(CODE.strip()) == 3  # each change kept, none lost
    assert not (app / "helper.py").exists() and not (app / "specs" / "notes.py").exists()
    assert (app / "README").read_text() == README
    assert "the plan agent was here" not in git(app, "log", "-p")
    assert git(app, "status", "--porcelain") == ""
    assert plan_logs(app) == 2  # undone, tasks and all; the second run kept the rules
    (again,) = [e for e in events(app) if e["event"] == "plan_again"]
    assert (again["run"], again["max_runs"]) == (2, 3)
    assert accepted(app) == ["Parse input", "Print report"]
    assert f"PLAN: permission violation, undone: {violation['did'][0]}" in done.stderr
    assert f"`git apply --include=<file> {violation['patch']}`" in done.stderr


# `make test` has both halves in real runs: PLAN's code undone and PLAN run again above, and a PLAN
# that breaks its stage's rules at every run ending STUCK after max_attempts runs, saying so
# (tests/loop/test_early_end.py: test_a_run_whose_every_plan_run_breaks_the_rules_runs_it_max_attempts_
# times_and_says_so). This runs with the slow suites.
@pytest.mark.slow
def test_a_plan_agent_that_writes_code_every_time_ends_the_run_stuck_saying_so(app, tmp_path):
    agent_always = PLANNER.replace('glob("*-plan*.log"))) == 1', 'glob("*-plan*.log"))) >= 1')
    assert agent_always != PLANNER  # every PLAN run writes code
    (tmp_path / "planner.py").write_text(agent_always)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(tmp_path / 'planner.py'))}"
    done = construct(app, "--sandbox=off", agent=command, env={"PLANNER": "writes-code"})

    assert done.returncode == 5, done.stdout + done.stderr
    assert "the PLAN stage added no tasks: its runs broke the stage's rules" in done.stdout
    assert len(violations(app)) == 3 and plan_logs(app) == 3  # max_attempts runs, then a person
    assert done.stdout.count("PLAN run ") == 3  # each in the report's failures, with its log
    assert events(app)[-1]["ending"] == "plan_failed"  # which of STUCK's endings, as data
    assert not [r for r in plan_records(app) if r["t"] == "task"]
    assert git(app, "status", "--porcelain") == ""


@pytest.mark.slow
def test_code_an_investigator_writes_is_its_violation_and_the_issue_is_investigated_again(app, tmp_path):
    from ralph.usecases import issues, tasks

    tasks.add(app, [{"name": "Parse input", "accept": "work file says ok"}])  # planned by hand
    issue = issues.add(app, "The report is wrong")["id"]

    done = run(app, tmp_path, "writes-code", "off")

    assert done.returncode == 0, done.stdout + done.stderr
    (violation,) = violations(app)
    assert (violation["stage"], violation["items"]) == ("INVESTIGATE", [issue])
    assert violation["did"] == ["changed code in INVESTIGATE: repro.py"]
    assert CODE.strip() in (app / violation["patch"]).read_text()
    assert not (app / "repro.py").exists() and "the plan agent was here" not in git(app, "log", "-p")
    assert f"INVESTIGATE {issue}: permission violation, undone" in done.stderr
    assert len(list((app / "build" / "ralph-logs").glob("*-investigate-*.log"))) == 2  # again, next time
    assert [r["id"] for r in plan_records(app, "HEAD") if r["t"] == "resolve"] == [issue]


@pytest.mark.slow
@needs_bwrap
def test_in_the_sandbox_a_plan_agent_writes_only_the_plan_and_new_names_which_are_undone(app, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own\n")
    (app / "specs-link").symlink_to("specs")
    (app / "specs" / "conftest.py").write_text("# the repository's own\n")  # where the link points
    git(app, "add", "specs-link", "specs/conftest.py")
    git(app, "commit", "-qm", "a link")

    done = run(app, tmp_path, "attacks", "required", VICTIM=str(victim))

    assert done.returncode == 0, done.stdout + done.stderr
    assert tried(app) == {
        "new_file": "ok",  # a new top-level name: the folder stays writable for plan.jsonl
        "edit_tracked": "blocked",
        "new_in_folder": "blocked",
        "remove_tracked": "blocked",
        "rename_folder": "blocked",
        "replace_lock": "blocked",
        "hard_link": "blocked",
        "hidden_folder": "ok",
        "link_replaced": "ok",
        "temp_named": "ok",
        "temp_link": "ok",
    }
    (violation,) = violations(app)
    got_through = ["helper.py", "hidden/.gitignore", "hidden/conftest.py", "specs-link"]
    assert violation["did"] == [f"changed code in PLAN: {', '.join(got_through)}, specs-link/.gitignore ..."]
    assert (app / violation["patch"]).read_text().count(CODE.strip()) == 3
    assert not (app / "helper.py").exists() and (app / "README").read_text() == README
    assert not [path for path in (app / "hidden").rglob("*")]  # its folder stays, empty
    assert (app / "specs-link").is_symlink()  # put back, and nothing removed through it
    assert (app / "specs" / "conftest.py").read_text() == "# the repository's own\n"
    # ralph's own names: nothing of the agent's is left under them, nor written through them
    assert victim.read_text() == "the user's own\n"
    assert not list(app.glob(".plan.jsonl.*.tmp"))
    assert (app / "plan.jsonl.lock").is_file() and not (app / "plan.jsonl.lock").is_symlink()
    assert "the plan agent was here" not in git(app, "log", "-p")
    assert git(app, "status", "--porcelain") == ""
    assert accepted(app) == ["Parse input", "Print report"]


def persons_edit_during_plan(app: Path, tmp_path: Path, sandbox: str, new_name: bool):
    """A person edits README and adds specs/ideas.md (and, `new_name`, notes.txt at the top level
    and a dependency under node_modules/, which the repository ignores) while the first PLAN run
    waits; the run's result."""
    (app / ".gitignore").write_text((app / ".gitignore").read_text() + "/node_modules/\n")
    git(app, "commit", "-qam", "ignore installed dependencies")
    wait_dir = tmp_path / "wait"  # beside the agent's script: the sandbox shows it (read-only)
    wait_dir.mkdir()
    running = run(app, tmp_path, "waits", sandbox, wait=False, WAIT_DIR=str(wait_dir))
    logs = app / "build" / "ralph-logs"
    wait_for(
        lambda: any("PLANNER waiting" in log.read_text() for log in logs.glob("*-plan.log")),
        "the planner never started",
    )
    (app / "README").write_text("a person's edit\n")
    (app / "specs" / "ideas.md").write_text("a person's new file\n")
    if new_name:
        (app / "notes.txt").write_text("a person's notes\n")
        (app / "node_modules" / "dep").mkdir(parents=True)
        (app / "node_modules" / "dep" / "index.js").write_text("// installed\n")
    (wait_dir / "go").write_text("")
    out, err = running.communicate(timeout=120)
    return subprocess.CompletedProcess(running.args, running.returncode, out, err)


@pytest.mark.slow
def test_unfenced_a_persons_edit_during_plan_is_undone_with_the_run_and_comes_back_from_the_patch(
    app, tmp_path
):
    done = persons_edit_during_plan(app, tmp_path, "off", new_name=True)

    assert done.returncode == 0, done.stdout + done.stderr
    (violation,) = violations(app)  # nothing tells it from the agent's: taken for the agent's
    assert violation["did"] == ["changed code in PLAN: README, notes.txt, specs/ideas.md"]
    kept = violation["patch"]
    assert f"`git apply --include=<file> {kept}`" in done.stderr
    assert git(app, "status", "--porcelain") == ""
    subprocess.run(["git", "apply", "--include=README", "--include=notes.txt", kept], cwd=app, check=True)
    assert (app / "README").read_text() == "a person's edit\n"  # not lost: back as they wrote it
    assert (app / "notes.txt").read_text() == "a person's notes\n"
    assert not (app / "specs" / "ideas.md").exists()  # only what was asked for came back
    assert (app / "node_modules" / "dep" / "index.js").exists()  # ignored by the repository's rules
    assert accepted(app) == ["Parse input", "Print report"]


@pytest.mark.slow
@needs_bwrap
def test_in_the_sandbox_a_new_top_level_name_a_person_makes_during_plan_is_kept_as_a_patch(app, tmp_path):
    """A name that did not exist when the run began could be the agent's (the folder stays
    writable for plan.jsonl): undone with the run, kept in the patch; the edits under what the
    agent saw read-only stay where the person made them. (With no new name, the PLAN run stands:
    test_a_persons_edit_during_a_fenced_plan_is_left_unstaged_and_plans_tasks_are_kept.)"""
    done = persons_edit_during_plan(app, tmp_path, "required", new_name=True)

    assert done.returncode == 0, done.stdout + done.stderr
    (violation,) = violations(app)
    assert violation["did"] == ["changed code in PLAN: notes.txt"]
    assert "a person's notes" in (app / violation["patch"]).read_text()
    assert (app / "README").read_text() == "a person's edit\n"
    assert (app / "specs" / "ideas.md").read_text() == "a person's new file\n"
    assert (app / "node_modules" / "dep" / "index.js").exists()  # ignored by the repository's rules
    assert accepted(app) == ["Parse input", "Print report"]


# A verifier that, the first time, writes code into the loop's own work tree (found from its
# checkout through git's common directory), then accepts.
STRAY_VERIFIER = """import json, os, pathlib, subprocess, sys
sys.path.insert(0, os.environ["AGENT_KIT_DIR"])
from agent_kit import ralph

stage, task = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID")
if stage == "BUILD":
    pathlib.Path("work").mkdir(exist_ok=True)
    pathlib.Path("work", task + ".txt").write_text("ok\\n")
    ralph("task", "done", task)
elif stage == "VERIFY":
    marker = pathlib.Path(os.environ["MARKS"], "strayed")
    if not marker.exists():
        marker.write_text("once")
        common = subprocess.run(
            ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        pathlib.Path(common).parent.joinpath("stray.py").write_text("print('a verifier was here')\\n")
    ralph("task", "accept", task)
"""


def test_unfenced_code_a_verifier_writes_in_the_loops_work_tree_is_its_violation(app, tmp_path):
    """A verifier works in a checkout of its own; unfenced, it can still reach the loop's work
    tree. What it writes there is undone and kept as a patch, and its verdict is not taken: the
    next VERIFY judges the task again."""
    from tests.support.construct import add_tasks

    (task_id,) = add_tasks(app, "Write the work")
    agent = tmp_path / "verifier.py"
    agent.write_text(STRAY_VERIFIER)
    (tmp_path / "marks").mkdir()
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}"

    done = construct(app, "--sandbox=off", agent=command, env={"MARKS": str(tmp_path / "marks")})

    assert done.returncode == 0, done.stdout + done.stderr
    assert not (app / "stray.py").exists()
    violations = [e for e in events(app) if e["event"] == "permission_violation"]
    assert [e["stage"] for e in violations] == ["VERIFY"]
    assert "stray.py" in (app / violations[0]["patch"]).read_text()
    verifies = [e for e in events(app) if e["event"] == "agent_begin" and e["stage"] == "VERIFY"]
    assert len(verifies) == 2  # the first verdict was not taken
    assert any(r["t"] == "accept" and r["id"] == task_id for r in plan_records(app))
