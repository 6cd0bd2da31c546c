"""git's loose objects written and read without running git: the blob and the tree of a plan
commit, and HEAD's commit and tree before it.

Every ralph command that changes the plan commits it, and each git process costs more to start
(1-1.5 ms of CPU, most of it the kernel's and the dynamic linker's) than the work it does here:
hashing a few kilobytes and deflating them. So the plan's blob and the top-level tree holding it
are stored as git stores a loose object (`objects/ab/cdef...`, zlib-deflated `<kind> <size>\\0`
and the bytes, named by the SHA-1 of those, written to a temporary file and linked in place), and
git's own processes remain for what needs git's judgement: the commit (its identity, its
signature) and moving HEAD. What the next commit starts from, HEAD's commit and its tree, is read
from their files where they are loose (the commit ralph made last is), and from git elsewhere; so
is a file of such a commit (`find`: a path walked through its trees) and a blob. An object read is
believed only when its content hashes to its name: a file written there by hand is left to git.

Only where that is exactly what git would do: a SHA-1 repository, objects in the repository's
own folder (no $GIT_OBJECT_DIRECTORY), and no shared-repository permissions to apply (an objects
folder writable by its group or others, or setgid, as core.sharedRepository makes it). Anywhere
else `objects_folder` says None and the caller asks git.
"""

from __future__ import annotations

import contextlib
import os
import stat
import zlib
from pathlib import Path

from ralph.store.blobs import blob_sha, object_sha
from ralph.store.root import common_git_dir

SHA1_HEX = 40
# git's own level for loose objects (core.looseCompression): fast, and any level reads back alike.
_LEVEL = 1
_SHARED_BITS = stat.S_ISGID | stat.S_IWGRP | stat.S_IWOTH


def objects_folder(git_dir: Path) -> Path | None:
    """Where the repository whose git directory is `git_dir` keeps its objects, when ralph may
    write loose ones there as git would; None when git should (see the module's docstring)."""
    if os.environ.get("GIT_OBJECT_DIRECTORY"):
        return None
    try:  # a linked worktree's git directory names the shared one
        objects = common_git_dir(git_dir) / "objects"
        mode = objects.stat().st_mode
    except (OSError, ValueError):  # a commondir file unreadable, or not text
        return None
    return objects if stat.S_ISDIR(mode) and not mode & _SHARED_BITS else None


def store(objects: Path, kind: bytes, data: bytes) -> str:
    """Store an object of `kind` (b"blob", b"tree") holding `data`; its id. One already there is
    left as it is and touched, as git touches it: a `git gc` then keeps it as new."""
    oid = blob_sha(data) if kind == b"blob" else object_sha(kind, data)  # blob_sha keeps long ones
    folder = objects / oid[:2]
    final = folder / oid[2:]
    try:
        os.utime(final)
        return oid
    except FileNotFoundError:
        pass
    except OSError:  # there, but another user's to touch: there all the same, as git takes it
        return oid
    folder.mkdir(exist_ok=True)
    deflated = zlib.compress(b"%s %d\0" % (kind, len(data)) + data, _LEVEL)
    # git's name for its own temporary objects: `git gc` clears one a kill left behind.
    temporary = folder / f"tmp_obj_{os.urandom(6).hex()}"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(deflated)
        try:  # as git does: a link never replaces an object another process stored meanwhile
            os.link(temporary, final)
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links
            os.replace(temporary, final)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    return oid


def read(objects: Path, oid: str) -> tuple[bytes, bytes] | None:
    """The kind and the bytes of object `oid` where it is stored loose in `objects`; None where
    it is not (packed, or missing) or its file is not the whole object of that id: git is asked
    then."""
    try:
        stored = (objects / oid[:2] / oid[2:]).read_bytes()
        whole = zlib.decompress(stored)
    except (OSError, ValueError, zlib.error):
        return None
    header, _, data = whole.partition(b"\0")
    kind, _, size = header.partition(b" ")
    if not size.isdigit() or int(size) != len(data) or object_sha(kind, data) != oid:
        return None  # not the object its name says (a file someone wrote there): git decides
    return kind, data


