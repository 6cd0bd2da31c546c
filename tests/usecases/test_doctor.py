"""`ralph doctor` in real repositories: locks taken by real processes that were then SIGKILLed,
worktrees made with `git worktree add` as the loop names them, real branches. The output people
read is in tests/cli/test_doctor_golden.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ralph.store import intent
from ralph.store.git import Repo
from ralph.store.intent import IntentKind
from ralph.store.lock import CONSTRUCT_LOCK_NAME, LOCK_NAME
from ralph.usecases import tasks
from ralph.usecases.doctor import clean_after_killed_run
from tests.support.cli import Ralph
from tests.support.gitrepo import git
from tests.support.gitruns import count_git_runs
from tests.support.leftovers import leftover_branch, leftover_worktree, persons_ralph_names
from tests.support.locks import HOLD, holder, killed_holder
from tests.support.work_trees import loop_work_tree


def doctor(root: Path, *args: str, code: int | None = None):
    return Ralph(root)("doctor", *args, code=code)


def findings(root: Path, *args: str) -> list[dict]:
    return json.loads(doctor(root, "--json", *args).stdout)["findings"]


def kinds(root: Path, *args: str) -> list[tuple[str, str, bool]]:
    return [(f["kind"], f["subject"], f["fixed"]) for f in findings(root, *args)]


def untouched(root: Path) -> tuple[str, str]:
    """What --fix must never change: the commits and the user's view of the work tree."""
    return git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain")


def test_a_healthy_repository_is_ok(repo):
    assert doctor(repo, code=0).stdout == "ok: nothing to repair\n"
    assert json.loads(doctor(repo, "--json", code=0).stdout) == {
        "schema_version": 1,
        "healthy": True,
        "construct_running": None,
        "findings": [],
    }


def test_a_lock_whose_holder_was_killed_is_stale_until_fix_empties_it(repo):
    ralph = Ralph(repo)
    ralph("task", "add", '{"id": "t-a", "name": "A"}')
    assert (repo / LOCK_NAME).read_text() == ""  # a command that let go leaves a file naming nobody
    pid = killed_holder(repo, "plan")
    assert (repo / LOCK_NAME).read_text().startswith(f"pid {pid}, since ")

    out = doctor(repo, code=1).stdout
    assert out.startswith(f"{LOCK_NAME}: stale lock: pid {pid}, since ")
    assert out.endswith(": ended without letting go (it blocks nothing); --fix empties it\n")
    before = untouched(repo)
    assert kinds(repo, "--fix") == [("stale_lock", LOCK_NAME, True)]
    assert (repo / LOCK_NAME).read_text() == ""
    assert untouched(repo) == before
    assert doctor(repo, code=0).stdout == "ok: nothing to repair\n"

    killed_holder(repo, "plan")
    ralph("task", "done", "t-a")  # a stale lock blocks nothing: the kernel let go of it, and the
    assert doctor(repo, code=0).stdout == "ok: nothing to repair\n"  # next holder's file is its own


def test_a_lock_held_by_a_live_process_is_not_stale(repo):
    process = holder(repo, "plan")
    try:
        assert doctor(repo, code=0).stdout == "ok: nothing to repair\n"
    finally:
        process.kill()
        process.wait()


def test_a_killed_construct_lock_is_stale_and_a_live_one_makes_fix_refuse(repo, tmp_path):
    pid = killed_holder(repo, "construct")
    assert kinds(repo) == [("stale_lock", f".git/{CONSTRUCT_LOCK_NAME}", False)]
    path = leftover_worktree(repo, tmp_path, "verify-t-a")
    process = holder(repo, "construct")
    try:
        out = doctor(repo, code=0).stdout  # the run's worktrees are its own: nothing else to say
        assert out == f"ralph construct is running (pid {process.pid}, since {out.split('since ')[1]}"
        assert out.endswith("): its worktrees and branches are its own\nok: nothing to repair\n")
        refused = doctor(repo, "--fix", code=1)
        assert refused.stdout == ""
        assert refused.stderr.startswith(
            f"ralph: a ralph construct run is active in this repository (pid {process.pid}, since "
        )
        assert refused.stderr.endswith("nothing was changed; run 'ralph doctor --fix' after it ends\n")
        assert refused.stderr.count("\n") == 1
        assert path.is_dir()
    finally:
        process.kill()
        process.wait()
    assert pid != process.pid
    assert ("worktree", str(path), True) in kinds(repo, "--fix")
    assert not path.exists() and not path.parent.exists()


