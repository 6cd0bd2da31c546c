"""ralph.store.loose: the plan commit's blob and tree, written without git, are the objects git
would write, and git writes them wherever ralph could not do exactly as git does."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from ralph.store import loose
from ralph.store.git import Repo
from ralph.store.git.run import Runner
from tests.support.gitrepo import git


def git_bytes(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(["git", *args], cwd=root, input=stdin, check=True, capture_output=True).stdout


def writers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The git commands Repo runs from now on (their first word)."""
    ran: list[str] = []
    real = Runner.run

    def counted(self, args, *rest, **kwargs):
        ran.append(args[0])
        return real(self, args, *rest, **kwargs)

    monkeypatch.setattr(Runner, "run", counted)
    return ran


@pytest.mark.parametrize("data", [b"", b"one line\n", b"\x00\xff binary\r\n" * 500, "é ü\n".encode() * 40000])
def test_a_blob_stored_here_is_the_one_git_stores_and_reads_back(repo, data):
    objects = loose.objects_folder(Repo(repo).git_dir())
    assert objects is not None and objects == repo / ".git" / "objects"
    oid = loose.store(objects, b"blob", data)
    assert oid == git_bytes(repo, "hash-object", "--stdin", stdin=data).decode().strip()
    assert git_bytes(repo, "cat-file", "blob", oid) == data
    assert stat.S_IMODE((objects / oid[:2] / oid[2:]).stat().st_mode) == 0o444  # as git leaves it
    assert not [name for name in os.listdir(objects / oid[:2]) if name.startswith("tmp_obj_")]


def test_a_tree_is_ordered_and_named_as_git_mktree_makes_it(repo):
    blob = git_bytes(repo, "hash-object", "-w", "--stdin", stdin=b"x").decode().strip()
    folder = git_bytes(repo, "write-tree").decode().strip()
    commit = git_bytes(repo, "rev-parse", "HEAD").decode().strip()
    names = [b"a.b", b"a-b", b"a0", b"Z", b"\xff not utf-8", b"plan.jsonl", b"b c"]
    entries = [b"100644 blob %s\t%s" % (blob.encode(), name) for name in names]
    entries += [
        b"040000 tree %s\ta" % folder.encode(),  # read as "a/": after "a-b" and "a.b", before "a0"
        b"100755 blob %s\trun" % blob.encode(),
        b"120000 blob %s\tlink" % blob.encode(),
        b"160000 commit %s\tmodule" % commit.encode(),
    ]
    want = git_bytes(repo, "mktree", "-z", "--missing", stdin=b"\0".join([*entries, b""])).decode().strip()
    objects = loose.objects_folder(Repo(repo).git_dir())
    assert objects is not None
    for order in (entries, entries[::-1]):
        assert loose.store(objects, b"tree", loose.tree(order)) == want
    assert git_bytes(repo, "cat-file", "-t", want) == b"tree\n"


def test_an_object_already_stored_is_kept_and_touched_not_written_again(repo):
    objects = loose.objects_folder(Repo(repo).git_dir())
    assert objects is not None
    oid = loose.store(objects, b"blob", b"kept\n")
    path = objects / oid[:2] / oid[2:]
    os.utime(path, (1_000_000, 1_000_000))
    before = path.stat()
    assert loose.store(objects, b"blob", b"kept\n") == oid
    after = path.stat()
    assert after.st_ino == before.st_ino
    assert after.st_mtime > 1_000_000  # git's prune sees it as new


def test_an_object_there_that_cannot_be_touched_is_taken_as_it_is(repo, monkeypatch):
    objects = loose.objects_folder(Repo(repo).git_dir())
    assert objects is not None
    oid = loose.store(objects, b"blob", b"theirs\n")

    def refused(path, *args, **kwargs):
        raise PermissionError(13, "Operation not permitted", str(path))

    monkeypatch.setattr(os, "utime", refused)  # another user's file, as in a repository they share
    assert loose.store(objects, b"blob", b"theirs\n") == oid
    assert not [name for name in os.listdir(objects / oid[:2]) if name.startswith("tmp_obj_")]


def test_a_plan_commit_runs_no_git_to_write_its_blob_and_tree_and_git_finds_all_sound(repo, monkeypatch):
    (repo / "plan.jsonl").write_bytes(b'{"type":"config"}\n')
    ran = writers(monkeypatch)
    commit, _ = Repo(repo).index.commit_file("plan.jsonl", b'{"type":"config"}\n', "ralph: a change")
    assert commit == git(repo, "rev-parse", "HEAD").strip()
    assert "hash-object" not in ran and "mktree" not in ran
    assert git_bytes(repo, "show", "HEAD:plan.jsonl") == b'{"type":"config"}\n'
    assert git(repo, "status", "--porcelain") == ""
    git(repo, "fsck", "--strict", "--no-dangling")


