"""ralph.store.git.Repo against real git repositories: what each operation commits, stages and
leaves alone."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ralph.errors import GitError
from ralph.store.blobs import blob_sha
from ralph.store.git import Repo
from tests.support.gitrepo import git
from tests.support.gitruns import count_git_runs


def git_bytes(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True).stdout


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def files_of(root: Path, commit: str = "HEAD") -> list[str]:
    """The paths a commit changed."""
    return git(root, "show", "--name-only", "--format=", commit).split()


def status(root: Path) -> str:
    return git(root, "status", "--porcelain=v1", "--untracked-files=all")


def commit_all(root: Path, files: dict[str, str], message: str = "files") -> str:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "add", "--", *files)
    git(root, "commit", "-qm", message)
    return head(root)


@pytest.fixture
def work(repo: Path) -> Path:
    """A repository with a few committed files besides ralph's."""
    commit_all(repo, {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "d.txt": "d\n", "sub/e.txt": "e\n"})
    return repo


# --- blob_sha ------------------------------------------------------------------------


# The last two: either side of the size where blob_sha turns from CPython's SHA-1 to OpenSSL's.
@pytest.mark.parametrize(
    "data",
    [b"", b"hello\n", b"\x00\xff binary\r\n" * 50, "é ü\n".encode(), b"p" * 131072, b"q" * 131073],
)
def test_blob_sha_is_what_git_hash_object_says(bare_repo, data):
    done = subprocess.run(
        ["git", "hash-object", "--stdin"], cwd=bare_repo, input=data, capture_output=True, check=True
    )
    assert blob_sha(data) == done.stdout.decode().strip()


def test_the_id_of_a_long_content_asked_again_is_known_and_only_for_the_same_bytes(bare_repo, monkeypatch):
    from ralph.store import blobs

    first, other = b"r" * 200_000, b"r" * 199_999 + b"s"
    expected = {data: blob_sha(data) for data in (first, other)}
    hashed: list[bytes] = []
    real = blobs._sha

    def counted(data: bytes) -> str:
        hashed.append(data)
        return real(data)

    monkeypatch.setattr(blobs, "_sha", counted)
    assert blob_sha(bytearray(first).decode().encode()) == expected[first]  # equal bytes, another object
    assert blob_sha(other) == expected[other]
    assert hashed == []
    for n in range(blobs._KNOWN_SIZE):  # only a few are kept: the first goes
        blob_sha(bytes([65 + n]) * 200_000)
    assert blob_sha(first) == expected[first]
    assert hashed[-1] == first


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
    commit, entries = Repo(work).commit_file("plan.jsonl", data, "ralph: add a task\n\nbody")

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
    commit, entries = repo_.commit_file("plan.jsonl", data, "nothing to say")
    assert commit is None
    assert head(repo) == before
    assert entries == repo_.snapshot()[1]


def test_commit_files_commits_several_files_and_nothing_else_in_one_commit(bare_repo):
    (bare_repo / "other.txt").write_text("staged by the user\n")
    git(bare_repo, "add", "other.txt")
    repo_ = Repo(bare_repo)
    files = {"plan.jsonl": b"", ".gitignore": b"/build/ralph-logs/\n"}
    for name, data in files.items():
        (bare_repo / name).write_bytes(data)

    commit, _ = repo_.commit_files(files, "ralph: init")

    assert commit == head(bare_repo) and git(bare_repo, "rev-list", "--count", "HEAD").strip() == "1"
    assert git(bare_repo, "ls-tree", "--name-only", "HEAD").split() == [".gitignore", "plan.jsonl"]
    assert status(bare_repo) == "A  other.txt\n"  # the two are clean, the user's file still staged
    assert repo_.commit_files(files, "again") == (None, repo_.snapshot()[1])  # nothing to commit


def test_commit_file_before_the_first_commit(bare_repo):
    (bare_repo / "other.txt").write_text("staged by the user\n")
    git(bare_repo, "add", "other.txt")
    repo_ = Repo(bare_repo)
    assert repo_.snapshot() == (None, [])

    data = b"first\n"
    (bare_repo / "plan.jsonl").write_bytes(data)
    commit, entries = repo_.commit_file("plan.jsonl", data, "ralph: init")

    assert commit == head(bare_repo)
    assert git(bare_repo, "rev-list", "--count", "HEAD").strip() == "1"
    assert git(bare_repo, "ls-tree", "--name-only", "HEAD").split() == ["plan.jsonl"]
    assert entries == [f"100644 blob {blob_sha(data)}\tplan.jsonl".encode()]
    assert status(bare_repo) == "A  other.txt\n"  # still staged, not committed