def test_a_construct_run_in_another_worktree_of_the_repository_counts(repo, tmp_path):
    """Its construct lock is in that worktree's git directory; its worktrees are in the same list."""
    other = tmp_path / "mine"
    git(repo, "worktree", "add", "-q", "--detach", str(other), "HEAD")
    lock_file = Path(git(other, "rev-parse", "--absolute-git-dir").strip()) / CONSTRUCT_LOCK_NAME
    code = (
        "import sys, time; from pathlib import Path; from ralph.store.lock import exclusive_run\n"
        "with exclusive_run(Path(sys.argv[1]), 'ralph construct'):\n"
        "    print('locked', flush=True); time.sleep(120)\n"
    )
    running = subprocess.Popen(
        [sys.executable, "-c", code, str(lock_file)], stdout=subprocess.PIPE, text=True
    )
    assert running.stdout is not None
    try:
        assert running.stdout.readline() == "locked\n"
        assert "a ralph construct run is active" in doctor(repo, "--fix", code=1).stderr
    finally:
        running.kill()
        running.wait()


def test_leftover_temp_files_are_removed_under_the_plan_lock(repo):
    dead = killed_holder(repo, "plan")  # a pid that no longer runs
    (repo / f".plan.jsonl.{dead}.tmp").write_text("half a plan")
    (repo / ".plan.jsonl.notapid.tmp").write_text("not ralph's")
    found = kinds(repo)
    assert ("temp_file", f".plan.jsonl.{dead}.tmp", False) in found
    assert all(subject != ".plan.jsonl.notapid.tmp" for _, subject, _ in found)
    doctor(repo, "--fix", code=0)
    assert not (repo / f".plan.jsonl.{dead}.tmp").exists()
    assert (repo / ".plan.jsonl.notapid.tmp").exists()


def test_a_temp_file_of_a_write_under_way_is_not_reported(repo):
    writer = holder(repo, "plan")  # holds the plan lock, as a writer does while its temp file exists
    try:
        (repo / f".plan.jsonl.{writer.pid}.tmp").write_text("being written")
        assert doctor(repo, code=0).stdout == "ok: nothing to repair\n"
    finally:
        writer.kill()
        writer.wait()
    assert ("temp_file", f".plan.jsonl.{writer.pid}.tmp", False) in kinds(repo)


def test_a_missing_merge_driver_registration_is_set_in_config_only(repo):
    git(repo, "config", "--remove-section", "merge.ralph")
    assert kinds(repo) == [("merge_driver", ".gitattributes", False)]
    before = untouched(repo)
    assert kinds(repo, "--fix") == [("merge_driver", ".gitattributes", True)]
    assert git(repo, "config", "merge.ralph.driver").endswith(" -m ralph merge-driver %O %A %B %P\n")
    assert untouched(repo) == before


