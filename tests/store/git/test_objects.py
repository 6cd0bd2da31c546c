"""ralph.store.git.objects against real git repositories: files, blobs and trees read as git
reads them, from loose files without a git run where they may be, and kept by object id."""

from __future__ import annotations

import os
import subprocess

from ralph.store.git import Repo
from tests.support.gitfiles import commit_all, git_bytes, head
from tests.support.gitrepo import git
from tests.support.gitruns import count_git_runs


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
    commit, entries = Repo(work).objects.snapshot()
    assert commit == head(work)
    assert entries == [entry for entry in git_bytes(work, "ls-tree", "-z", "HEAD").split(b"\0") if entry]
    assert {entry.split()[1] for entry in entries} == {b"blob", b"tree", b"commit"}


def test_file_at_head(bare_repo):
    repo_ = Repo(bare_repo)
    assert repo_.objects.file_at_head("plan.jsonl") is None  # no commit yet
    commit_all(bare_repo, {"plan.jsonl": "committed\n"})
    (bare_repo / "plan.jsonl").write_text("changed since\n")
    assert repo_.objects.file_at_head("plan.jsonl") == b"committed\n"
    assert repo_.objects.file_at_head("missing.txt") is None


def test_a_file_at_an_object_id_is_read_once_and_at_a_name_every_time(repo, monkeypatch):
    """What a commit holds never changes: file_at by object id asks git once; by a name (HEAD, a
    branch) it asks every time, since the name moves; the bytes kept stay within the budget."""
    import ralph.store.git.objects as objects_module

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
    monkeypatch.setattr(objects_module, "FILES_KEPT_BYTES", 100)
    assert (
        repo_.objects.file_at(older, "notes.txt") == repo_.objects.file_at(older, "notes.txt") == b"a" * 100
    )
    assert (
        repo_.objects.file_at(older, "no-such-file") is None
        and repo_.objects.file_at(older, "no-such-file") is None
    )
    assert len(runs) == 2  # one per file, not per look
    assert (
        repo_.objects.file_at("HEAD", "notes.txt") == repo_.objects.file_at("HEAD", "notes.txt") == b"b" * 100
    )
    assert len(runs) == 4  # a name moves: asked each time
    assert repo_.objects.file_at(newer, "notes.txt") == b"b" * 100  # over the budget: the oldest goes
    runs.clear()
    assert repo_.objects.file_at(older, "notes.txt") == b"a" * 100
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
    assert Repo(repo).objects.blobs([stored[1], missing, stored[0]]) == [b"two\n", None, b"one\n"]
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
    assert Repo(repo).objects.blob(sha) == data and Repo(repo).objects.blobs([sha]) == [data]
    assert runs == []
    git(repo, "replace", sha, other)
    assert Repo(repo).objects.blob(sha) == b"another\n"  # as git reads it
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
    kinds = repo_.objects.read_files_at(head, ["rules.md", "docs", "docs/a.md", "gone.md", "rules.md"])
    assert kinds == {"rules.md": "blob", "docs": "tree", "docs/a.md": "blob", "gone.md": None}
    assert len(runs) == 1
    assert (
        repo_.objects.file_at(head, "docs/a.md") == b"a\n"
        and repo_.objects.file_at(head, "rules.md") == b"rules\n"
    )
    assert repo_.objects.file_at(head, "gone.md") is None and repo_.objects.file_at(head, "docs") is None
    assert len(runs) == 1
    assert repo_.objects.read_files_at("HEAD", ["rules.md"]) == {}  # a name moves: nothing kept by it


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
    assert {path: Repo(repo).objects.file_at(head, path) for path in paths} == by_git
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
    assert Repo(repo).objects.blob(sha) == by_git and [args[0] for args in runs] == ["cat-file"]


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
    assert Repo(repo).objects.file_at(commit, "plan.jsonl") is None