def test_snapshot_reads_every_kind_of_entry_as_ls_tree_prints_it(work):
    """snapshot() parses HEAD's raw tree object itself: a folder, a link, an executable, a
    submodule and a name that is not UTF-8 must come out as `git ls-tree -z` has them."""
    (work / "folder").mkdir()
    (work / "folder" / "f.txt").write_text("f\n")
    (work / "run.sh").write_text("#!/bin/sh\n")
    (work / "run.sh").chmod(0o755)
    (work / "link").symlink_to("folder")
    (work / "caf\udce9.txt").write_text("latin-1 name\n")  # the bytes b"caf\xe9.txt"
    git(work, "add", "-A")
    git(work, "update-index", "--add", "--cacheinfo", f"160000,{head(work)},module")
    git(work, "commit", "-qm", "every kind of entry")
    commit, entries = Repo(work).snapshot()
    assert commit == head(work)
    assert entries == [entry for entry in git_bytes(work, "ls-tree", "-z", "HEAD").split(b"\0") if entry]
    assert {entry.split()[1] for entry in entries} == {b"blob", b"tree", b"commit"}


def test_a_plan_commit_keeps_a_name_that_is_not_utf8(work):
    """The tree is rebuilt from HEAD's entries: a name decoded and encoded again would be renamed."""
    (work / "caf\udce9.txt").write_text("latin-1 name\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "a latin-1 name")
    (work / "plan.jsonl").write_bytes(b"{}\n")
    Repo(work).commit_file("plan.jsonl", b"{}\n", "ralph: a plan commit")
    assert b"caf\xe9.txt" in git_bytes(work, "ls-tree", "--name-only", "-z", "HEAD").split(b"\0")
    assert files_of(work) == ["plan.jsonl"]
    assert status(work) == ""


def test_commit_file_is_a_compare_and_swap(work):
    repo_ = Repo(work)
    base = repo_.snapshot()
    (work / "a.txt").write_text("committed meanwhile\n")
    git(work, "commit", "-qam", "someone else's commit")
    other = head(work)

    with pytest.raises(GitError, match="update-ref"):
        repo_.commit_file("plan.jsonl", b"stale\n", "ralph: from a stale snapshot", base)

    assert head(work) == other
    assert git(work, "log", "-1", "--format=%s").strip() == "someone else's commit"
    # With a current snapshot it commits on top of the other commit.
    commit, _ = repo_.commit_file("plan.jsonl", b"fresh\n", "ralph: fresh")
    assert git(work, "rev-parse", f"{commit}^").strip() == other


def test_commit_file_before_the_first_commit_does_not_overwrite_one_made_meanwhile(bare_repo):
    repo_ = Repo(bare_repo)
    base = repo_.snapshot()
    commit_all(bare_repo, {"x.txt": "x\n"}, "the first commit, made meanwhile")
    first = head(bare_repo)
    with pytest.raises(GitError):
        repo_.commit_file("plan.jsonl", b"late\n", "ralph: init", base)
    assert head(bare_repo) == first


# --- changed_paths ---------------------------------------------------------------------------


def test_changed_paths_lists_every_kind_of_change(work):
    (work / "a.txt").write_text("modified, unstaged\n")
    (work / "b.txt").write_text("modified, staged\n")
    git(work, "add", "b.txt")
    (work / "c.txt").unlink()
    git(work, "mv", "d.txt", "renamed.txt")
    (work / "new" / "deep").mkdir(parents=True)
    (work / "new" / "deep" / "file.txt").write_text("untracked in a new folder\n")
    (work / "with space é.txt").write_text("a name git would quote\n")
    (work / "build" / "ralph-logs").mkdir(parents=True, exist_ok=True)
    (work / "build" / "ralph-logs" / "ignored.txt").write_text("ignored by .gitignore\n")

    assert Repo(work).changed_paths() == {
        "a.txt",
        "b.txt",
        "c.txt",
        "d.txt",
        "renamed.txt",
        "new/deep/file.txt",
        "with space é.txt",
    }


def test_changed_paths_among_given_paths_looks_at_those_alone(work):
    (work / "a.txt").write_text("modified\n")
    (work / "b.txt").write_text("modified too\n")
    (work / "new.txt").write_text("untracked\n")
    (work / "[x].txt").write_text("a name that is a glob\n")
    repo_ = Repo(work)
    assert repo_.changed_paths(among={"a.txt", "new.txt", "c.txt"}) == {"a.txt", "new.txt"}
    assert repo_.changed_paths(among={"x.txt"}) == set()  # "[x].txt" is a file, not a pattern
    assert repo_.changed_paths(among=set()) == set()


def test_changed_paths_of_a_clean_tree_is_empty(work):
    assert Repo(work).changed_paths() == set()


def test_work_state_gives_head_branch_and_the_same_paths_in_one_status(work):
    (work / "a.txt").write_text("modified, unstaged\n")
    git(work, "mv", "d.txt", "renamed.txt")
    (work / "with space é.txt").write_text("a name git would quote\n")
    repo_ = Repo(work)
    assert repo_.work_state() == (head(work), "main", repo_.changed_paths())
    assert {"a.txt", "d.txt", "renamed.txt", "with space é.txt"} <= repo_.changed_paths()

    git(work, "checkout", "-q", "--detach")
    assert repo_.work_state()[:2] == (head(work), None)


def test_work_state_before_the_first_commit_and_with_a_conflict(work, tmp_path):
    unborn = tmp_path / "unborn"
    unborn.mkdir()
    git(unborn, "init", "-q")
    (unborn / "x.txt").write_text("x\n")
    assert Repo(unborn).work_state() == (None, "main", {"x.txt"})

    git(work, "checkout", "-q", "-b", "other")
    commit_all(work, {"a.txt": "theirs\n"}, "theirs")
    git(work, "checkout", "-q", "main")
    commit_all(work, {"a.txt": "ours\n"}, "ours")
    subprocess.run(["git", "merge", "-q", "other"], cwd=work, capture_output=True)  # conflicts
    assert "a.txt" in Repo(work).work_state()[2] and Repo(work).work_state()[2] == Repo(work).changed_paths()


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

    commit, files = Repo(work).commit_paths({"a.txt", "c.txt", "created/f.txt"}, "ralph: build t-x")

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
    assert Repo(work).commit_paths({"a.txt"}, "nothing") == (None, [])
    assert Repo(work).commit_paths(set(), "nothing") == (None, [])
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

    commit, files = Repo(work).commit_paths({"a.txt"}, "ralph: despite hooks")
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

    commit, files = Repo(work).commit_paths({"plan.jsonl"}, "ralph: the plan")

    assert commit == head(work) and files == ["plan.jsonl"]
    assert files_of(work) == ["plan.jsonl"]
    assert git_bytes(work, "show", "HEAD:plan.jsonl") == plan.read_bytes()
    assert git(work, "log", "-1", "--format=%s").strip() == "ralph: the plan"
    assert f"size: {plan.stat().st_size}\t" in git(work, "ls-files", "--debug", "--", "plan.jsonl")
    assert status(work) == " M b.txt\nM  sub/e.txt\n"
    assert Repo(work).commit_paths({"plan.jsonl"}, "again") == (None, [])


def test_a_plan_commit_a_kill_cut_short_after_head_moved_is_finished_by_staging_it(work):
    # HEAD holds the plan, the index still the one before (killed between the two): nothing is
    # committed again, and the index is brought to what HEAD holds.
    plan = work / "plan.jsonl"
    plan.write_bytes(b'{"t": "config"}\n')
    Repo(work).commit_paths({"plan.jsonl"}, "ralph: the plan")
    before = git(work, "rev-parse", "HEAD:plan.jsonl").strip()
    plan.write_bytes(b'{"t": "config", "commit": true}\n')
    commit, _ = Repo(work).commit_paths({"plan.jsonl"}, "ralph: the plan again")
    git(work, "update-index", "--cacheinfo", f"100644,{before},plan.jsonl")  # as the kill left it
    assert status(work) == "MM plan.jsonl\n"

    assert Repo(work).commit_paths({"plan.jsonl"}, "ralph: settled") == (None, [])
    assert head(work) == commit and status(work) == ""


def test_a_plan_written_while_it_is_committed_is_left_unstaged(work, monkeypatch):
    plan = work / "plan.jsonl"
    plan.write_bytes(b'{"t": "config"}\n')
    land = Repo.land

    def written_meanwhile(self: Repo, prepared: Any, from_work_tree: bool = False) -> None:
        plan.write_bytes(b'{"t": "config", "commit": true}\n')  # before `git add` reads it
        land(self, prepared, from_work_tree)

    monkeypatch.setattr(Repo, "land", written_meanwhile)
    commit, _ = Repo(work).commit_paths({"plan.jsonl"}, "ralph: the plan")

    assert git_bytes(work, "show", f"{commit}:plan.jsonl") == b'{"t": "config"}\n'
    assert status(work) == " M plan.jsonl\n"  # the index holds what was committed, not the new bytes


def test_a_plan_that_is_a_link_is_committed_as_a_link_never_as_what_it_points_at(work, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("not the repository's\n")
    (work / "plan.jsonl").unlink(missing_ok=True)
    (work / "plan.jsonl").symlink_to(outside)

    Repo(work).commit_paths({"plan.jsonl"}, "ralph: the plan")

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

    Repo(work).commit_paths({"plan.jsonl"}, "ralph: the plan")

    assert git(work, "ls-tree", "HEAD", "plan.jsonl").startswith("100644 blob ")
    assert status(work) == ""


# --- literal paths ---------------------------------------------------------------------------


@pytest.fixture
def pages(work: Path) -> Path:
    """`pages/[id].js` is also a glob matching `pages/i.js` and `pages/d.js`; all three are dirty."""
    commit_all(work, {"pages/[id].js": "route\n", "pages/i.js": "i\n", "pages/d.js": "d\n"})
    for name in ("[id].js", "i.js", "d.js"):
        (work / "pages" / name).write_text(f"changed {name}\n")
    return work


def test_commit_paths_takes_a_bracketed_name_literally(pages):
    commit, files = Repo(pages).commit_paths({"pages/[id].js"}, "ralph: the route only")
    assert files == ["pages/[id].js"]
    assert files_of(pages) == ["pages/[id].js"]
    assert status(pages) == " M pages/d.js\n M pages/i.js\n"


def test_revert_takes_a_bracketed_name_literally(pages):
    Repo(pages).revert({"pages/[id].js"})
    assert (pages / "pages" / "[id].js").read_text() == "route\n"
    assert (pages / "pages" / "i.js").read_text() == "changed i.js\n"
    assert (pages / "pages" / "d.js").read_text() == "changed d.js\n"


def test_revert_of_a_new_bracketed_name_leaves_the_files_its_glob_matches(pages):
    (pages / "pages" / "[di].js").write_text("a new route, untracked\n")
    Repo(pages).revert({"pages/[di].js"})
    assert not (pages / "pages" / "[di].js").exists()
    assert status(pages) == " M pages/[id].js\n M pages/d.js\n M pages/i.js\n"


def test_save_patch_takes_a_bracketed_name_literally(pages, tmp_path):
    patch = tmp_path / "route.patch"
    Repo(pages).save_patch({"pages/[id].js"}, patch)
    text = patch.read_text()
    assert "pages/[id].js" in text
    assert "pages/i.js" not in text and "pages/d.js" not in text


# --- revert and save_patch -------------------------------------------------------------------


def make_an_attempt(work: Path) -> dict[str, bytes | None]:
    """Change the work tree as a build attempt would; return what each path then holds."""
    (work / "a.txt").write_text("modified\n")
    (work / "b.txt").write_text("modified and staged\n")
    git(work, "add", "b.txt")
    (work / "c.txt").unlink()
    git(work, "mv", "d.txt", "moved.txt")
    (work / "fresh").mkdir()
    (work / "fresh" / "new.txt").write_text("new, untracked\n")
    (work / "staged-new.txt").write_text("new, staged\n")
    git(work, "add", "staged-new.txt")
    (work / "blob.bin").write_bytes(bytes(range(256)) * 4)
    paths = ["a.txt", "b.txt", "c.txt", "d.txt", "moved.txt", "fresh/new.txt", "staged-new.txt", "blob.bin"]
    return {path: (work / path).read_bytes() if (work / path).exists() else None for path in paths}


def test_revert_restores_tracked_files_and_removes_new_ones(work):
    (work / "user.txt").write_text("the user's, not the attempt's\n")
    attempt = make_an_attempt(work)
    repo_ = Repo(work)
    assert repo_.changed_paths() == set(attempt) | {"user.txt"}

    repo_.revert(set(attempt))

    for name, text in {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "d.txt": "d\n"}.items():
        assert (work / name).read_text() == text
    for name in ("moved.txt", "fresh/new.txt", "staged-new.txt", "blob.bin"):
        assert not (work / name).exists()
    assert status(work) == "?? user.txt\n"


def test_revert_unstages_and_removes_many_new_files_odd_names_among_them(work):
    """New files are taken out of the index in one go (a build of a thousand files took 40 s
    when each went alone): staged ones, a name git would read as a glob, one that is not UTF-8."""
    names = [f"gen/part{n % 7}/file{n}.txt" for n in range(300)] + ["gen/[ab].txt", "gen/a.txt"]
    for name in names:
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(f"{name}\n")
    odd = os.fsdecode(b"gen/caf\xe9.txt")  # as Repo lists it: surrogate-escaped bytes
    (work / odd).write_bytes(b"latin-1 name\n")
    git(work, "add", "gen")
    repo_ = Repo(work)
    assert repo_.changed_paths() == {*names, odd}

    repo_.revert({*names[:-1], odd})  # gen/a.txt stays: `[ab]` must not match it

    assert status(work) == "A  gen/a.txt\n"
    assert [path.name for path in (work / "gen").rglob("*") if path.is_file()] == ["a.txt"]


def test_save_patch_keeps_what_git_apply_restores(work, tmp_path):
    attempt = make_an_attempt(work)
    repo_ = Repo(work)
    patch = tmp_path / "attempt.patch"

    repo_.save_patch(set(attempt), patch)
    repo_.revert(set(attempt))
    assert repo_.changed_paths() == set()
    git(work, "apply", str(patch))

    for path, data in attempt.items():
        if data is None:
            assert not (work / path).exists(), path
        else:
            assert (work / path).read_bytes() == data, path


def test_save_patch_of_nothing_writes_nothing(work, tmp_path):
    Repo(work).save_patch(set(), tmp_path / "none.patch")
    assert not (tmp_path / "none.patch").exists()


def test_commit_patch_is_what_the_commit_changed_without_the_excluded_paths(work):
    start = head(work)
    commit_all(work, {"a.txt": "built\n", "plan.jsonl": "{}\n", "new/f.bin": "\x00\x01"}, "a build")
    patch = Repo(work).commit_patch(head(work), exclude=frozenset({"plan.jsonl"}))
    assert b"plan.jsonl" not in patch and b"+built" in patch and b"new/f.bin" in patch
    git(work, "checkout", "-q", start)
    (work / "patch").write_bytes(patch)
    git(work, "apply", "patch")
    assert (work / "a.txt").read_text() == "built\n" and (work / "new" / "f.bin").exists()
    assert (
        Repo(work).commit_patch(start, exclude=frozenset({"a.txt", "b.txt", "c.txt", "d.txt", "sub/e.txt"}))
        == b""
    )


def test_at_head_names_the_paths_head_has_an_entry_for(work):
    (work / "sub").mkdir(exist_ok=True)
    assert Repo(work).at_head({"sub", "a.txt", "new", "sub/e.txt", "sub/missing"}) == {
        "sub",
        "a.txt",
        "sub/e.txt",
    }


# A tracked file in Latin-1 (not UTF-8) and a binary file, changed: what a patch must carry as bytes.
LATIN1_BEFORE = "caf\xe9 cr\xe8me\n".encode("latin-1")
LATIN1_AFTER = "caf\xe9 cr\xe8me br\xfbl\xe9e\n".encode("latin-1")
BINARY = bytes(range(256)) * 4


def not_utf8_changes(work: Path) -> dict[str, bytes]:
    (work / "menu.txt").write_bytes(LATIN1_BEFORE)
    git(work, "add", "menu.txt")
    git(work, "commit", "-qm", "a Latin-1 file")
    changed = {"menu.txt": LATIN1_AFTER, "blob.bin": BINARY}
    for path, data in changed.items():
        (work / path).write_bytes(data)
    return changed


def test_save_patch_round_trips_a_latin1_file_and_a_binary_one(work, tmp_path):
    changed = not_utf8_changes(work)
    repo_ = Repo(work)
    patch = tmp_path / "attempt.patch"

    repo_.save_patch(set(changed), patch)
    repo_.revert(set(changed))
    assert (work / "menu.txt").read_bytes() == LATIN1_BEFORE
    git(work, "apply", str(patch))  # refused when the patch went through a text decoder

    assert {path: (work / path).read_bytes() for path in changed} == changed


def test_commit_patch_round_trips_a_latin1_file_and_a_binary_one(work):
    changed = not_utf8_changes(work)
    start = head(work)
    git(work, "add", *changed)
    git(work, "commit", "-qm", "a build")
    patch = Repo(work).commit_patch(head(work))
    git(work, "checkout", "-q", start)
    (work / "patch").write_bytes(patch)

    git(work, "apply", "patch")

    assert {path: (work / path).read_bytes() for path in changed} == changed


def test_a_patch_ignores_a_persons_external_diff_and_textconv(work, tmp_path):
    changed = not_utf8_changes(work)
    git(work, "config", "diff.external", "false")  # would print nothing and fail the diff
    (work / ".git" / "info" / "attributes").write_text("*.txt diff=shown\n")
    git(work, "config", "diff.shown.textconv", "tr a-z A-Z <")
    patch = Repo(work).patch("HEAD", "--", "menu.txt")
    Repo(work).revert(set(changed))
    (tmp_path / "p").write_bytes(patch)

    git(work, "apply", str(tmp_path / "p"))

    assert (work / "menu.txt").read_bytes() == LATIN1_AFTER


# --- worktrees -------------------------------------------------------------------------------


def test_a_worktree_is_a_detached_checkout_of_the_commit_and_goes_with_its_changes(work, tmp_path):
    hook = work / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path / 'hook-ran'}\n")
    hook.chmod(0o755)
    main = Repo(work)
    commit = head(work)
    other = main.add_worktree(tmp_path / "checkout", commit)
    assert other.root == tmp_path / "checkout" and other.head() == commit and other.branch() is None
    assert (other.root / "sub" / "e.txt").read_text() == "e\n" and other.changed_paths() == set()
    assert not (tmp_path / "hook-ran").exists()  # the user's hook is for the user's checkouts
    (other.root / "a.txt").write_text("changed in the worktree\n")
    (other.root / "new.txt").write_text("added\n")
    assert other.changed_paths() == {"a.txt", "new.txt"} and main.changed_paths() == set()
    main.remove_worktree(other.root)
    assert not other.root.exists() and len(git(work, "worktree", "list").splitlines()) == 1
    assert main.changed_paths() == set() and head(work) == commit


def test_removing_a_worktree_whose_folder_is_gone_forgets_it(work, tmp_path):
    import shutil

    main = Repo(work)
    other = main.add_worktree(tmp_path / "checkout", head(work))
    shutil.rmtree(other.root)
    main.remove_worktree(other.root)
    assert len(git(work, "worktree", "list").splitlines()) == 1


# --- reading history -------------------------------------------------------------------------


def test_file_at_head(bare_repo):
    repo_ = Repo(bare_repo)
    assert repo_.file_at_head("plan.jsonl") is None  # no commit yet
    commit_all(bare_repo, {"plan.jsonl": "committed\n"})
    (bare_repo / "plan.jsonl").write_text("changed since\n")
    assert repo_.file_at_head("plan.jsonl") == b"committed\n"
    assert repo_.file_at_head("missing.txt") is None


def test_the_git_environment_of_a_hook_does_not_redirect_repo(work, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(elsewhere / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(elsewhere))
    (work / "a.txt").write_text("changed\n")
    assert Repo(work).changed_paths() == {"a.txt"}


def test_commit_paths_takes_the_agents_git_rm_and_git_mv(work):
    git(work, "rm", "-q", "c.txt")
    git(work, "mv", "d.txt", "moved.txt")
    (work / "a.txt").unlink()  # deleted without git: still in the index
    repo_ = Repo(work)
    commit, files = repo_.commit_paths(repo_.changed_paths(), "ralph: build with git rm and git mv")
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


def test_a_failure_names_the_git_command_past_its_settings(work, tmp_path):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "file").write_text("in the way\n")
    with pytest.raises(
        GitError, match="^git worktree failed: "
    ):  # run as `git -c core.hooksPath=... worktree`
        Repo(work).add_worktree(taken, head(work))


def test_changed_paths_name_a_file_that_is_not_utf8_so_that_git_finds_it_again(work):
    (work / "caf\udce9.txt").write_text("latin-1 name\n")  # the bytes b"caf\xe9.txt"
    repo_ = Repo(work)
    assert repo_.changed_paths() == {"caf\udce9.txt"}
    assert repo_.work_state()[2] == {"caf\udce9.txt"}
    commit, files = repo_.commit_paths(repo_.changed_paths(), "ralph: a latin-1 name")
    assert commit == head(work) and files == ["caf\udce9.txt"]
    assert git_bytes(work, "show", "--name-only", "-z", "--format=", "HEAD") == b"caf\xe9.txt\0"
    assert status(work) == ""


def test_hidden_in_names_files_an_ignore_rule_inside_the_new_folders_hides_and_only_those(work):
    (work / ".gitignore").write_text("/deps/\n")  # the repository's own rule: not hiding anything
    for path in ("made/.gitignore", "made/[id].py", "made/sub/x.py", "deps/lib.js", "open/y.py"):
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text("*\n" if path.endswith(".gitignore") else "code\n")
    (work / "plain.py").write_text("code\n")
    repo = Repo(work)
    hidden = {"made/.gitignore", "made/[id].py", "made/sub/x.py"}
    assert repo.hidden_in(["made", "deps", "open", "plain.py"]) == hidden
    assert repo.hidden_in(["deps", "open"]) == set() and repo.hidden_in([]) == set()
    patch = work.parent / "kept.patch"
    repo.save_patch(hidden | {"open/y.py"}, patch)  # kept, though git ignores them
    repo.revert(hidden | {"open/y.py"})
    assert not [p for p in (work / "made").rglob("*") if p.is_file()] and (work / "deps" / "lib.js").exists()
    git(work, "apply", str(patch))
    assert (work / "made" / "[id].py").read_text() == "code\n"


def test_revert_never_removes_through_a_link_it_puts_back(work):
    """An agent replaced the tracked link docs -> sub with a folder of its own files: undoing that
    removes its files, then puts the link back; sub/e.txt, which the link points at, stays."""
    (work / "docs").symlink_to("sub")
    git(work, "add", "docs")
    git(work, "commit", "-qm", "a link")
    (work / "docs").unlink()
    (work / "docs").mkdir()
    (work / "docs" / "e.txt").write_text("the agent's\n")
    repo = Repo(work)
    changed = repo.changed_paths()
    assert changed == {"docs", "docs/e.txt"}
    repo.revert(changed)
    assert (work / "docs").is_symlink() and (work / "sub" / "e.txt").read_text() == "e\n"
    assert status(work) == ""


def test_a_git_call_that_outlives_its_timeout_is_stopped_and_fails(work, monkeypatch):
    from ralph.store import git as git_module

    monkeypatch.setattr(git_module, "GIT_TIMEOUT_S", 0.2)
    monkeypatch.setattr(git_module, "git_argv", lambda args: ["sleep", "60"])  # a git that hangs
    repo_ = Repo(work)
    with pytest.raises(GitError, match=r"git status did not finish in 0.2s"):
        repo_.git("status")
    with pytest.raises(GitError, match=r"git log did not finish in 0.2s"):
        list(repo_.lines("log"))


def test_a_file_at_an_object_id_is_read_once_and_at_a_name_every_time(repo, monkeypatch):
    """What a commit holds never changes: file_at by object id asks git once; by a name (HEAD, a
    branch) it asks every time, since the name moves; the bytes kept stay within the budget."""
    import ralph.store.git as git_module

    def commit_notes(text: str) -> str:
        (repo / "notes.txt").write_text(text)
        git(repo, "add", "notes.txt")
        git(repo, "commit", "-q", "-m", "notes")
        return git(repo, "rev-parse", "HEAD").strip()

    older, newer = commit_notes("a" * 100), commit_notes("b" * 100)
    git(repo, "repack", "-adq")  # packed: only git reads them (loose ones need no git run)
    git(repo, "prune-packed")
    repo_ = Repo(repo)
    runs = count_git_runs(monkeypatch)
    monkeypatch.setattr(git_module, "FILES_KEPT_BYTES", 100)
    assert repo_.file_at(older, "notes.txt") == repo_.file_at(older, "notes.txt") == b"a" * 100
    assert repo_.file_at(older, "no-such-file") is None and repo_.file_at(older, "no-such-file") is None
    assert len(runs) == 2  # one per file, not per look
    assert repo_.file_at("HEAD", "notes.txt") == repo_.file_at("HEAD", "notes.txt") == b"b" * 100
    assert len(runs) == 4  # a name moves: asked each time
    assert repo_.file_at(newer, "notes.txt") == b"b" * 100  # over the budget: the oldest goes
    runs.clear()
    assert repo_.file_at(older, "notes.txt") == b"a" * 100
    assert len(runs) == 1


def test_blobs_reads_several_objects_in_one_git_run_and_none_where_there_is_none(repo, monkeypatch):
    def stored_blob(data: bytes) -> str:
        argv = ["git", "hash-object", "-w", "--stdin"]
        hashed = subprocess.run(argv, cwd=repo, input=data, capture_output=True, check=True)
        return hashed.stdout.decode().strip()

    stored = [stored_blob(b"one\n"), stored_blob(b"two\n")]
    git(repo, "repack", "-adq")  # packed: only git reads them
    git(repo, "prune-packed")
    runs = count_git_runs(monkeypatch)
    missing = "0" * 39 + "1"
    assert Repo(repo).blobs([stored[1], missing, stored[0]]) == [b"two\n", None, b"one\n"]
    assert len(runs) == 1


def test_a_loose_blob_is_read_from_its_file_and_a_replaced_one_from_git(repo, monkeypatch):
    """The plan's blobs ralph commits are loose objects: reading one back needs no git run. Where
    the repository replaces objects (`git replace`), git's answer is what counts, so git is asked."""
    data = b"a line of the plan\n"

    def stored(content: bytes) -> str:
        argv = ["git", "hash-object", "-w", "--stdin"]
        return (
            subprocess.run(argv, cwd=repo, input=content, capture_output=True, check=True)
            .stdout.decode()
            .strip()
        )

    sha, other = stored(data), stored(b"another\n")
    runs = count_git_runs(monkeypatch)
    assert Repo(repo).blob(sha) == data and Repo(repo).blobs([sha]) == [data]
    assert runs == []
    git(repo, "replace", sha, other)
    assert Repo(repo).blob(sha) == b"another\n"  # as git reads it
    assert [args[0] for args in runs] == ["cat-file"]


def test_several_files_of_a_commit_are_read_in_one_git_run_and_kept(repo, monkeypatch):
    """read_files_at: each path's type in the commit (None where it has none), one git run for
    all, and file_at then answers from what was read, with no git run of its own."""
    (repo / "docs").mkdir()
    (repo / "docs" / "a.md").write_text("a\n")
    (repo / "rules.md").write_text("rules\n")
    git(repo, "add", "docs", "rules.md")
    git(repo, "commit", "-qm", "files")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "repack", "-adq")  # packed: only git reads them
    git(repo, "prune-packed")
    repo_ = Repo(repo)
    runs = count_git_runs(monkeypatch)
    kinds = repo_.read_files_at(head, ["rules.md", "docs", "docs/a.md", "gone.md", "rules.md"])
    assert kinds == {"rules.md": "blob", "docs": "tree", "docs/a.md": "blob", "gone.md": None}
    assert len(runs) == 1
    assert repo_.file_at(head, "docs/a.md") == b"a\n" and repo_.file_at(head, "rules.md") == b"rules\n"
    assert repo_.file_at(head, "gone.md") is None and repo_.file_at(head, "docs") is None
    assert len(runs) == 1
    assert repo_.read_files_at("HEAD", ["rules.md"]) == {}  # a name moves: nothing kept by it


