"""ralph.store.git.changes against real git repositories: the work tree's changes found, kept as
a patch and put back."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ralph.store.git import Repo
from tests.support.gitfiles import commit_all, git_bytes, head, status
from tests.support.gitrepo import git


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

    assert Repo(work).changes.paths() == {
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
    assert repo_.changes.paths(among={"a.txt", "new.txt", "c.txt"}) == {"a.txt", "new.txt"}
    assert repo_.changes.paths(among={"x.txt"}) == set()  # "[x].txt" is a file, not a pattern
    assert repo_.changes.paths(among=set()) == set()


def test_changed_paths_of_a_clean_tree_is_empty(work):
    assert Repo(work).changes.paths() == set()


def test_work_state_gives_head_branch_and_the_same_paths_in_one_status(work):
    (work / "a.txt").write_text("modified, unstaged\n")
    git(work, "mv", "d.txt", "renamed.txt")
    (work / "with space é.txt").write_text("a name git would quote\n")
    repo_ = Repo(work)
    assert repo_.changes.work_state() == (head(work), "main", repo_.changes.paths())
    assert {"a.txt", "d.txt", "renamed.txt", "with space é.txt"} <= repo_.changes.paths()

    git(work, "checkout", "-q", "--detach")
    assert repo_.changes.work_state()[:2] == (head(work), None)


def test_work_state_before_the_first_commit_and_with_a_conflict(work, tmp_path):
    unborn = tmp_path / "unborn"
    unborn.mkdir()
    git(unborn, "init", "-q")
    (unborn / "x.txt").write_text("x\n")
    assert Repo(unborn).changes.work_state() == (None, "main", {"x.txt"})

    git(work, "checkout", "-q", "-b", "other")
    commit_all(work, {"a.txt": "theirs\n"}, "theirs")
    git(work, "checkout", "-q", "main")
    commit_all(work, {"a.txt": "ours\n"}, "ours")
    subprocess.run(["git", "merge", "-q", "other"], cwd=work, capture_output=True)  # conflicts
    assert (
        "a.txt" in Repo(work).changes.work_state()[2]
        and Repo(work).changes.work_state()[2] == Repo(work).changes.paths()
    )


def test_revert_takes_a_bracketed_name_literally(pages):
    Repo(pages).changes.revert({"pages/[id].js"})
    assert (pages / "pages" / "[id].js").read_text() == "route\n"
    assert (pages / "pages" / "i.js").read_text() == "changed i.js\n"
    assert (pages / "pages" / "d.js").read_text() == "changed d.js\n"


def test_revert_of_a_new_bracketed_name_leaves_the_files_its_glob_matches(pages):
    (pages / "pages" / "[di].js").write_text("a new route, untracked\n")
    Repo(pages).changes.revert({"pages/[di].js"})
    assert not (pages / "pages" / "[di].js").exists()
    assert status(pages) == " M pages/[id].js\n M pages/d.js\n M pages/i.js\n"


def test_save_patch_takes_a_bracketed_name_literally(pages, tmp_path):
    patch = tmp_path / "route.patch"
    Repo(pages).changes.save_patch({"pages/[id].js"}, patch)
    text = patch.read_text()
    assert "pages/[id].js" in text
    assert "pages/i.js" not in text and "pages/d.js" not in text


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
    assert repo_.changes.paths() == set(attempt) | {"user.txt"}

    repo_.changes.revert(set(attempt))

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
    assert repo_.changes.paths() == {*names, odd}

    repo_.changes.revert({*names[:-1], odd})  # gen/a.txt stays: `[ab]` must not match it

    assert status(work) == "A  gen/a.txt\n"
    assert [path.name for path in (work / "gen").rglob("*") if path.is_file()] == ["a.txt"]


def test_save_patch_keeps_what_git_apply_restores(work, tmp_path):
    attempt = make_an_attempt(work)
    repo_ = Repo(work)
    patch = tmp_path / "attempt.patch"

    repo_.changes.save_patch(set(attempt), patch)
    repo_.changes.revert(set(attempt))
    assert repo_.changes.paths() == set()
    git(work, "apply", str(patch))

    for path, data in attempt.items():
        if data is None:
            assert not (work / path).exists(), path
        else:
            assert (work / path).read_bytes() == data, path


def test_save_patch_of_nothing_writes_nothing(work, tmp_path):
    Repo(work).changes.save_patch(set(), tmp_path / "none.patch")
    assert not (tmp_path / "none.patch").exists()


def test_commit_patch_is_what_the_commit_changed_without_the_excluded_paths(work):
    start = head(work)
    commit_all(work, {"a.txt": "built\n", "plan.jsonl": "{}\n", "new/f.bin": "\x00\x01"}, "a build")
    patch = Repo(work).changes.commit_patch(head(work), exclude=frozenset({"plan.jsonl"}))
    assert b"plan.jsonl" not in patch and b"+built" in patch and b"new/f.bin" in patch
    git(work, "checkout", "-q", start)
    (work / "patch").write_bytes(patch)
    git(work, "apply", "patch")
    assert (work / "a.txt").read_text() == "built\n" and (work / "new" / "f.bin").exists()
    assert (
        Repo(work).changes.commit_patch(
            start, exclude=frozenset({"a.txt", "b.txt", "c.txt", "d.txt", "sub/e.txt"})
        )
        == b""
    )


def test_at_head_names_the_paths_head_has_an_entry_for(work):
    (work / "sub").mkdir(exist_ok=True)
    assert Repo(work).changes.at_head({"sub", "a.txt", "new", "sub/e.txt", "sub/missing"}) == {
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

    repo_.changes.save_patch(set(changed), patch)
    repo_.changes.revert(set(changed))
    assert (work / "menu.txt").read_bytes() == LATIN1_BEFORE
    git(work, "apply", str(patch))  # refused when the patch went through a text decoder

    assert {path: (work / path).read_bytes() for path in changed} == changed


def test_commit_patch_round_trips_a_latin1_file_and_a_binary_one(work):
    changed = not_utf8_changes(work)
    start = head(work)
    git(work, "add", *changed)
    git(work, "commit", "-qm", "a build")
    patch = Repo(work).changes.commit_patch(head(work))
    git(work, "checkout", "-q", start)
    (work / "patch").write_bytes(patch)

    git(work, "apply", "patch")

    assert {path: (work / path).read_bytes() for path in changed} == changed


def test_a_patch_ignores_a_persons_external_diff_and_textconv(work, tmp_path):
    changed = not_utf8_changes(work)
    git(work, "config", "diff.external", "false")  # would print nothing and fail the diff
    (work / ".git" / "info" / "attributes").write_text("*.txt diff=shown\n")
    git(work, "config", "diff.shown.textconv", "tr a-z A-Z <")
    patch = Repo(work).changes.patch("HEAD", "--", "menu.txt")
    Repo(work).changes.revert(set(changed))
    (tmp_path / "p").write_bytes(patch)

    git(work, "apply", str(tmp_path / "p"))

    assert (work / "menu.txt").read_bytes() == LATIN1_AFTER


def test_changed_paths_name_a_file_that_is_not_utf8_so_that_git_finds_it_again(work):
    (work / "caf\udce9.txt").write_text("latin-1 name\n")  # the bytes b"caf\xe9.txt"
    repo_ = Repo(work)
    assert repo_.changes.paths() == {"caf\udce9.txt"}
    assert repo_.changes.work_state()[2] == {"caf\udce9.txt"}
    commit, files = repo_.index.commit_paths(repo_.changes.paths(), "ralph: a latin-1 name")
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
    assert repo.changes.hidden_in(["made", "deps", "open", "plain.py"]) == hidden
    assert repo.changes.hidden_in(["deps", "open"]) == set() and repo.changes.hidden_in([]) == set()
    patch = work.parent / "kept.patch"
    repo.changes.save_patch(hidden | {"open/y.py"}, patch)  # kept, though git ignores them
    repo.changes.revert(hidden | {"open/y.py"})
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
    changed = repo.changes.paths()
    assert changed == {"docs", "docs/e.txt"}
    repo.changes.revert(changed)
    assert (work / "docs").is_symlink() and (work / "sub" / "e.txt").read_text() == "e\n"
    assert status(work) == ""