def test_leftover_worktrees_go_and_their_uncommitted_work_is_kept_as_a_patch(repo, tmp_path):
    detached = leftover_worktree(repo, tmp_path, "verify-t-a")
    build = leftover_worktree(repo, tmp_path, "build-t-b", branch="ralph/t-b")
    (build / "half.py").write_text("print('half done')\n")
    (build / "README").write_text("changed by the agent\n")
    gone = leftover_worktree(repo, tmp_path, "verify-t-c")
    subprocess.run(["rm", "-rf", str(gone.parent)], check=True)
    mine = tmp_path / "ralph-mine"  # the user's own, named ralph-something: never ralph's to remove
    git(repo, "worktree", "add", "-q", "-b", "ralph/mine", str(mine), "HEAD")
    before = untouched(repo)

    assert kinds(repo) == [
        ("worktree", str(build), False),
        ("worktree", str(detached), False),
        ("worktree", str(gone), False),
    ]
    assert kinds(repo, "--fix") == [
        ("worktree", str(build), True),
        ("worktree", str(detached), True),
        ("worktree", str(gone), True),
        ("branch", "ralph/t-b", True),  # merged (it has nothing HEAD lacks) and in no worktree now
    ]

    listed = git(repo, "worktree", "list", "--porcelain")
    assert str(mine) in listed and "ralph-verify" not in listed and "ralph-build" not in listed
    assert not any(tmp_path.glob("ralph-*-k1ll3d"))
    patch = repo / "build" / "ralph-logs" / "doctor" / "ralph-build-t-b.patch"
    assert "+print('half done')" in patch.read_text() and "+changed by the agent" in patch.read_text()
    assert git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/ralph/") == "ralph/mine\n"
    assert untouched(repo) == before  # the patch is under build/ralph-logs/, which git ignores
    assert doctor(repo, code=0).stdout == "ok: nothing to repair\n"


def test_a_run_starting_where_ralph_recorded_no_worktree_or_branch_asks_git_for_none(
    repo, tmp_path, monkeypatch
):
    """What every construct run does as it starts: with nothing recorded (the usual case) it asks
    git nothing about worktrees or branches, and a person's worktree named like ralph's stays."""
    mine = tmp_path / "ralph-build-t-mine"
    git(repo, "worktree", "add", "-q", "-b", "ralph/t-mine", str(mine), "HEAD")
    runs = count_git_runs(monkeypatch)
    assert clean_after_killed_run(repo, Repo(repo).git_dir() / CONSTRUCT_LOCK_NAME) == []
    assert [args for args in runs if "worktree" in args or "for-each-ref" in args] == []
    assert mine.is_dir() and str(mine) in git(repo, "worktree", "list", "--porcelain")


def test_a_parallel_build_from_start_to_merge_leaves_a_persons_ralph_branches_and_worktrees_alone(
    repo, tmp_path
):
    """A run's start (clean-up after a killed run), a build in a worktree on a ralph/ branch of its
    own, its merge and its end: what ralph made goes, a person's merged `ralph/feature`, their
    `ralph/unmerged` and their worktree shaped like ralph's old checkouts (an ignored file in it,
    which no patch would keep) stay as they were."""
    hotfix = persons_ralph_names(repo, tmp_path)
    lock = Repo(repo).git_dir() / CONSTRUCT_LOCK_NAME
    tree = loop_work_tree(repo, tmp_path / "events.jsonl")

    assert clean_after_killed_run(repo, lock) == []  # the run's start
    with tree.build_checkout("t-one") as checkout:
        assert checkout.branch == "ralph/t-one"
        (checkout.tree.root / "one.txt").write_text("built\n")
        git(checkout.tree.root, "add", "one.txt")
        git(checkout.tree.root, "commit", "-qm", "ralph(build): t-one One")
        built = git(checkout.tree.root, "rev-parse", "HEAD").strip()
        assert tree.merge_build(checkout, None, [built]).commits
    assert clean_after_killed_run(repo, lock) == []  # the next run's start

    assert (repo / "one.txt").read_text() == "built\n"
    assert set(git(repo, "branch", "--list", "ralph/*").split()) == {"ralph/feature", "ralph/unmerged"}
    assert (hotfix / ".env").read_text() == "SECRET=1\n"
    assert str(hotfix) in git(repo, "worktree", "list", "--porcelain")
    assert "ralph-build-t-one" not in git(repo, "worktree", "list", "--porcelain")


