"""ralph.store.blobs: the ids of bytes computed without git are the ones git computes."""

from __future__ import annotations

import subprocess

import pytest

from ralph.store.blobs import blob_sha


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