def test_a_linked_worktrees_commit_stores_its_objects_in_the_shared_folder(repo, monkeypatch):
    checkout = repo.parent / "checkout"
    git(repo, "worktree", "add", "-q", "-b", "side", str(checkout))
    found = loose.objects_folder(Repo(checkout).git_dir())
    assert found is not None and found.resolve() == (repo / ".git" / "objects").resolve()
    ran = writers(monkeypatch)
    commit, _ = Repo(checkout).index.commit_file("plan.jsonl", b"{}\n", "ralph: in a worktree")
    assert "hash-object" not in ran
    assert git_bytes(repo, "show", f"{commit}:plan.jsonl") == b"{}\n"
    git(repo, "fsck", "--strict", "--no-dangling")


def test_a_shared_repository_or_an_object_directory_elsewhere_is_left_to_git(repo, tmp_path, monkeypatch):
    git(repo, "config", "core.sharedRepository", "group")
    os.chmod(repo / ".git" / "objects", 0o2775)  # what git init --shared=group makes it
    ran = writers(monkeypatch)
    Repo(repo).index.commit_file("plan.jsonl", b"shared\n", "ralph: shared")
    assert "hash-object" in ran and "mktree" in ran  # git applies the group's permissions
    git(repo, "fsck", "--strict", "--no-dangling")

    elsewhere = tmp_path / "objects"
    git(repo, "init", "-q", "--bare", str(tmp_path / "store"))
    os.rename(tmp_path / "store" / "objects", elsewhere)
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(elsewhere))
    assert loose.objects_folder(Repo(repo).git_dir()) is None


def test_a_repository_without_a_commit_or_with_sha256_ids_is_left_to_git():
    assert not loose.sha1_ids([])
    assert not loose.sha1_ids([b"100644 blob " + b"a" * 64 + b"\tplan.jsonl"])
    assert loose.sha1_ids([b"100644 blob " + b"a" * 40 + b"\tplan.jsonl"])


def git_snapshot(root: Path) -> tuple[str, list[bytes]]:
    """HEAD's commit and top-level entries as git reads them (replace refs and packs included)."""
    head = git(root, "rev-parse", "HEAD^{commit}").strip()
    entries = [entry for entry in git_bytes(root, "ls-tree", "-z", "HEAD^{tree}").split(b"\0") if entry]
    return head, entries


def test_heads_commit_and_tree_are_read_from_their_files_without_git_where_they_are_loose(repo, monkeypatch):
    Repo(repo).index.commit_file("plan.jsonl", b"loose\n", "ralph: a change")  # its commit and tree: loose
    ran = writers(monkeypatch)
    assert Repo(repo).objects.snapshot() == git_snapshot(repo)
    assert ran == []


def test_a_packed_head_or_a_replaced_commit_is_read_through_git(repo, monkeypatch):
    Repo(repo).index.commit_file("plan.jsonl", b"packed\n", "ralph: a change")
    git(repo, "gc", "-q", "--prune=now")  # every object packed: no file to read
    ran = writers(monkeypatch)
    assert Repo(repo).objects.snapshot() == git_snapshot(repo)
    assert ran == ["cat-file"]

    Repo(repo).index.commit_file("plan.jsonl", b"replaced\n", "ralph: another")
    head = git(repo, "rev-parse", "HEAD").strip()
    other = git(repo, "commit-tree", "HEAD~1^{tree}", "-p", "HEAD~1", "-m", "stand-in").strip()
    git(repo, "replace", head, other)  # git now reads `other` wherever HEAD's commit is named
    ran.clear()
    assert Repo(repo).objects.snapshot() == git_snapshot(repo)
    raw = git_bytes(repo, "--no-replace-objects", "ls-tree", "-z", head)  # what HEAD's file holds
    assert git_snapshot(repo)[1] != [entry for entry in raw.split(b"\0") if entry]
    assert ran[:1] == ["cat-file"]


def test_a_loose_file_that_is_not_a_whole_object_is_no_object(repo):
    objects = loose.objects_folder(Repo(repo).git_dir())
    assert objects is not None
    oid = loose.store(objects, b"blob", b"whole\n")
    assert loose.read(objects, oid) == (b"blob", b"whole\n")
    path = objects / oid[:2] / oid[2:]
    data = path.read_bytes()
    os.chmod(path, 0o644)
    path.write_bytes(data[:-3])  # cut short (a full disk, a kill)
    assert loose.read(objects, oid) is None
    assert loose.read(objects, "f" * 40) is None
