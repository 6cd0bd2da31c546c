"""git's object ids computed without git: the id of a file's bytes (and of a tree's)."""

from __future__ import annotations

import threading

# Importing hashlib loads OpenSSL (2 ms of a state command's 60); CPython's own SHA-1 needs no
# loading but hashes about 7 times slower (270 MB/s here), so it serves plans up to where hashing
# one costs what loading OpenSSL does: 384 KB, some 2,000 tasks. Ids of contents over _KEPT_FROM
# are kept, so a command that hashes one plan twice pays once.
_OWN_SHA1_UP_TO = 384 * 1024
_KEPT_FROM = 128 * 1024


# The ids of the last few long contents: a transaction's plan before is the one the last one wrote
# (its id computed then), and equal bytes are told apart from others by a compare, not a hash.
_KNOWN: dict[bytes, str] = {}
_KNOWN_SIZE = 4
_KNOWN_LOCK = threading.Lock()  # VERIFY's threads commit too


def blob_sha(data: bytes) -> str:
    """The id git gives a file with these bytes, computed without running git."""
    if len(data) > _KEPT_FROM:
        known = _kept(data)
        if known is None:
            known = _sha(data)
            with _KNOWN_LOCK:
                _KNOWN[data] = known
                while len(_KNOWN) > _KNOWN_SIZE:
                    del _KNOWN[next(iter(_KNOWN))]  # the oldest
        return known
    return _sha(data)


def _kept(data: bytes) -> str | None:
    """The id kept for these bytes: compared with the few kept, not looked up by a hash of them
    (a new object's hash is a pass over a long plan three times a compare's, which stops at once
    where the lengths differ)."""
    with _KNOWN_LOCK:
        kept = list(_KNOWN.items())
    return next((known for content, known in kept if content == data), None)


def known_bytes(sha: str) -> bytes | None:
    """The bytes of blob `sha` when they are among the long contents whose id was computed here
    (a commit's plan this process wrote): git need not be asked for them."""
    with _KNOWN_LOCK:
        return next((data for data, known in _KNOWN.items() if known == sha), None)


def object_sha(kind: bytes, data: bytes) -> str:
    """The id git gives an object of `kind` (b"tree", b"commit") holding these bytes."""
    return _sha(data, kind)


def _sha(data: bytes, kind: bytes = b"blob") -> str:
    if len(data) <= _OWN_SHA1_UP_TO:
        try:
            from _sha1 import sha1  # type: ignore[import-not-found]  # CPython's; typeshed has no stub
        except ImportError:  # a Python built without it
            from hashlib import sha1
    else:  # here, not above: OpenSSL loads in 2 ms, for the large plans alone
        try:  # OpenSSL's module itself: hashlib's own import adds most of a millisecond more
            from _hashlib import openssl_sha1 as sha1
        except ImportError:  # a Python built without it
            from hashlib import sha1
    hashed = sha1(b"%s %d\0" % (kind, len(data)))
    hashed.update(data)  # not the header + data: a copy of a long plan
    digest: str = hashed.hexdigest()
    return digest
