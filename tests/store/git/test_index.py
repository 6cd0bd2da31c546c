"""ralph.store.git.index against real git repositories: what each commit commits, stages and
leaves alone."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from ralph.errors import GitError
from ralph.store.blobs import blob_sha
from ralph.store.git import Repo
from ralph.store.git.index import Index
from tests.support.gitfiles import commit_all, files_of, git_bytes, head, status
from tests.support.gitrepo import git

# --- commit_file -----------------------------------------------------------------------------


def test_commit_file_commits_only_that_file_and_keeps_the_users_index(work):
    (work / "a.txt").write_text("a staged\n")
    git(work, "add", "a.txt")
    (work / "a.txt").write_text("a staged, then changed again\n")  # staged and unstaged at once
    (work / "b.txt").write_text("b unstaged\n")
    (work / "new.txt").write_text("staged new file\n")
    git(work, "add", "new.txt")
    (work / "untracked.txt").write_text("untracked\n")
    status_before = status(work)
    staged_before = git(work, "diff", "--cached")
    unstaged_before = git(work, "diff")
    parent = head(work)

    data = b'{"t": "task", "id": "t-aaaaaa", "name": "A"}\n'
    (work / "plan.jsonl").write_bytes(data)
    commit, entries = Repo(work).index.commit_file("plan.jsonl", data, "ralph: add a task\n\nbody")

    assert commit == head(work)
    assert git(work, "rev-parse", "HEAD^").strip() == parent
    assert files_of(work) == ["plan.jsonl"]
    assert git_bytes(work, "show", "HEAD:plan.jsonl") == data
    assert git(work, "log", "-1", "--format=%B").strip() == "ralph: add a task\n\nbody"
    assert f"100644 blob {blob_sha(data)}\tplan.jsonl".encode() in entries
    # The user's work is exactly as it was: nothing of it committed, unstaged or staged.
    assert status(work) == status_before
    assert git(work, "diff", "--cached") == staged_before
    assert git(work, "diff") == unstaged_before
    assert "plan.jsonl" not in status(work)
    assert git_bytes(work, "show", "HEAD:a.txt") == b"a\n"


def test_commit_file_returns_none_when_head_has_those_bytes(repo):
    repo_ = Repo(repo)
    before = head(repo)
    data = (repo / "plan.jsonl").read_bytes()
    commit, entries = repo_.index.commit_file("plan.jsonl", data, "nothing to say")
    assert commit is None
    assert head(repo) == before
    assert entries == repo_.objects.snapshot()[1]


def test_commit_files_commits_several_files_and_nothing_else_in_one_commit(bare_repo):
    (bare_repo / "other.txt").write_text("staged by the user\n")
    git(bare_repo, "add", "other.txt")
    repo_ = Repo(bare_repo)
    files = {"plan.jsonl": b"", ".gitignore": b"/build/ralph-logs/\n"}
    for name, data in files.items():
        (bare_repo / name).write_bytes(data)

    commit, _ = repo_.index.commit_files(files, "ralph: init")

    assert commit == head(bare_repo) and git(bare_repo, "rev-list", "--count", "HEAD").strip() == "1"
    assert git(bare_repo, "ls-tree", "--name-only", "HEAD").split() == [".gitignore", "plan.jsonl"]
    assert status(bare_repo) == "A  other.txt\n"  # the two are clean, the user's file still staged
    assert repo_.index.commit_files(files, "again") == (
        None,
        repo_.objects.snapshot()[1],
    )  # nothing to commit


def test_commit_file_before_the_first_commit(bare_repo):
    (bare_repo / "other.txt").write_text("staged by the user\n")
    git(bare_repo, "add", "other.txt")
    repo_ = Repo(bare_repo)
    assert repo_.objects.snapshot() == (None, [])

    data = b"first\n"
    (bare_repo / "plan.jsonl").write_bytes(data)
    commit, entries = repo_.index.commit_file("plan.jsonl", data, "ralph: init")

    assert commit == head(bare_repo)
    assert git(bare_repo, "rev-list", "--count", "HEAD").strip() == "1"
    assert git(bare_repo, "ls-tree", "--name-only", "HEAD").split() == ["plan.jsonl"]
    assert entries == [f"100644 blob {blob_sha(data)}\tplan.jsonl".encode()]
    assert status(bare_repo) == "A  other.txt\n"  # still staged, not committed


def test_a_plan_commit_keeps_a_name_that_is_not_utf8(work):
    """The tree is rebuilt from HEAD's entries: a name decoded and encoded again would be renamed."""
    (work / "caf\udce9.txt").write_text("latin-1 name\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "a latin-1 name")
    (work / "plan.jsonl").write_bytes(b"{}\n")
    Repo(work).index.commit_file("plan.jsonl", b"{}\n", "ralph: a plan commit")
    assert b"caf\xe9.txt" in git_bytes(work, "ls-tree", "--name-only", "-z", "HEAD").split(b"\0")
    assert files_of(work) == ["plan.jsonl"]
    assert status(work) == ""


def test_commit_file_is_a_compare_and_swap(work):
    repo_ = Repo(work)
    base = repo_.objects.snapshot()
    (work / "a.txt").write_text("committed meanwhile\n")
    git(work, "commit", "-qam", "someone else's commit")
    other = head(work)

    with pytest.raises(GitError, match="update-ref"):
        repo_.index.commit_file("plan.jsonl", b"stale\n", "ralph: from a stale snapshot", base)

    assert head(work) == other
    assert git(work, "log", "-1", "--format=%s").strip() == "someone else's commit"
    # With a current snapshot it commits on top of the other commit.
    commit, _ = repo_.index.commit_file("plan.jsonl", b"fresh\n", "ralph: fresh")
    assert git(work, "rev-parse", f"{commit}^").strip() == other


def test_commit_file_before_the_first_commit_does_not_overwrite_one_made_meanwhile(bare_repo):
    repo_ = Repo(bare_repo)
    base = repo_.objects.snapshot()
    commit_all(bare_repo, {"x.txt": "x\n"}, "the first commit, made meanwhile")
    first = head(bare_repo)
    with pytest.raises(GitError):
        repo_.index.commit_file("plan.jsonl", b"late\n", "ralph: init", base)
    assert head(bare_repo) == first


# --- commit_paths ----------------------------------------------------------------------------


def test_commit_paths_commits_exactly_the_given_paths(work):
    (work / "a.txt").write_text("agent's change\n")
    (work / "c.txt").unlink()
    (work / "created").mkdir()
    (work / "created" / "f.txt").write_text("agent's new file\n")
    (work / "b.txt").write_text("user's unstaged change\n")
    (work / "sub" / "e.txt").write_text("user's staged change\n")
    git(work, "add", "sub/e.txt")
    (work / "user.txt").write_text("user's untracked file\n")
    staged_before = git(work, "diff", "--cached", "--", "sub/e.txt")

    commit, files = Repo(work).index.commit_paths({"a.txt", "c.txt", "created/f.txt"}, "ralph: build t-x")

    assert commit == head(work)
    assert files == ["a.txt", "c.txt", "created/f.txt"]
    assert sorted(files_of(work)) == ["a.txt", "c.txt", "created/f.txt"]
    assert git(work, "log", "-1", "--format=%s").strip() == "ralph: build t-x"
    assert git_bytes(work, "show", "HEAD:created/f.txt") == b"agent's new file\n"
    assert status(work) == " M b.txt\nM  sub/e.txt\n?? user.txt\n"
    assert git(work, "diff", "--cached", "--", "sub/e.txt") == staged_before


def test_commit_paths_with_nothing_different_commits_nothing(work):
    before = head(work)
    (work / "b.txt").write_text("dirty, but not named\n")
    assert Repo(work).index.commit_paths({"a.txt"}, "nothing") == (None, [])
    assert Repo(work).index.commit_paths(set(), "nothing") == (None, [])
    assert head(work) == before


def test_commit_paths_skips_the_users_hooks(work):
    hooks = work / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in ("pre-commit", "commit-msg"):
        (hooks / name).write_text("#!/bin/sh\necho refused by hook >&2\nexit 1\n")
        (hooks / name).chmod(0o755)
    (work / "a.txt").write_text("changed\n")
    with pytest.raises(subprocess.CalledProcessError):  # the hook does run for a plain commit
        git(work, "commit", "-qam", "by hand")

    commit, files = Repo(work).index.commit_paths({"a.txt"}, "ralph: despite hooks")
    assert commit == head(work) and files == ["a.txt"]
    assert git(work, "log", "-1", "--format=%s").strip() == "ralph: despite hooks"


def test_a_commit_of_the_plan_alone_stages_it_as_git_add_does(work):
    # Its objects are written by ralph (not hashed by `git add`, then again by `git commit --
    # plan.jsonl`), and the index still gets the file's stat data: `git status` need not hash it.
    plan = work / "plan.jsonl"
    plan.write_bytes(b'{"t": "config"}\n')
    (work / "b.txt").write_text("user's unstaged change\n")
    (work / "sub" / "e.txt").write_text("user's staged change\n")
    git(work, "add", "sub/e.txt")

    commit, files = Repo(work).index.commit_paths({"plan.jsonl"}, "ralph: the plan")

    assert commit == head(work) and files == ["plan.jsonl"]
    assert files_of(work) == ["plan.jsonl"]
    assert git_bytes(work, "show", "HEAD:plan.jsonl") == plan.read_bytes()
    assert git(work, "log", "-1", "--format=%s").strip() == "ralph: the plan"
    assert f"size: {plan.stat().st_size}\t" in git(work, "ls-files", "--debug", "--", "plan.jsonl")
    assert status(work) == " M b.txt\nM  sub/e.txt\n"
    assert Repo(work).index.commit_paths({"plan.jsonl"}, "again") == (None, [])


def test_a_plan_commit_a_kill_cut_short_after_head_moved_is_finished_by_staging_it(work):
    # HEAD holds the plan, the index still the one before (killed between the two): nothing is
    # committed again, and the index is brought to what HEAD holds.
    plan = work / "plan.jsonl"
    plan.write_bytes(b'{"t": "config"}\n')
    Repo(work).index.commit_paths({"plan.jsonl"}, "ralph: the plan")
    before = git(work, "rev-parse", "HEAD:plan.jsonl").strip()
    plan.write_bytes(b'{"t": "config", "commit": true}\n')
    commit, _ = Repo(work).index.commit_paths({"plan.jsonl"}, "ralph: the plan again")
    git(work, "update-index", "--cacheinfo", f"100644,{before},plan.jsonl")  # as the kill left it
    assert status(work) == "MM plan.jsonl\n"

    assert Repo(work).index.commit_paths({"plan.jsonl"}, "ralph: settled") == (None, [])
    assert head(work) == commit and status(work) == ""


def test_a_plan_written_while_it_is_committed_is_left_unstaged(work, monkeypatch):
    plan = work / "plan.jsonl"
    plan.write_bytes(b'{"t": "config"}\n')
    land = Index.land

    def written_meanwhile(self: Index, prepared: Any, from_work_tree: bool = False) -> None:
        plan.write_bytes(b'{"t": "config", "commit": true}\n')  # before `git add` reads it
        land(self, prepared, from_work_tree)

    monkeypatch.setattr(Index, "land", written_meanwhile)
    commit, _ = Repo(work).index.commit_paths({"plan.jsonl"}, "ralph: the plan")

    assert git_bytes(work, "show", f"{commit}:plan.jsonl") == b'{"t": "config"}\n'
    assert status(work) == " M plan.jsonl\n"  # the index holds what was committed, not the new bytes


def test_a_plan_that_is_a_link_is_committed_as_a_link_never_as_what_it_points_at(work, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("not the repository's\n")
    (work / "plan.jsonl").unlink(missing_ok=True)
    (work / "plan.jsonl").symlink_to(outside)

    Repo(work).index.commit_paths({"plan.jsonl"}, "ralph: the plan")

    assert git(work, "ls-tree", "HEAD", "plan.jsonl").startswith("120000 blob ")  # as `git add` has it
    assert git_bytes(work, "show", "HEAD:plan.jsonl") == str(outside).encode()


def test_a_plan_executable_in_head_keeps_the_mode_git_add_gives_it(work):
    plan = work / "plan.jsonl"
    plan.write_bytes(b'{"t": "config"}\n')
    plan.chmod(0o755)
    git(work, "add", "plan.jsonl")
    git(work, "commit", "-qm", "executable")
    plan.chmod(0o644)
    plan.write_bytes(b'{"t": "config", "commit": true}\n')

    Repo(work).index.commit_paths({"plan.jsonl"}, "ralph: the plan")

    assert git(work, "ls-tree", "HEAD", "plan.jsonl").startswith("100644 blob ")
    assert status(work) == ""


def test_commit_paths_takes_a_bracketed_name_literally(pages):
    commit, files = Repo(pages).index.commit_paths({"pages/[id].js"}, "ralph: the route only")
    assert files == ["pages/[id].js"]
    assert files_of(pages) == ["pages/[id].js"]
    assert status(pages) == " M pages/d.js\n M pages/i.js\n"


def test_commit_paths_takes_the_agents_git_rm_and_git_mv(work):
    git(work, "rm", "-q", "c.txt")
    git(work, "mv", "d.txt", "moved.txt")
    (work / "a.txt").unlink()  # deleted without git: still in the index
    repo_ = Repo(work)
    commit, files = repo_.index.commit_paths(repo_.changes.paths(), "ralph: build with git rm and git mv")
    assert commit == head(work)
    assert files == ["a.txt", "c.txt", "d.txt", "moved.txt"]
    assert git(work, "show", "--name-status", "--no-renames", "--format=", "HEAD").split() == [
        "D",
        "a.txt",
        "D",
        "c.txt",
        "D",
        "d.txt",
        "A",
        "moved.txt",
    ]
    assert status(work) == ""