def test_two_killed_runs_of_one_task_keep_two_patches(repo, tmp_path):
    """Each killed build of a task leaves a worktree of the same name: the second patch used to
    replace the first."""
    for run, (text, name) in enumerate((("first\n", "ralph-build-t-b"), ("second\n", "ralph-build-t-b-2"))):
        build = leftover_worktree(repo, tmp_path / f"run{run}", "build-t-b")
        (build / "README").write_text(text)
        predicted = findings(repo)[0]["fix"]
        doctor(repo, "--fix", code=0)
        assert predicted.endswith(f"to build/ralph-logs/doctor/{name}.patch, then removes it")
    patches = repo / "build" / "ralph-logs" / "doctor"
    assert sorted(path.name for path in patches.iterdir()) == [
        "ralph-build-t-b-2.patch",
        "ralph-build-t-b.patch",
    ]
    assert "+first" in (patches / "ralph-build-t-b.patch").read_text()
    assert "+second" in (patches / "ralph-build-t-b-2.patch").read_text()


def test_a_branch_with_unmerged_commits_is_kept_unless_forced(repo, tmp_path):
    build = leftover_worktree(repo, tmp_path, "build-t-b", branch="ralph/t-b")
    (build / "feature.py").write_text("done\n")
    git(build, "add", "feature.py")
    git(build, "commit", "-qm", "ralph(build): t-b Feature")
    commit = git(repo, "rev-parse", "ralph/t-b").strip()
    leftover_branch(repo, "ralph/t-old")  # merged: goes
    git(repo, "branch", "ralph/hers", commit)  # a person's, with the same unmerged commit: never ralph's

    result = doctor(repo, "--fix", code=1)  # what is kept needs a person: not healthy
    assert result.stdout.splitlines()[-2:] == [
        "ralph/t-b: a branch of a ralph run with 1 commit not merged into main;"
        " --fix keeps it (merge it, or --force deletes it)",
        "ralph/t-old: a branch of a ralph run, merged and in no worktree; fixed (--fix deletes it)",
    ]
    assert git(repo, "rev-parse", "ralph/t-b").strip() == commit
    doctor(repo, code=1)

    forced = doctor(repo, "--fix", "--force", code=0).stdout
    assert forced == (
        "ralph/t-b: a branch of a ralph run with 1 commit not merged into main;"
        f" fixed (--fix deletes it (--force; 'git branch ralph/t-b {commit}' restores it))\n"
    )
    assert git(repo, "branch", "--list", "ralph/*") == "  ralph/hers\n"
    git(repo, "branch", "ralph/t-b", commit)  # as the line says: nothing is lost


def test_force_needs_fix(repo):
    result = doctor(repo, "--force", code=2)
    assert result.stderr.startswith("ralph: --force goes with --fix (see ")


@pytest.mark.parametrize("which", ["plan", "construct"])
def test_a_lock_let_go_names_nobody(repo, which):
    process = holder(repo, which)
    process.terminate()  # SIGTERM's default action: killed, the with-block never left
    process.wait()
    path = repo / LOCK_NAME if which == "plan" else repo / ".git" / CONSTRUCT_LOCK_NAME
    assert path.read_text().startswith(f"pid {process.pid}")  # killed by a signal: stale
    code = (
        f"import sys; from pathlib import Path; root = Path(sys.argv[1]); {HOLD[which]}\n"
        "with hold(where):\n    pass\n"
    )
    subprocess.run([sys.executable, "-c", code, str(repo)], check=True)
    assert path.read_text() == ""