def test_the_options_every_diff_gets_go_before_its_end_of_options_and_its_paths():
    """After `--end-of-options` git reads every word as a revision, after `--` as a path: the
    options ralph always gives a command (here diff's) go before both."""
    from ralph.store.git import git_argv

    argv = git_argv(("diff", "--name-only", "--end-of-options", "a...b", "--", "x"))
    assert argv[argv.index("--end-of-options") :] == ["--end-of-options", "a...b", "--", "x"]
    assert "--no-ext-diff" in argv[: argv.index("--end-of-options")]
    argv = git_argv(("diff", "--name-only", "a", "--", "x"))
    assert argv[argv.index("--") :] == ["--", "x"] and "--no-ext-diff" in argv


def test_a_file_of_a_commit_stored_loose_is_read_as_git_reads_it_without_a_git_run(repo, monkeypatch):
    """A commit ralph made, its trees and blobs are loose objects: file_at reads them from their
    files, and answers exactly as `git cat-file blob <commit>:<path>` would, for a file at the top
    or in a folder, a link, a folder, a path that is not there, one through a file, and paths
    git reads otherwise (`.`, `..`, an empty part), which go to git."""
    (repo / "docs" / "deep").mkdir(parents=True)
    (repo / "docs" / "deep" / "a.md").write_text("a\n")
    (repo / "top.txt").write_text("top\n")
    os.symlink("top.txt", repo / "link")
    git(repo, "add", "docs", "top.txt", "link")
    git(repo, "commit", "-qm", "files")
    head = git(repo, "rev-parse", "HEAD").strip()
    paths = ["top.txt", "docs/deep/a.md", "link", "docs", "docs/deep", "gone", "docs/gone.md"]
    paths += ["top.txt/x", "docs/deep/a.md/x", "./top.txt", "docs//deep/a.md", "docs/../top.txt", ""]
    by_git = {}
    for path in paths:
        done = subprocess.run(["git", "cat-file", "blob", f"{head}:{path}"], cwd=repo, capture_output=True)
        by_git[path] = done.stdout if done.returncode == 0 else None
    runs = count_git_runs(monkeypatch)
    assert {path: Repo(repo).file_at(head, path) for path in paths} == by_git
    asked = sorted(args[-1].split(":", 1)[1] for args in runs)
    assert asked == sorted(["./top.txt", "docs//deep/a.md", "docs/../top.txt", ""])


