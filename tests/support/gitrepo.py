"""Git for the tests: every test's isolated git (config and identity), `git()` to run it, a shared
bare remote with its clones, and stand-ins for what git calls out to."""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}

# Every test's git: no system or user config, a pinned identity, and no automatic housekeeping
# (`git maintenance run --auto` after each commit, and the `git gc --auto` a remote's receive-pack
# starts after each push, some 230 per run of the suite, are processes that tests do not need).
GIT_CONFIG = (
    "[init]\n\tdefaultBranch = main\n[maintenance]\n\tauto = false\n[gc]\n\tauto = 0\n"
    "[receive]\n\tautogc = false\n"
)


def isolate_git(monkeypatch: pytest.MonkeyPatch, config_dir: Path) -> None:
    global_config = config_dir / "config"
    global_config.write_text(GIT_CONFIG)
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(global_config))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_dir / "xdg"))  # nor the developer's ralph config
    # ralph's own user file, empty but for what a test adds: the spec check is on, as a user has
    # it, so the specs the tests plan are in the checked format (tests/support/specs.py).
    write_user_config(config_dir / "xdg")
    monkeypatch.setenv("XDG_STATE_HOME", str(config_dir / "state"))  # nor writes crash logs into theirs
    # Runs are unfenced unless a test asks (--sandbox): the tests' agents keep their counters beside
    # the repository, and whether this machine has bubblewrap must not change what a test prints.
    monkeypatch.setenv("RALPH_SANDBOX", "off")
    for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "RALPH_LOCK_TIMEOUT"):
        monkeypatch.delenv(key, raising=False)


# The suite's own defaults over ralph's: no review before COMPLETE. Five more agent runs, each in a
# checkout of its own, at the end of every run that completes cost the suite a third of its CPU;
# the tests of the review turn it on (tests/loop/stages/test_review.py, the demo's).
USER_CONFIG = "review = false\n"


def write_user_config(xdg: Path, extra: str = "", suite_defaults: bool = True) -> Path:
    """ralph's user file under this XDG_CONFIG_HOME: the suite's defaults (or ralph's own), and
    `extra` lines."""
    path = xdg / "ralph" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((USER_CONFIG if suite_defaults else "") + extra)
    return path


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def refreshed(root: Path) -> Path:
    """A copy of a clean repository as `git update-index -q --refresh` leaves it: each index entry's
    stat data (times, device, inode, owner, size) that of the copy's file, which git compares to
    tell a file unchanged (the copy's inodes and ctimes differ from the original's). Written here,
    not by a git run: the tests copy some 1,300 such repositories per run of the suite. Only for a
    copy of a clean repository (a file that differs from its index entry would pass for unchanged)
    with a version 2 index of plain files; anything else is left to git."""
    index = root / ".git" / "index"
    data = index.read_bytes()
    out = bytearray(data[:-20])
    if data[:4] != b"DIRC" or int.from_bytes(data[4:8], "big") != 2:
        git(root, "update-index", "-q", "--refresh")
        return root
    position = 12
    for _ in range(int.from_bytes(data[8:12], "big")):
        name = data[position + 62 : data.index(b"\0", position + 62)]
        mode = int.from_bytes(data[position + 24 : position + 28], "big")
        if mode >> 12 != 0o10:  # a link or a submodule: git's to refresh
            git(root, "update-index", "-q", "--refresh")
            return root
        stat = os.lstat(root / os.fsdecode(name))
        out[position : position + 24] = struct.pack(
            ">IIIIII",
            int(stat.st_ctime), stat.st_ctime_ns % 10**9, int(stat.st_mtime), stat.st_mtime_ns % 10**9,
            stat.st_dev & 0xFFFFFFFF, stat.st_ino & 0xFFFFFFFF,
        )  # fmt: skip
        out[position + 28 : position + 40] = struct.pack(
            ">III", stat.st_uid, stat.st_gid, stat.st_size & 0xFFFFFFFF
        )
        position += (62 + len(name) + 8) & ~7  # the entry is NUL-padded to a multiple of 8 bytes
    index.write_bytes(bytes(out + hashlib.sha1(out).digest()))
    return root