def test_a_stale_claim_on_the_shared_remote_is_reported_and_kept(repo, tmp_path, monkeypatch):
    """Judged by the remote's commit times, as runners judge claims, not by claimed_at's text."""
    from ralph.store.transaction import transaction
    from ralph.usecases import tasks
    from tests.support.gitrepo import Shared

    tasks.add(repo, [{"id": "t-aaaaaa", "name": "A"}, {"id": "t-bbbbbb", "name": "B"}])
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2020-01-01T00:00:00+00:00")
    with transaction(repo) as change:  # a runner that died years ago, its clock then far ahead
        change.plan.claim("t-aaaaaa", "dead-runner", "2099-01-01T00:00:00+00:00", host="box-3")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    with transaction(repo) as change:  # one at work now, its clock far behind
        change.plan.claim("t-bbbbbb", "live-runner", "2020-01-01T00:00:00+00:00")
    clone = Shared(repo, tmp_path).clone("clone")
    out = doctor(clone, code=1).stdout
    assert re.search(
        r"origin/main: stale claim on t-aaaaaa by runner dead-runner on box-3 \(claimed \d+ days ago\)", out
    )
    assert "live-runner" not in out
    assert [(f["kind"], f["fixed"]) for f in findings(clone, "--fix")] == [("stale_claim", False)]
    assert not (clone / ".git" / "ralph" / "claims-seen.json").exists()  # a look that changes nothing


def interrupted(repo: Path, kind: IntentKind, **data) -> None:
    """A record of a change as a process that is gone left it."""
    ended = subprocess.Popen(["true"])
    ended.wait()
    record = {"kind": str(kind), "root": str(repo), "pid": ended.pid, "started": None, "data": data}
    folder = intent.folder(Repo(repo))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{kind}-{ended.pid}-1.json").write_text(json.dumps(record))


def test_an_interrupted_build_is_said_to_be_undone_as_fix_undoes_it(repo):
    """doctor's words are what --fix does: a BUILD cut off before its commit is rolled back (its
    changes kept on the task's draft), never committed."""
    ralph = Ralph(repo)
    ralph("task", "add", '{"id": "t-a", "name": "A"}')
    record = next(
        json.loads(line) for line in (repo / "plan.jsonl").read_text().splitlines() if '"t-a"' in line
    )
    head = git(repo, "rev-parse", "HEAD").strip()
    (repo / "half.py").write_text("half a build\n")
    interrupted(repo, IntentKind.BUILD, task="t-a", head=head, record=record, user_dirty=[])
    [found] = findings(repo)
    assert found["kind"] == "interrupted" and found["fix"].startswith("undoes it"), found
    assert "commit" not in found["fix"], found
    [fixed] = findings(repo, "--fix")
    assert fixed["fixed"] and fixed["fix"].startswith("undid it"), fixed
    assert git(repo, "rev-parse", "HEAD").strip() == head  # nothing committed
    assert not (repo / "half.py").exists()
    assert "half.py" in git(repo, "show", "--stat", "--format=", "refs/heads/ralph/draft/t-a")


def half_merged_build(repo: Path, tmp_path: Path) -> tuple[str, str, str]:
    """t-b built on its branch (ralph/t-b, recorded as ralph's), HEAD moved on meanwhile, then its
    merge cut off between moving the index and work tree and moving HEAD, as a SIGKILL leaves it
    (tests/support/leftovers.py's half_merged, for a build). Returns HEAD, the branch's tip and
    the copy of it the merge made onto HEAD."""
    Ralph(repo)("task", "add", '{"id": "t-b", "name": "Feature"}')
    leftover_branch(repo, "ralph/t-b")
    build = tmp_path / "build-t-b"
    git(repo, "worktree", "add", "-q", str(build), "ralph/t-b")
    (build / "feature.py").write_text("built\n")
    tasks.done(build, "t-b", commit=False)  # the build's one commit: its code and its plan
    git(build, "add", "-A")
    git(build, "commit", "-qm", "ralph(build): t-b Feature")
    tip = git(build, "rev-parse", "HEAD").strip()
    git(repo, "worktree", "remove", str(build))
    Ralph(repo)("task", "add", '{"id": "t-c", "name": "Other"}')  # HEAD moves on: the copy is no tip
    head = git(repo, "rev-parse", "HEAD").strip()
    (repo / "feature.py").write_text("built\n")  # the copy: t-b's build on HEAD
    tasks.done(repo, "t-b", commit=False)
    git(repo, "add", "feature.py", "plan.jsonl")
    tree = git(repo, "write-tree").strip()
    git(repo, "reset", "-q", "--hard")
    copy = git(repo, "commit-tree", tree, "-p", head, "-m", "ralph(build): t-b Feature").strip()
    git(repo, "read-tree", "-m", "-u", head, copy)
    interrupted(
        repo, IntentKind.MERGE, head=head, commit=copy, task="t-b", branch="ralph/t-b", tip=tip, record=copy
    )
    return head, tip, copy