def test_a_loose_object_file_that_is_not_the_object_its_name_says_is_not_believed(repo, monkeypatch):
    """A file planted under a packed object's name (another content, deflated as git stores it):
    ralph checks a loose object's id against its content, so it asks git, and reads what git does."""
    import zlib

    data = b"the real content\n"
    argv = ["git", "hash-object", "-w", "--stdin"]
    sha = subprocess.run(argv, cwd=repo, input=data, capture_output=True, check=True).stdout.decode().strip()
    git(repo, "repack", "-adq")
    git(repo, "prune-packed")
    planted = repo / ".git" / "objects" / sha[:2] / sha[2:]
    planted.parent.mkdir(exist_ok=True)
    planted.write_bytes(zlib.compress(b"blob 7\0planted"))
    runs = count_git_runs(monkeypatch)
    by_git = subprocess.run(["git", "cat-file", "blob", sha], cwd=repo, capture_output=True).stdout
    assert Repo(repo).blob(sha) == by_git and [args[0] for args in runs] == ["cat-file"]


def test_a_commit_whose_tree_is_no_well_formed_tree_is_left_to_git(repo):
    """A tree object written literally with bytes that are no tree (`hash-object --literally`, as
    a hostile agent could outside the fence): reading a file of its commit says what git says, and
    raises nothing of ralph's."""
    argv = ["git", "hash-object", "-t", "tree", "--literally", "-w", "--stdin"]
    tree = (
        subprocess.run(argv, cwd=repo, input=b"no tree", capture_output=True, check=True)
        .stdout.decode()
        .strip()
    )
    commit = git(repo, "commit-tree", tree, "-m", "odd").strip()
    by_git = subprocess.run(
        ["git", "cat-file", "blob", f"{commit}:plan.jsonl"], cwd=repo, capture_output=True
    )
    assert by_git.returncode != 0
    assert Repo(repo).file_at(commit, "plan.jsonl") is None
