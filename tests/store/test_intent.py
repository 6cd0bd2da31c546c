"""Records of changes of several steps (ralph.store.intent): written before the first step, gone
after the last, and an interrupted one (its process gone) finished or undone as its kind says."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ralph.store import intent, settle
from ralph.store.git import Repo
from ralph.store.intent import IntentKind, Settled
from ralph.usecases import tasks
from tests.support.gitrepo import git
from tests.support.leftovers import half_merged


def ended_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def interrupted(repo: Path, kind: IntentKind, **data) -> None:
    """A record as a process that is gone left it."""
    record = {"kind": str(kind), "root": str(repo), "pid": ended_pid(), "started": None, "data": data}
    folder = intent.folder(Repo(repo))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{kind}-{record['pid']}-1.json").write_text(json.dumps(record))


def test_a_record_is_there_while_its_change_runs_and_gone_after(repo: Path):
    git_repo = Repo(repo)
    change = intent.begin(git_repo, IntentKind.COMMIT, repo, head="abc", paths=["a"], message="m", task=None)
    written = json.loads((intent.folder(git_repo) / change.name).read_text())
    assert written["data"]["paths"] == ["a"] and written["kind"] == "commit"
    assert intent.interrupted(git_repo, repo) == []  # its process (this one) still runs
    intent.finish(git_repo, change)
    assert list(intent.folder(git_repo).iterdir()) == []


def test_a_merge_killed_before_head_moved_is_finished(repo: Path):
    head, commit = half_merged(repo, "t-b", ended_pid())
    [outcome] = settle.settle_all(Repo(repo), repo)
    assert outcome.settled is Settled.FINISHED
    assert outcome.line() == f"a merge of t-b into {head[:12]}, interrupted: finished (HEAD at {commit[:12]})"
    assert git(repo, "rev-parse", "HEAD").strip() == commit
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert intent.interrupted(Repo(repo), repo) == []


def test_a_merge_whose_files_a_person_changed_since_is_left_for_them(repo: Path):
    head, _ = half_merged(repo, "t-b", ended_pid())
    (repo / "feature.py").write_text("a person's edit\n")
    [outcome] = settle.settle_all(Repo(repo), repo)
    assert outcome.settled is Settled.LEFT and "feature.py" in outcome.detail
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert (repo / "feature.py").read_text() == "a person's edit\n"
    assert len(intent.interrupted(Repo(repo), repo)) == 1  # kept: doctor shows it until resolved


def test_a_build_commit_killed_after_staging_is_committed_and_recorded_on_its_task(repo: Path):
    tasks.add(repo, [{"id": "t-a", "name": "A"}])
    head = git(repo, "rev-parse", "HEAD").strip()
    (repo / "code.py").write_text("built\n")
    git(repo, "add", "code.py")  # the kill came between `git add` and `git commit`
    message = "ralph(build): t-a A"
    interrupted(
        repo, IntentKind.COMMIT, head=head, paths=["code.py", "plan.jsonl"], message=message, task="t-a"
    )
    [outcome] = settle.settle_all(Repo(repo), repo)
    assert outcome.settled is Settled.FINISHED
    commit = git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "log", "-1", "--format=%s").strip() == message
    assert git(repo, "show", "HEAD:code.py") == "built\n"
    task = next(
        json.loads(line) for line in (repo / "plan.jsonl").read_text().splitlines() if '"t-a"' in line
    )
    assert task["commit"] == commit
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == " M plan.jsonl\n"


def test_a_plan_killed_while_its_agent_ran_is_undone_and_its_tasks_kept(repo: Path):
    before = (repo / "plan.jsonl").read_bytes()
    saved = git(repo, "hash-object", "-w", "plan.jsonl").strip()
    tasks.add(repo, [{"id": "t-half", "name": "Half a plan"}], commit=False)
    interrupted(repo, IntentKind.PLAN, spec="specs/app.md", before=saved, phase="agent")
    [outcome] = settle.settle_all(Repo(repo), repo)
    assert outcome.settled is Settled.UNDONE
    assert (repo / "plan.jsonl").read_bytes() == before
    kept = repo / "build" / "ralph-logs" / "doctor" / "plan-app.plan.jsonl"
    assert '"t-half"' in kept.read_text()
    assert outcome.line().endswith(f"undone (the plan it left kept as {kept.relative_to(repo)})")


def test_a_plan_killed_after_its_agent_finished_is_committed(repo: Path):
    tasks.add(repo, [{"id": "t-whole", "name": "A whole plan"}], commit=False)
    interrupted(
        repo, IntentKind.PLAN, spec="specs/app.md", before="0" * 40, phase="planned", message="ralph(plan): x"
    )
    [outcome] = settle.settle_all(Repo(repo), repo)
    assert outcome.settled is Settled.FINISHED
    assert '"t-whole"' in git(repo, "show", "HEAD:plan.jsonl")
    assert git(repo, "status", "--porcelain") == ""


def test_a_plan_killed_after_its_agent_finished_commits_its_tasks_and_not_a_persons_beside_it(repo: Path):
    """A person's `ralph task add` beside the run went into plan.jsonl uncommitted, noted in the
    ledger (ralph.store.beside): PLAN's commit takes PLAN's tasks alone; theirs stay for the
    start to commit under their own message."""
    from ralph.store import beside

    saved = git(repo, "hash-object", "-w", "plan.jsonl").strip()
    tasks.add(repo, [{"id": "t-planned", "name": "From the spec"}], commit=False)
    tasks.add(repo, [{"id": "t-theirs", "name": "A person's"}], commit=False)
    beside.record(Repo(repo), ended_pid(), "ralph: task add t-theirs A person's", ["t-theirs"])
    interrupted(
        repo, IntentKind.PLAN, spec="specs/app.md", before=saved, phase="planned", message="ralph(plan): x"
    )

    [outcome] = settle.settle_all(Repo(repo), repo)

    assert outcome.settled is Settled.FINISHED
    committed = git(repo, "show", "HEAD:plan.jsonl")
    assert '"t-planned"' in committed and '"t-theirs"' not in committed
    assert '"t-theirs"' in (repo / "plan.jsonl").read_text()  # theirs, still in the file


def test_a_record_of_another_work_tree_is_not_this_ones(repo: Path, tmp_path: Path):
    interrupted(repo, IntentKind.COMMIT, head="x", paths=["a"], message="m")
    assert intent.interrupted(Repo(repo), tmp_path) == []
    assert len(intent.interrupted(Repo(repo), repo)) == 1


def test_a_commit_whose_branch_moved_on_since_is_overtaken_and_its_record_removed(repo: Path):
    head = git(repo, "rev-parse", "HEAD").strip()
    interrupted(
        repo, IntentKind.COMMIT, head=head, paths=["code.py"], message="ralph(build): t-a A", task=None
    )
    for n in (1, 2):  # a person committed twice since: HEAD is neither the base nor its child
        git(repo, "commit", "-q", "--allow-empty", "-m", f"a person's commit {n}")
    moved = git(repo, "rev-parse", "HEAD").strip()

    [outcome] = settle.settle_all(Repo(repo), repo)

    assert outcome.settled is Settled.OVERTAKEN
    assert outcome.line().endswith(
        f"interrupted: overtaken, its record removed (HEAD moved since, to {moved[:12]})"
    )
    assert git(repo, "rev-parse", "HEAD").strip() == moved  # nothing of the person's was touched
    assert intent.interrupted(Repo(repo), repo) == []