def find(objects: Path, rev: str, relpath: str) -> tuple[bool, tuple[bytes, str] | None]:
    """The mode and id of `relpath` in the commit or tree `rev`, from loose objects alone: (True,
    (mode, id)) where it is there, (True, None) where it is not, (False, None) where an object on
    the way is not loose (or the path is not plain): git is asked then."""
    names = relpath.split("/")
    found = None if any(name in ("", ".", "..") for name in names) else read(objects, rev)
    if found is None:
        return False, None
    try:
        return _walk(objects, found, names)
    except ValueError:  # a tree object that is no well-formed tree (git's own words then)
        return False, None


def _walk(
    objects: Path, start: tuple[bytes, bytes], names: list[str]
) -> tuple[bool, tuple[bytes, str] | None]:
    """find() from the object `start` (a commit or a tree), one folder of `names` at a time."""
    kind, data = start
    if kind == b"commit":
        tree = tree_of(objects, data)
        if tree is None:
            return False, None
        kind, data = tree
    for depth, name in enumerate(names):
        if kind != b"tree":
            return (True, None) if depth else (False, None)  # a file on the way: no such path
        entry = _entry(data, os.fsencode(name))
        if entry is None or depth == len(names) - 1:
            return True, entry
        inner = read(objects, entry[1]) if entry[0] == b"40000" else (b"blob", b"")
        if inner is None:
            return False, None
        kind, data = inner
    return False, None


def tree_of(objects: Path, commit_raw: bytes) -> tuple[bytes, bytes] | None:
    """The loose object a raw commit's first line names as its tree (kind and bytes); None where
    that line names none or the object is not loose."""
    line = commit_raw.split(b"\n", 1)[0]
    return read(objects, line[5:].decode("ascii", "replace")) if line.startswith(b"tree ") else None


def _entry(tree_raw: bytes, name: bytes) -> tuple[bytes, str] | None:
    """The mode and id of the entry `name` of a raw (SHA-1) tree object, or None."""
    at = 0
    while at < len(tree_raw):
        space = tree_raw.index(b" ", at)
        nul = tree_raw.index(b"\0", space)
        if tree_raw[space + 1 : nul] == name:
            return tree_raw[at:space], tree_raw[nul + 1 : nul + 21].hex()
        at = nul + 21
    return None


def replaced(common: Path) -> bool:
    """Whether the repository whose git directory is `common` replaces objects (`git replace`):
    git then reads another object than the file names, so ralph asks git."""
    if (common / "refs" / "replace").is_dir() and any((common / "refs" / "replace").iterdir()):
        return True
    try:
        return b" refs/replace/" in (common / "packed-refs").read_bytes()
    except OSError:
        return False


def tree(entries: list[bytes]) -> bytes:
    """A raw tree object of top-level entries as `git ls-tree -z` prints them (`<mode> <type>
    <id>\\t<name>`), in git's order: by name, a folder's name read with a `/` after it."""
    records = []
    for entry in entries:
        meta, _, name = entry.partition(b"\t")
        mode, kind, oid = meta.split(b" ")
        key = name + b"/" if kind == b"tree" else name
        records.append((key, b"%s %s\0" % (mode.lstrip(b"0"), name) + bytes.fromhex(oid.decode())))
    records.sort(key=lambda record: record[0])
    return b"".join(record for _, record in records)


def sha1_ids(entries: list[bytes]) -> bool:
    """Whether these tree entries name objects by SHA-1 (not an empty tree, not SHA-256)."""
    ids = [entry.partition(b"\t")[0].rsplit(b" ", 1)[1] for entry in entries]
    return bool(ids) and all(len(oid) == SHA1_HEX for oid in ids)