def test_an_interrupted_merge_of_a_build_is_finished_by_fix_its_commit_recorded_its_branch_deleted(
    repo, tmp_path
):
    """doctor's words are what --fix does: HEAD to the merge; the build's commit (the copy) recorded
    on its task, uncommitted (doctor commits nothing: the loop's next commit takes it); its branch,
    merged now although its own commit is not in HEAD, deleted."""
    head, tip, copy = half_merged_build(repo, tmp_path)

    [found] = [f for f in findings(repo) if f["kind"] == "interrupted"]
    assert found["fix"].startswith("finishes it"), found
    assert git(repo, "rev-parse", "HEAD").strip() == head  # a report changes nothing
    fixed = doctor(repo, "--fix").stdout
    assert "fixed (--fix finished it: HEAD at " in fixed, fixed
    assert git(repo, "rev-parse", "HEAD").strip() == copy != tip
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == " M plan.jsonl\n"
    task = next(
        json.loads(line) for line in (repo / "plan.jsonl").read_text().splitlines() if '"t-b"' in line
    )
    assert (task["s"], task["commit"]) == ("d", copy) and git(repo, "show", f"{copy}:feature.py") == "built\n"
    assert git(repo, "branch", "--list", "ralph/*") == ""  # merged: deleted
    assert doctor(repo, code=0).stdout == "ok: nothing to repair\n"


@pytest.mark.parametrize("what", ["link", "folder"])
def test_a_lock_that_is_not_a_regular_file_is_named_and_fix_puts_ralphs_back(repo, tmp_path, what):
    """An agent's link (or folder) at plan.jsonl.lock failed every later state command, while
    doctor said nothing needed repair."""
    ralph = Ralph(repo)
    ralph("task", "add", '{"id": "t-a", "name": "A"}')
    target = tmp_path / "elsewhere"
    target.write_text("not ralph's\n")
    (repo / LOCK_NAME).unlink()
    if what == "link":
        (repo / LOCK_NAME).symlink_to(target)
    else:
        (repo / LOCK_NAME).mkdir()
        (repo / LOCK_NAME / "inside").write_text("x\n")
    failed = ralph("task", "add", '{"id": "t-b", "name": "B"}', code=1)
    assert failed.stderr.count("\n") == 1 and "'ralph doctor --fix' puts ralph's back" in failed.stderr
    out = doctor(repo, code=1).stdout
    assert out.startswith(f"{LOCK_NAME}: a lock that is not a regular file but a ")
    assert kinds(repo, "--fix") == [("lock_not_file", LOCK_NAME, True)]
    assert (repo / LOCK_NAME).is_file() and not (repo / LOCK_NAME).is_symlink()
    kept = repo / "build" / "ralph-logs" / "doctor" / LOCK_NAME
    assert kept.is_symlink() if what == "link" else (kept / "inside").read_text() == "x\n"
    assert target.read_text() == "not ralph's\n"
    ralph("task", "add", '{"id": "t-b", "name": "B"}')  # state commands work again
    assert doctor(repo, code=0).stdout == "ok: nothing to repair\n"
