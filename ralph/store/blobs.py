"""git's object ids computed without git: the id of a file's bytes."""

from __future__ import annotations


def blob_sha(data: bytes) -> str:
    """The id git gives a file with these bytes, computed without running git."""
    import hashlib  # here, not above: read-only commands import ralph.store.git for find_root alone

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
