"""Remember which plan.jsonl content is already proven valid, so reading it again skips the
per-record validation (most of a command's own work on a large plan).

The key is a digest of the exact bytes, ralph's version and the schema file's identity: any edit,
by hand or by git, changes it and brings back the full validation. The cache lives inside the git
directory, so it is never committed and never shared between clones.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

CACHE_NAME = "ralph-valid-plan"


def _cache_file(root: Path) -> Path | None:
    from ralph.store.root import git_dir

    folder = git_dir(root)
    return folder / CACHE_NAME if folder.is_dir() else None


def _key(data: bytes) -> str:
    """The salt's digest with the bytes' git blob id: the id a transaction's commit and its record
    of operations (ralph.store.pending_ops) need of the same bytes anyway, computed once for all
    (ralph.store.blobs keeps the id of each long content), not a second pass over a long plan."""
    try:  # hashlib's own BLAKE2 module: importing hashlib loads OpenSSL too, 2 ms of every read
        from _blake2 import blake2b
    except ImportError:  # a Python built without it
        from hashlib import blake2b

    from ralph import __version__
    from ralph.plan.validate import SCHEMA_PATH
    from ralph.store.blobs import blob_sha

    schema = SCHEMA_PATH.stat()
    salt = f"{__version__}:{schema.st_size}:{schema.st_mtime_ns}".encode()
    return blake2b(salt + b"\0" + blob_sha(data).encode(), digest_size=20).hexdigest()


def known_valid(root: Path, data: bytes) -> bool:
    cache = _cache_file(root)
    try:
        return cache is not None and cache.read_text(encoding="ascii") == _key(data)
    except OSError:
        return False


def remember(root: Path, data: bytes) -> None:
    cache = _cache_file(root)
    if cache is None:
        return
    temp = cache.with_name(f"{CACHE_NAME}.{os.getpid()}.tmp")
    try:
        temp.write_text(_key(data), encoding="ascii")
        os.replace(temp, cache)  # readers see the old key or the new one, never half of one
    except OSError:  # only a cache: never fail a command over it
        try:
            temp.unlink(missing_ok=True)
        except OSError as exc:  # a read-only .git (ralph's sandbox) refuses even this: EROFS
            if exc.errno != errno.EROFS:
                raise
