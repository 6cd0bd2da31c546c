"""ralph.store.integrate: a build's branch merged into HEAD as one commit, code through git's
merge and plan.jsonl by record, or nothing changed at all when something conflicts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ralph.plan.loader import load
from ralph.store.git import Repo
from ralph.store.integrate import integrate, merge_commits, move_head
from ralph.store.transaction import transaction
from ralph.usecases import tasks
from tests.support.gitrepo import git


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture
def setup(repo: Path, tmp_path: Path):
    """Two tasks committed, `shared.txt` committed, and a worktree on branch ralph/b from HEAD."""
    (repo / "shared.txt").write_text("one\ntwo\nthree\n")
    git(repo, "add", "shared.txt")
    git(repo, "commit", "-qm", "shared")
    first, second = (record["id"] for record in tasks.add(repo, [{"name": "First"}, {"name": "Second"}]))
    tree = tmp_path / "wt"
    start = head(repo)
    Repo(repo).worktrees.add_on_branch(tree, "ralph/b", start)
    return repo, tree, first, second, (repo / "plan.jsonl").read_bytes(), start


def done_in(root: Path, task_id: str) -> None:
    tasks.done(root, task_id)


def statuses(data: bytes) -> dict[str, str]:
    doc = load(data)
    return {
        line.record["id"]: line.record.get("s", "p")
        for line in doc.lines
        if line.record and line.record["t"] == "task"
    }


def test_code_and_plan_merge_into_one_commit_with_the_loops_own_changes(setup):
    repo, tree, first, second, base, start = setup
    (tree / "new.txt").write_text("built\n")
    done_in(tree, second)  # commits plan.jsonl on the branch
    git(tree, "add", "new.txt")
    git(tree, "commit", "-qm", "ralph(build): second")
    (repo / "shared.txt").write_text("ONE\ntwo\nthree\n")  # meanwhile on the loop's branch
    git(repo, "commit", "-qam", "other work")
    done_in(repo, first)  # a plan change of the loop's, committed
    before = head(repo)

    merged = integrate(Repo(repo), start, head(tree), base)

    assert merged.conflicts == [] and merged.commit == head(repo)
    # a copy of each branch commit, in order, on top of what was there
    assert git(repo, "rev-parse", "HEAD~2").strip() == before
    assert git(repo, "log", "-2", "--format=%s").splitlines() == [
        "ralph(build): second",
        git(tree, "log", "-1", "--format=%s", "HEAD~1").strip(),
    ]
    assert sorted(merged.commits) == sorted(git(tree, "rev-list", f"{start}..HEAD").split())
    assert merged.commits[head(tree)] == head(repo)
    assert (repo / "new.txt").read_text() == "built\n"
    assert (repo / "shared.txt").read_text() == "ONE\ntwo\nthree\n"
    assert statuses((repo / "plan.jsonl").read_bytes()) == {first: "d", second: "d"}
    assert git(repo, "status", "--porcelain").strip() == ""


def test_uncommitted_plan_changes_of_the_loop_are_kept_and_committed(setup):
    repo, tree, first, second, base, start = setup
    done_in(tree, second)
    from ralph.store import transaction

    with transaction.transaction(repo, commit=False) as change:  # written, not committed
        change.plan.update_state(stage="BUILD")
    merged = integrate(Repo(repo), start, head(tree), base)
    assert merged.commit
    committed = git(repo, "show", "HEAD:plan.jsonl")
    assert '"stage":"BUILD"' in committed.replace(" ", "") and statuses(committed.encode())[second] == "d"
    assert git(repo, "status", "--porcelain").strip() == ""


def test_a_code_conflict_changes_nothing_and_names_the_file(setup):
    repo, tree, first, second, base, start = setup
    (tree / "shared.txt").write_text("uno\ntwo\nthree\n")
    git(tree, "commit", "-qam", "branch edit")
    (repo / "shared.txt").write_text("ONE\ntwo\nthree\n")
    git(repo, "commit", "-qam", "main edit")
    with_state = (repo / "plan.jsonl").read_bytes() + b""
    before, files = head(repo), git(repo, "status", "--porcelain")

    merged = integrate(Repo(repo), start, head(tree), base)

    assert merged.commit is None and merged.conflicts == ["shared.txt"]
    assert head(repo) == before and git(repo, "status", "--porcelain") == files
    assert (repo / "shared.txt").read_text() == "ONE\ntwo\nthree\n"
    assert (repo / "plan.jsonl").read_bytes() == with_state
    assert not (repo / ".git" / "MERGE_HEAD").exists()


def test_a_users_uncommitted_edit_in_the_way_is_a_conflict_and_stays(setup):
    repo, tree, first, second, base, start = setup
    (tree / "shared.txt").write_text("uno\ntwo\nthree\n")
    git(tree, "commit", "-qam", "branch edit")
    (repo / "shared.txt").write_text("the user's edit\n")  # not committed
    merged = integrate(Repo(repo), start, head(tree), base)
    assert merged.conflicts == ["shared.txt"] and merged.commit is None
    assert (repo / "shared.txt").read_text() == "the user's edit\n"


def test_plan_changes_that_conflict_are_a_conflict(setup):
    repo, tree, first, second, base, start = setup
    done_in(tree, first)
    tasks.delete(repo, first)  # deleted on one side, changed on the other: the rules' conflict
    merged = integrate(Repo(repo), start, head(tree), base)
    assert merged.conflicts == ["plan.jsonl"] and merged.commit is None


def test_a_branch_with_nothing_new_merges_nothing(setup):
    repo, tree, _, _, base, start = setup
    before = head(repo)
    assert integrate(Repo(repo), start, head(tree), base).commit is None
    assert head(repo) == before


def test_a_merge_made_in_the_object_store_moves_nothing_until_move_head(setup):
    repo, tree, first, second, _, _ = setup
    (tree / "new.txt").write_text("built\n")
    done_in(tree, second)
    git(tree, "add", "new.txt")
    git(tree, "commit", "-qm", "theirs")
    done_in(repo, first)
    ours, theirs = head(repo), head(tree)

    merged = merge_commits(Repo(repo), ours, theirs, "ralph: merge theirs")
    assert merged.commit is not None

    assert head(repo) == ours and not (repo / "new.txt").exists()
    assert git(repo, "rev-list", "--parents", "-n1", merged.commit).split()[1:] == [ours, theirs]
    in_merge = git(repo, "show", f"{merged.commit}:plan.jsonl").encode()
    assert statuses(in_merge)[first] == "d" and statuses(in_merge)[second] == "d"

    with transaction(repo, commit=False) as change:  # meanwhile a change nobody committed
        change.plan.add_tasks([{"name": "Third"}])
    move_head(Repo(repo), ours, merged.commit)

    assert head(repo) == merged.commit and (repo / "new.txt").read_text() == "built\n"
    now = statuses((repo / "plan.jsonl").read_bytes())
    assert len(now) == 3 and now[first] == now[second] == "d"  # the merge and the loose change
    assert git(repo, "status", "--porcelain") == " M plan.jsonl\n"  # still uncommitted, as it was


def test_plan_jsonl_is_in_place_before_git_moves_the_work_tree(setup, monkeypatch):
    """git's checkout unlinks a file and writes it anew, and a reader without the lock (the loop
    choosing its next build, `ralph status`) would find no plan.jsonl: when read-tree runs, the
    file and its index entry already hold the merged plan, so git leaves the file alone."""
    repo, tree, first, second, base, start = setup
    (tree / "new.txt").write_text("built\n")
    done_in(tree, second)
    git(tree, "add", "new.txt")
    git(tree, "commit", "-qm", "ralph(build): second")
    seen: list[tuple[bool, bool]] = []
    real_git = Repo.git

    def spying(self: Repo, *args: str, **kwargs) -> str:
        if args[:1] == ("read-tree",):
            target = args[-1]
            in_place = (self.root / "plan.jsonl").read_bytes() == self.objects.file_at(target, "plan.jsonl")
            staged = self.attempt("diff-index", "--cached", "--quiet", target, "--", "plan.jsonl")[0] == 0
            seen.append((in_place, staged))
        return real_git(self, *args, **kwargs)

    monkeypatch.setattr(Repo, "git", spying)
    merged = integrate(Repo(repo), start, head(tree), base)
    assert merged.commit == head(repo) and seen == [(True, True)]
    assert git(repo, "status", "--porcelain") == ""


NOT_UTF8 = os.fsdecode(b"caf\xe9.txt")  # a Latin-1 name: bytes that are no UTF-8


def test_a_file_whose_name_is_not_utf8_merges_under_its_own_name(setup):
    repo, tree, first, second, base, start = setup
    (tree / NOT_UTF8).write_bytes(b"built\n")
    git(tree, "add", "-A")
    git(tree, "commit", "-qm", "ralph(build): a Latin-1 name")

    merged = integrate(Repo(repo), start, head(tree), base)

    assert merged.conflicts == [] and merged.commit == head(repo)
    assert os.listdir(os.fsencode(repo)).count(b"caf\xe9.txt") == 1
    assert (repo / NOT_UTF8).read_bytes() == b"built\n"
    assert git(repo, "status", "--porcelain").strip() == ""


def test_a_persons_edit_to_a_file_whose_name_is_not_utf8_is_in_the_way_and_stays(setup):
    repo, tree, first, second, base, start = setup
    (repo / NOT_UTF8).write_bytes(b"one\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a Latin-1 name")
    Repo(tree).git("merge", "-q", "--ff-only", head(repo))
    (tree / NOT_UTF8).write_bytes(b"the build's\n")
    git(tree, "commit", "-qam", "branch edit")
    (repo / NOT_UTF8).write_bytes(b"a person's edit\n")  # not committed

    merged = integrate(Repo(repo), head(repo), head(tree), (repo / "plan.jsonl").read_bytes())

    assert merged.commit is None and merged.conflicts == [NOT_UTF8]
    assert (repo / NOT_UTF8).read_bytes() == b"a person's edit\n"