def slimmed(root: Path, pack: bool = False) -> Path:
    """A repository that tests copy, as few files as git needs: without the sample hooks and the
    description `git init` writes, and with `pack`, its objects in one pack (a git run, worth it for
    a repository copied hundreds of times). A copy of `repo`'s, and its deletion at a later run, cost
    4.4 ms of CPU with its 34 files, 2.2 with 16; the suite makes some 1,400 such copies."""
    git_dir = root / ".git" if (root / ".git").is_dir() else root  # a bare one is its own
    for sample in (git_dir / "hooks").glob("*.sample"):
        sample.unlink()
    (git_dir / "description").unlink(missing_ok=True)
    if pack:
        git(root, "repack", "-a", "-d", "-q")  # -d: the loose objects go too
    return root


def said(root: Path, rev: str = "HEAD") -> str:
    """A commit's message as a person reads it: without the `Ralph-Op:` trailers that record the
    operations behind it (ralph.plan.ops; tests/plan/test_ops.py checks those)."""
    text = git(root, "log", "-1", "--format=%B", rev)
    return "\n".join(line for line in text.splitlines() if not line.startswith("Ralph-Op: ")).strip()


class Shared:
    """One bare repository (the remote every runner shares) seeded from a `repo`, and its clones,
    each with `ralph init` done (git does not clone the merge driver's registration)."""

    def __init__(self, seed: Path, base: Path):
        self.seed, self.base = seed, base
        self.origin = base / "origin.git"
        git(base, "init", "-q", "--bare", str(self.origin))
        git(seed, "remote", "add", "origin", str(self.origin))
        git(seed, "push", "-q", "origin", "main")

    def clone(self, name: str) -> Path:
        path = self.base / name
        git(self.base, "clone", "-q", str(self.origin), str(path))
        from ralph.usecases import initialize

        initialize.init(path)
        return path

    @classmethod
    def copy_of(cls, template: Shared, base: Path) -> Shared:
        """The repositories of `template` (its seed, remote and clones, all in its base folder) copied
        into `base`, as if made there: some ten git runs and three ralph commands fewer per test."""
        copy_repositories(template.base, base)
        shared = cls.__new__(cls)
        shared.seed = base / template.seed.relative_to(template.base)
        shared.base, shared.origin = base, base / "origin.git"
        return shared

    def plan_on_origin(self) -> bytes:
        return subprocess.run(
            ["git", "cat-file", "blob", "main:plan.jsonl"], cwd=self.origin, check=True, capture_output=True
        ).stdout


def copy_repositories(template: Path, base: Path) -> None:
    """Every repository in the folder `template` copied into `base`: the remote each names by its
    path under `template` is the one under `base`, and each work tree's index is refreshed (the
    copies' inodes and ctimes differ from the index's), by `refreshed`: each work tree in
    `template` must be clean."""
    for entry in template.iterdir():
        shutil.copytree(entry, base / entry.name, symlinks=True)
    for config in base.glob("*/.git/config"):
        config.write_text(config.read_text().replace(f"{template}/", f"{base}/"))
        refreshed(config.parent.parent)  # the templates are clean (conftest's _shared_templates checks)


FAKE_GPG = """#!/bin/sh
# Stands in for gpg: signs anything (git reads the status line from stderr, the signature from stdout).
cat > /dev/null
echo '[GNUPG:] SIG_CREATED D 1 8 00 1 X' >&2
printf -- '-----BEGIN PGP SIGNATURE-----\\nfake\\n-----END PGP SIGNATURE-----\\n'
"""


def with_submodule(project: Path, tmp_path: Path) -> bytes:
    """A submodule at lib/; the bytes of its `.git` link."""
    sub = tmp_path / "sub"
    sub.mkdir()
    git(sub, "init", "-q")
    (sub / "lib.txt").write_text("lib\n")
    git(sub, "add", "lib.txt")
    git(sub, "commit", "-qm", "lib")
    git(project, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "lib")
    git(project, "commit", "-qm", "a submodule")
    return (project / "lib" / ".git").read_bytes()
