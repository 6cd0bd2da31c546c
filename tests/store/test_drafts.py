"""Drafts (ralph.store.drafts): unfinished work committed on ralph/draft/<task id> through an index
of its own, the branch ralph's by record, a person's branch never moved or deleted."""

from __future__ import annotations

from pathlib import Path

from ralph.store import drafts, owned
from ralph.store.git import Repo
from ralph.store.owned import OwnedKind
from tests.support.gitrepo import git
from tests.support.present import present


def _base(repo: Path) -> str:
    (repo / "a.txt").write_text("a as committed\n")
    (repo / "gone.txt").write_text("to be deleted by the agent\n")
    git(repo, "add", "a.txt", "gone.txt")
    git(repo, "commit", "-qm", "base")
    return git(repo, "rev-parse", "HEAD").strip()


def test_a_draft_holds_the_agents_files_and_leaves_the_index_and_work_tree_alone(repo: Path):
    base = _base(repo)
    (repo / "a.txt").write_text("a as the agent left it\n")
    (repo / "new.txt").write_text("the agent's new file\n")
    (repo / "gone.txt").unlink()
    (repo / "mine.txt").write_text("a person's staged file\n")
    git(repo, "add", "mine.txt")
    index = (repo / ".git" / "index").read_bytes()
    status = git(repo, "status", "--porcelain")

    branch = present(drafts.keep(Repo(repo), "t-one", base, {"a.txt", "new.txt", "gone.txt"}, "draft"))

    assert branch == "ralph/draft/t-one"
    assert (repo / ".git" / "index").read_bytes() == index
    assert git(repo, "status", "--porcelain") == status
    assert git(repo, "show", f"{branch}:a.txt") == "a as the agent left it\n"
    assert git(repo, "show", f"{branch}:new.txt") == "the agent's new file\n"
    files = git(repo, "ls-tree", "-r", "--name-only", branch).split()
    assert "gone.txt" not in files and "mine.txt" not in files  # the person's file is not the agent's
    assert git(repo, "rev-parse", f"{branch}^").strip() == base
    (record,) = [o for o in owned.recorded(Repo(repo)) if o.kind is OwnedKind.DRAFT]
    assert (record.name, record.task) == (branch, "t-one")
    assert record.start == git(repo, "rev-parse", branch).strip()


def test_a_persons_branch_of_the_drafts_name_is_never_moved_nor_deleted(repo: Path):
    base = _base(repo)
    git(repo, "branch", "ralph/draft/t-one", "HEAD~1")
    theirs = git(repo, "rev-parse", "ralph/draft/t-one").strip()
    (repo / "a.txt").write_text("work\n")

    branch = present(drafts.keep(Repo(repo), "t-one", base, {"a.txt"}, "draft"))

    assert branch == "ralph/draft/t-one-2"
    assert git(repo, "rev-parse", "ralph/draft/t-one").strip() == theirs
    assert present(drafts.delete(Repo(repo), "t-one")).name == "ralph/draft/t-one-2"
    assert git(repo, "rev-parse", "ralph/draft/t-one").strip() == theirs
    assert not Repo(repo).worktrees.branch_exists("ralph/draft/t-one-2")
    assert drafts.draft_of(Repo(repo), "t-one") is None


def test_a_newer_draft_replaces_ralphs_older_one_moving_forward(repo: Path):
    base = _base(repo)
    (repo / "a.txt").write_text("first try\n")
    first = present(drafts.keep(Repo(repo), "t-one", base, {"a.txt"}, "draft"))
    older = git(repo, "rev-parse", first).strip()
    (repo / "a.txt").write_text("second try\n")

    second = present(drafts.keep(Repo(repo), "t-one", base, {"a.txt"}, "draft"))

    assert second == first
    assert git(repo, "show", f"{second}:a.txt") == "second try\n"
    parents = git(repo, "rev-list", "--parents", "-n1", second).split()[1:]
    assert parents == [base, older]  # a fast-forward of the older draft: a push needs no force
    assert len([o for o in owned.recorded(Repo(repo)) if o.kind is OwnedKind.DRAFT]) == 1


def test_a_draft_a_person_committed_on_is_theirs(repo: Path):
    base = _base(repo)
    (repo / "a.txt").write_text("first try\n")
    first = present(drafts.keep(Repo(repo), "t-one", base, {"a.txt"}, "draft"))
    mine = git(repo, "commit-tree", "-m", "mine", f"{first}^{{tree}}", "-p", first).strip()
    git(repo, "update-ref", f"refs/heads/{first}", mine)
    (repo / "a.txt").write_text("second try\n")

    second = present(drafts.keep(Repo(repo), "t-one", base, {"a.txt"}, "draft"))

    assert second == "ralph/draft/t-one-2"
    assert git(repo, "rev-parse", first).strip() == mine
    drafts.delete(Repo(repo), "t-one")
    assert git(repo, "rev-parse", first).strip() == mine


def test_a_draft_is_pushed_and_its_replacement_pushed_again_without_force(shared):
    from ralph.store.remote import Remote

    one = shared.clone("one")
    base = _base(one)
    (one / "a.txt").write_text("first try\n")
    branch = present(drafts.keep(Repo(one), "t-one", base, {"a.txt"}, "draft"))
    assert Remote(Repo(one)).push_branch(branch)
    (one / "a.txt").write_text("second try\n")
    drafts.keep(Repo(one), "t-one", base, {"a.txt"}, "draft")

    assert Remote(Repo(one)).push_branch(branch)  # the newer draft is a fast-forward of the older

    pushed = git(shared.origin, "rev-parse", f"refs/heads/{branch}").strip()
    assert pushed == git(one, "rev-parse", branch).strip()
    assert git(shared.origin, "show", f"{branch}:a.txt") == "second try\n"
