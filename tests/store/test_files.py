"""Atomic file writes (ralph/store/files.py), with a real reader in another process; the plan lock is
in test_lock.py."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from ralph.store.files import remove_stale_temp_files, write_atomic

# Two complete versions of a file, of different sizes: any part of one is neither.
VERSIONS = {"a": 600_000, "b": 900_000}

READER = """
import sys
from pathlib import Path

path, ready, stop = (Path(arg) for arg in sys.argv[1:4])
complete = {bytes([ord(char)]) * int(size) for char, size in (pair.split("=") for pair in sys.argv[4:])}
reads = bad = 0
while reads < 100_000 and not stop.exists():
    data = path.read_bytes()
    reads += 1
    bad += data not in complete
    if reads == 1:
        ready.touch()
print(reads, bad)
"""


def version(char: str) -> bytes:
    return char.encode() * VERSIONS[char]


def temp_files(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp"))


def test_write_atomic_replaces_the_content_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "plan.jsonl"
    write_atomic(path, b"first\n")
    assert path.read_bytes() == b"first\n"
    write_atomic(path, b"second, longer\n")
    assert path.read_bytes() == b"second, longer\n"
    write_atomic(path, b"")
    assert path.read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.jsonl"]


@pytest.mark.parametrize("mode", [0o755, 0o600, 0o644])
def test_write_atomic_keeps_the_files_mode(tmp_path, mode):
    path = tmp_path / "script.sh"
    path.write_bytes(b"#!/bin/sh\n")
    path.chmod(mode)
    write_atomic(path, b"#!/bin/sh\necho changed\n")
    assert path.stat().st_mode & 0o7777 == mode
    assert path.read_bytes() == b"#!/bin/sh\necho changed\n"


def test_write_atomic_leaves_the_file_as_it_was_when_the_write_fails(tmp_path):
    path = tmp_path / "plan.jsonl"
    path.write_bytes(b"kept\n")
    with pytest.raises(TypeError):
        write_atomic(path, "not bytes")  # type: ignore[arg-type]  # wrong on purpose: a write that fails
    assert path.read_bytes() == b"kept\n"
    assert temp_files(tmp_path) == []


def test_a_concurrent_reader_never_sees_part_of_a_file(tmp_path):
    path, ready, stop = tmp_path / "plan.jsonl", tmp_path / "ready", tmp_path / "stop"
    write_atomic(path, version("a"))
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(path), str(ready), str(stop)]
        + [f"{char}={size}" for char, size in VERSIONS.items()],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(1000):  # until the reader runs (bounded; nothing here asserts a time)
            if ready.exists() or reader.poll() is not None:
                break
            time.sleep(0.01)
        for number in range(60):
            write_atomic(path, version("ab"[number % 2]))
    finally:
        stop.touch()
        out, _ = reader.communicate(timeout=60)
    reads, bad = map(int, out.split())
    assert reader.returncode == 0
    assert reads > 0
    assert bad == 0, f"{bad} of {reads} reads saw a partial file"


def test_remove_stale_temp_files_removes_only_that_files_temp_files(tmp_path):
    for name in (
        ".plan.jsonl.123.tmp",
        ".plan.jsonl.45678.tmp",
        "plan.jsonl",
        ".other.1.tmp",
        "plan.jsonl.tmp",
    ):
        (tmp_path / name).write_bytes(b"x")
    remove_stale_temp_files(tmp_path, "plan.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.1.tmp", "plan.jsonl", "plan.jsonl.tmp"]


def test_a_link_put_where_the_temp_file_goes_is_not_written_through(tmp_path):
    """An agent that can write beside plan.jsonl names a link for the pid of the ralph that writes
    next: ralph writes its own new file, the link's target stays as it was."""
    import os

    path, victim = tmp_path / "plan.jsonl", tmp_path / "victim.txt"
    path.write_bytes(b"old\n")
    victim.write_bytes(b"the user's own\n")
    (tmp_path / f".plan.jsonl.{os.getpid()}.tmp").symlink_to(victim)
    write_atomic(path, b"new\n")
    assert victim.read_bytes() == b"the user's own\n"
    assert path.read_bytes() == b"new\n" and not path.is_symlink()
    assert temp_files(tmp_path) == []


def test_an_empty_folder_where_the_temp_file_goes_does_not_stop_the_write(tmp_path):
    import os

    path = tmp_path / "plan.jsonl"
    (tmp_path / f".plan.jsonl.{os.getpid()}.tmp").mkdir()
    write_atomic(path, b"new\n")
    assert path.read_bytes() == b"new\n" and temp_files(tmp_path) == []


def test_stale_temp_names_go_but_never_a_links_target_nor_a_folder_with_files(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"kept\n")
    (tmp_path / ".plan.jsonl.1.tmp").symlink_to(victim)
    (tmp_path / ".plan.jsonl.2.tmp").mkdir()
    (tmp_path / ".plan.jsonl.3.tmp").mkdir()
    (tmp_path / ".plan.jsonl.3.tmp" / "someones.txt").write_bytes(b"theirs\n")
    remove_stale_temp_files(tmp_path, "plan.jsonl")
    assert temp_files(tmp_path) == [".plan.jsonl.3.tmp"]  # not ralph's to delete: it holds a file
    assert victim.read_bytes() == b"kept\n"
