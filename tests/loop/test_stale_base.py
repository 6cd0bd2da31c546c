"""A failed build is waived as a "stale base" only when the code moved, or may yet: commits that
change plan.jsonl alone (a claim, a verdict, another runner's give-back) move no base, and a task
is waived at most once on one code. On real repositories, with a coordinator that always says
other runners are at work (what made three runners give builds back forever)."""

from __future__ import annotations

from pathlib import Path

from ralph.loop.share.coordinator import Solo
from ralph.loop.tree.work_tree import WorkTree
from ralph.plan.records import Verdict
from ralph.store.git import Repo
from tests.support.gitrepo import git
from tests.support.work_trees import loop_work_tree


class OthersAlwaysBuilding(Solo):
    def others_building(self) -> bool:
        return True


def work_tree(root: Path) -> WorkTree:
    return loop_work_tree(root, root.parent / "events.jsonl", OthersAlwaysBuilding())


def commit(root: Path, path: str, text: str) -> str:
    (root / path).write_text(text)
    git(root, "add", path)
    git(root, "commit", "-qm", f"change {path}")
    return git(root, "rev-parse", "HEAD").strip()


def test_a_runners_failure_is_given_back_once_per_code_however_often_the_plan_moves(repo: Path):
    tree = work_tree(repo)
    assert tree.stale_base("t-one", Verdict.AGENT_ERROR)  # others at work: it may lack theirs
    for n in range(3):  # claims, verdicts, give-backs: plan.jsonl alone
        commit(repo, "plan.jsonl", f"{(repo / 'plan.jsonl').read_text()}\n" * (n + 1))
        assert not tree.stale_base("t-one", Verdict.AGENT_ERROR)  # counted: no code came
    commit(repo, "app.py", "print('their build')\n")
    assert tree.stale_base("t-one", Verdict.AGENT_ERROR)  # code moved: once more
    assert not tree.stale_base("t-one", Verdict.AGENT_ERROR)
    assert not tree.stale_base("t-two", Verdict.PERMISSION_VIOLATION)  # its own doing, whatever moved


def test_a_worktree_is_behind_only_when_the_code_moved_past_its_base(repo: Path, tmp_path: Path):
    base = git(repo, "rev-parse", "HEAD").strip()
    path = tmp_path / "ralph-build-t-one"
    Repo(repo).worktrees.add(path, base)
    build = work_tree(repo).for_worktree(path)
    build.base = base
    commit(repo, "plan.jsonl", (repo / "plan.jsonl").read_text() + "\n")
    assert not build.behind() and not build.retry_from_head(Verdict.GATE_FAILED)
    commit(repo, "app.py", "print('a neighbour merged')\n")
    assert build.behind() and build.retry_from_head(Verdict.GATE_FAILED)


def test_code_tree_is_the_same_for_commits_that_differ_in_the_plan_alone(repo: Path):
    git_repo = Repo(repo)
    before = git(repo, "rev-parse", "HEAD").strip()
    planned = commit(repo, "plan.jsonl", (repo / "plan.jsonl").read_text() + "\n")
    coded = commit(repo, "app.py", "x = 1\n")
    assert (
        git_repo.objects.code_tree(before)
        == git_repo.objects.code_tree(planned)
        == git_repo.objects.code_tree("HEAD~1")
    )
    assert git_repo.objects.code_tree(coded) != git_repo.objects.code_tree(planned)
    assert not git_repo.objects.code_differs(before, planned) and git_repo.objects.code_differs(
        planned, coded
    )
