"""git's objects in one repository: files, blobs and trees read, from their loose files where ralph
may (no git run) or from one `git cat-file --batch`; trees and commits written; and what is kept
by object id (a file's bytes, a commit's time) for as long as the Repo lives."""

from __future__ import annotations

import os
import re
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Literal

from ralph.errors import GitError
from ralph.store import loose, refs
from ralph.store.git.run import explain

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from ralph.store.git.config import Config
    from ralph.store.git.run import Runner

FILES_KEPT_BYTES = 16 * 2**20  # file_at's bytes kept by object id, per Repo
_KINDS = {b"40000": "tree", b"160000": "commit"}  # by a tree entry's mode; any other is a blob
_FULL_HASH = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class Objects:
    def __init__(self, git: Runner, config: Config):
        self._git, self._config = git, config
        self._objects: Path | Literal[False] | None = None  # _objects_folder: not looked at yet
        self._commit_times: dict[str, int] = {}  # commit -> committer time, as read or made here
        self._code_trees: dict[str, str] = {}  # commit -> code_tree(commit)
        self._files: OrderedDict[tuple[str, str], bytes | None] = OrderedDict()  # file_at by object id
        self._files_bytes, self._files_lock = 0, threading.Lock()

    def tree_entries(self, rev: str | None) -> list[bytes]:
        """A commit's (or tree's) top-level entries as `git ls-tree -z` prints them, kept as bytes:
        a name that is not UTF-8 must reach mktree exactly as it came, or the commit renames it."""
        if rev is None:
            return []
        return [entry for entry in self._git.output(("ls-tree", "-z", rev)).split(b"\0") if entry]

    def code_tree(self, rev: str) -> str:
        """What `rev` holds besides plan.jsonl, as one hash: equal for two commits whose code is the
        same (a claim, a verdict, a give-back change plan.jsonl alone). Cached: a commit never changes."""
        commit = rev if _FULL_HASH.fullmatch(rev) else (self._git.commit_of(rev) or "")
        known = self._code_trees.get(commit)
        if known is None:
            import hashlib

            entries = self.tree_entries(commit or None)
            kept = [entry for entry in entries if not entry.endswith(b"\tplan.jsonl")]
            known = hashlib.sha256(b"\0".join(kept)).hexdigest()
            self._code_trees[commit] = known
        return known

    def code_differs(self, since: str, now: str) -> bool:
        """Whether the code (all but plan.jsonl) of commit `now` differs from that of `since`."""
        return since != now and self.code_tree(since) != self.code_tree(now)

    def snapshot(self) -> tuple[str | None, list[bytes]]:
        """HEAD's commit and its top-level tree entries (None and [] before the first commit): read
        from their object files where both are loose (ralph.store.loose), else from one `git
        cat-file --batch` instead of rev-parse and ls-tree. Every plan commit starts here."""
        found = self._snapshot_from_files()
        if found is not None:
            return found
        out = self._git.output(("cat-file", "--batch"), stdin=b"HEAD^{commit}\nHEAD^{tree}\n")
        commit, tree = _batch_objects(out)
        if commit is None:
            return None, []
        self._note_commit_time(commit[0], commit[2])
        if tree is not None and commit[2].startswith(b"tree %s\n" % tree[0].encode()):
            return commit[0], _tree_records(tree[2], len(tree[0]) // 2)
        parent = self._git.head()  # HEAD moved between the two look-ups: the tree of the commit read now
        return parent, self.tree_entries(parent)

    def _snapshot_from_files(self) -> tuple[str, list[bytes]] | None:
        """snapshot() without git, where HEAD's ref, its commit and its tree are all files that say
        (a branch's ref file, loose objects, no replace refs); None: ask git."""
        head = refs.head_commit(self._git.git_dir())
        objects = self._loose_objects_for(head) if head is not None else None
        if head is None or objects is None:  # (refs.ASK_GIT is no object id either)
            return None
        commit = loose.read(objects, head)
        tree = loose.tree_of(objects, commit[1]) if commit is not None and commit[0] == b"commit" else None
        if commit is None or tree is None or tree[0] != b"tree":
            return None
        self._note_commit_time(head, commit[1])
        return head, _tree_records(tree[1], loose.SHA1_HEX // 2)

    # --- files and blobs -------------------------------------------------------------------------
    def file_at_head(self, relpath: str) -> bytes | None:
        """The file's bytes as HEAD has them, or None (no commit yet, or no such file). HEAD is
        read from the ref files (no git run), the file then kept by its commit (file_at)."""
        head = self._git.head()
        return self.file_at(head, relpath) if head is not None else None

    def mode_at(self, rev: str, relpath: str) -> str | None:
        """The mode of the entry `relpath` in commit or tree `rev` (100644, 100755, 120000 for a
        link, 040000 for a folder, 160000 for a submodule), or None where it has none."""
        listed = self._git.listing("ls-tree", "-z", rev, "--", relpath).split("\0")
        entry = next((line for line in listed if line.endswith(f"\t{relpath}")), None)
        return entry.split(" ", 1)[0] if entry else None

    def file_at(self, rev: str, relpath: str) -> bytes | None:
        """The file's bytes in commit or tree `rev`, or None (no such file there). Kept when `rev`
        is an object id (what it holds never changes): runners racing on one remote read the plan
        of the same few commits in every round. Read from loose objects where every one on the
        way is loose (a commit ralph made), else by git."""
        immutable = _FULL_HASH.fullmatch(rev) is not None
        if immutable and (rev, relpath) in self._files:
            return self._files[(rev, relpath)]
        loose_file = self._loose_file(rev, relpath) if immutable else None
        if loose_file is not None:
            self._keep_file(rev, relpath, loose_file[1])
            return loose_file[1]
        done = self._git.run(("cat-file", "blob", f"{rev}:{relpath}"))
        data = done.stdout if done.returncode == 0 else None
        if immutable:
            self._keep_file(rev, relpath, data)
        return data

    def read_files_at(self, rev: str, relpaths: Iterable[str]) -> dict[str, str | None]:
        """Read the files `relpaths` of commit `rev` (an object id) with one `git cat-file
        --batch`, kept for file_at; each path's object type there ("blob", "tree", ...; None where
        the commit has no such path). A caller that needs several files of one commit asks once
        instead of once per file."""
        if _FULL_HASH.fullmatch(rev) is None:
            return {}
        kinds: dict[str, str | None] = {}
        asked = []
        for path in dict.fromkeys(relpaths):
            loose_file = self._loose_file(rev, path)
            if loose_file is not None:
                kinds[path] = loose_file[0]
                self._keep_file(rev, path, loose_file[1])
            elif path and "\n" not in path:  # one name per line
                asked.append(path)
        if not asked:
            return kinds
        names = "".join(f"{rev}:{path}\n" for path in asked).encode()
        out = self._git.output(("cat-file", "--batch"), stdin=names)
        for path, found in zip(asked, _batch_objects(out), strict=False):
            kinds[path] = found[1] if found is not None else None
            self._keep_file(rev, path, found[2] if found is not None and found[1] == "blob" else None)
        return kinds

    def _loose_file(self, rev: str, relpath: str) -> tuple[str | None, bytes | None] | None:
        """The type of `relpath` in commit `rev` ("blob", "tree", "commit"; None: no such path)
        and a blob's bytes, read from loose objects without a git run (a commit ralph made, and
        its tree, are loose); None where one on the way is not loose: git is asked."""
        objects = self._loose_objects_for(rev)
        known, entry = loose.find(objects, rev, relpath) if objects is not None else (False, None)
        if not known:
            return None
        if entry is None:
            return None, None
        kind = _KINDS.get(entry[0], "blob")
        if kind != "blob":
            return kind, None
        data = _blob_without_git(entry[1], objects)
        return None if data is None else ("blob", data)

    def _loose_objects_for(self, oid: str) -> Path | None:
        """The objects folder, where object `oid` may be read from its loose file as git would read
        it: a SHA-1 id, objects ralph may read (_objects_folder), no replace refs; None: ask git."""
        objects = self._objects_folder()
        if objects is None or len(oid) != loose.SHA1_HEX or loose.replaced(objects.parent):
            return None
        return objects

    def _keep_file(self, rev: str, relpath: str, data: bytes | None) -> None:
        """Keep the file's bytes at object id `rev`, the oldest going beyond FILES_KEPT_BYTES."""
        with self._files_lock:
            self._files[(rev, relpath)] = data
            self._files_bytes += len(data or b"")
            while self._files_bytes > FILES_KEPT_BYTES and len(self._files) > 1:
                _, oldest = self._files.popitem(last=False)
                self._files_bytes -= len(oldest or b"")

    def blob(self, sha: str) -> bytes | None:
        """The bytes of blob `sha`, or None (no such object, and none hashed here)."""
        known = self._known_blob(sha)
        if known is not None:
            return known
        done = self._git.run(("cat-file", "blob", sha))
        return done.stdout if done.returncode == 0 else None

    def _known_blob(self, sha: str) -> bytes | None:
        """Blob `sha` without a git run (_blob_without_git); None: ask git."""
        return _blob_without_git(sha, self._loose_objects_for(sha))

    def blobs(self, shas: list[str]) -> list[bytes | None]:
        """As blob() for each of `shas`, from one `git cat-file --batch` for those not known here."""
        found = {sha: self._known_blob(sha) for sha in shas}
        asked = [sha for sha, data in found.items() if data is None]
        if asked:
            stdin = "".join(f"{sha}\n" for sha in asked).encode()
            out = self._git.output(("cat-file", "--batch"), stdin=stdin)
            for sha, obj in zip(asked, _batch_objects(out), strict=False):
                found[sha] = obj[2] if obj is not None and obj[1] == "blob" else None
        return [found[sha] for sha in shas]

    def files_at(self, revs: list[str], relpath: str) -> list[bytes | None]:
        """The file's bytes in each of `revs` (None where there is no such file), from one
        `git cat-file --batch`."""
        if not revs:
            return []
        asked = "".join(f"{rev}:{relpath}\n" for rev in revs).encode()
        found = _batch_objects(self._git.output(("cat-file", "--batch"), stdin=asked))
        return [obj[2] if obj is not None and obj[1] == "blob" else None for obj in found]

    # --- commits: written, and their times -------------------------------------------------------
    def commit_tree(self, tree: str, parent: str | None, message: str, *more_parents: str) -> str:
        parents = [commit for commit in (parent, *more_parents) if commit]
        sign = ["-S"] if self._config.signs_commits() else []  # commit-tree ignores commit.gpgSign by itself
        stamps = self.commit_dates(parents)
        args = ("commit-tree", *sign, tree, *(arg for commit in parents for arg in ("-p", commit)), "-F", "-")
        made = self._git.output(args, message_bytes(message), stamps).decode().strip()
        self.note_stamp(made, stamps)
        return made

    def note_stamp(self, commit: str | None, stamps: dict[str, str]) -> None:
        """Remember the committer time ralph gave a commit it made: the next one, made on it,
        needs it (commit_dates) and need not ask git."""
        if commit and "GIT_COMMITTER_DATE" in stamps:
            self._commit_times[commit] = int(stamps["GIT_COMMITTER_DATE"][1:].split()[0])

    def commit_dates(self, parents: list[str]) -> dict[str, str]:
        """The dates of a commit ralph makes on `parents`: this runner's clock (moved by
        $RALPH_CLOCK_SKEW_S, as a machine with a wrong clock would stamp it), and a committer date
        never earlier than its latest parent's. Times along a history ralph writes thus never go
        backwards, and a runner whose clock is behind is pulled forward to the history's time: a
        claim's commit says when it was made in a time every runner reads alike (see
        ralph.store.claim_clock). Not a second later than the parent, as a strictly rising time
        would be: a burst of commits in one second would then run ahead of every clock. Dates
        the environment sets (GIT_COMMITTER_DATE, GIT_AUTHOR_DATE) are kept."""
        from ralph import clock

        now, zone = int(clock.now_s()), time.strftime("%z")  # the zone git would write
        stamps = {}
        if clock.skew_s() and "GIT_AUTHOR_DATE" not in self._git.env:
            stamps["GIT_AUTHOR_DATE"] = f"@{now} {zone}"
        if "GIT_COMMITTER_DATE" not in self._git.env:
            latest = max(self.commit_times(parents).values(), default=0)
            stamps["GIT_COMMITTER_DATE"] = f"@{max(now, latest)} {zone}"
        return stamps

    def commit_times(self, commits: list[str]) -> dict[str, int]:
        """Each commit's committer time (seconds since the epoch), read once per Repo."""
        missing = [commit for commit in commits if commit not in self._commit_times]
        if missing:
            out = self._git.git("log", "--no-walk=unsorted", "--format=%H %ct", *missing, "--")
            for line in out.splitlines():
                commit, _, time_s = line.partition(" ")
                if time_s.isdigit():
                    self._commit_times[commit] = int(time_s)
        return {commit: self._commit_times[commit] for commit in commits if commit in self._commit_times}

    def remember_commit_time(self, commit: str, time_s: int) -> None:
        """A commit's committer time read along with something else: commit_times need not ask."""
        self._commit_times[commit] = time_s

    def _note_commit_time(self, commit: str, raw: bytes) -> None:
        """Remember the committer time of a commit whose raw object was read anyway."""
        for line in raw.split(b"\n\n", 1)[0].split(b"\n"):
            if line.startswith(b"committer "):
                fields = line.rsplit(b" ", 2)
                if len(fields) == 3 and fields[1].isdigit():
                    self._commit_times[commit] = int(fields[1])

    # --- trees: written ---------------------------------------------------------------------------
    def tree_with_file(self, tree: str, relpath: str, data: bytes) -> str:
        """`tree` with its top-level file `relpath` replaced by `data` (its mode kept)."""
        entries = self.tree_entries(tree)
        old, mode = entry_of(entries, relpath)
        return self.mktree(self.entries_with(entries, old, mode, relpath, data)[0])

    def entries_with(
        self, entries: list[bytes], old: bytes | None, mode: str, relpath: str, data: bytes
    ) -> tuple[list[bytes], str]:
        """Tree entries with `old` replaced by a blob of `data` (written now), and that blob."""
        objects = self._loose_objects(entries)
        if objects is not None:
            blob = loose.store(objects, b"blob", data)
        else:
            blob = self._git.git("hash-object", "-w", "--stdin", stdin=data).strip()
        entry = f"{mode} blob {blob}\t".encode() + os.fsencode(relpath)
        return [*(other for other in entries if other is not old), entry], blob

    def mktree(self, entries: list[bytes]) -> str:
        objects = self._loose_objects(entries)
        if objects is not None:
            return loose.store(objects, b"tree", loose.tree(entries))
        return self._git.git("mktree", "-z", stdin=b"\0".join([*entries, b""])).strip()

    def _loose_objects(self, entries: list[bytes]) -> Path | None:
        """The objects folder, when a commit's blob and tree (whose entries these are) may be
        written there without a git process (ralph.store.loose); None: git writes them."""
        return self._objects_folder() if loose.sha1_ids(entries) else None

    def _objects_folder(self) -> Path | None:
        """ralph.store.loose.objects_folder, looked up once per Repo."""
        if self._objects is None:
            self._objects = loose.objects_folder(self._git.git_dir()) or False
        return self._objects or None

    def merge_tree(self, ours: str, theirs: str, plan_driver: str | None = None) -> tuple[str, list[str]]:
        """The three-way merge of two commits as a tree, without touching the index or the work
        tree (`git merge-tree --write-tree`), and the paths that conflicted (their tree entries
        then hold conflict markers). `plan_driver`: the command git runs as ralph's merge driver."""
        driver = ("-c", f"merge.ralph.driver={plan_driver}") if plan_driver else ()
        done = self._git.run((*driver, "merge-tree", "--write-tree", "--name-only", "-z", ours, theirs))
        if done.returncode not in (0, 1):
            raise GitError(explain(("merge-tree",), done.stderr.decode("utf-8", "replace")))
        listing = done.stdout.decode("utf-8", "surrogateescape").split("\0\0", 1)[0].split("\0")
        return listing[0], sorted({path for path in listing[1:] if path})


def entry_of(entries: list[bytes], relpath: str) -> tuple[bytes | None, str]:
    """The top-level tree entry of `relpath` (None when absent) and the mode a new version of it
    gets: its executable bit kept."""
    name = os.fsencode(relpath)
    old = next((entry for entry in entries if entry.split(b"\t", 1)[1] == name), None)
    return old, "100755" if old and old.startswith(b"100755 ") else "100644"


def blob_in(entries: list[bytes], relpath: str) -> str | None:
    """The blob of top-level file `relpath` among a tree's `entries`, or None where it has none."""
    old, _ = entry_of(entries, relpath)
    return old.split(b"\t", 1)[0].split()[2].decode() if old else None


def message_bytes(message: str) -> bytes:
    # A name read from JSON may hold a lone surrogate ("\ud800"): not encodable, so replaced.
    return message.encode("utf-8", "replace")


def _blob_without_git(sha: str, objects: Path | None) -> bytes | None:
    """Blob `sha` hashed in this process (an object's content never changes), or read from its
    loose file in `objects` (the plan's blobs ralph commits are stored loose); None: ask git
    (packed, replaced, another object format)."""
    from ralph.store.blobs import known_bytes

    known = known_bytes(sha)
    if known is not None or objects is None:
        return known
    found = loose.read(objects, sha)
    return found[1] if found is not None and found[0] == b"blob" else None


def _batch_objects(out: bytes) -> list[tuple[str, str, bytes] | None]:
    """`git cat-file --batch` output: (id, type, content) per object asked for, None where git
    found none ("<name> missing")."""
    objects: list[tuple[str, str, bytes] | None] = []
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        header = out[at:end].decode("utf-8", "replace").split(" ")
        if len(header) != 3 or not header[2].isdigit():
            objects.append(None)
            at = end + 1
            continue
        size = int(header[2])
        objects.append((header[0], header[1], out[end + 1 : end + 1 + size]))
        at = end + 1 + size + 1  # the content, then a newline
    return objects


def _tree_records(raw: bytes, hash_size: int) -> list[bytes]:
    """A raw tree object's entries (`<mode> <name>\\0<binary id>`) as `git ls-tree -z` prints
    them (`<mode> <type> <hex id>\\t<name>`), which is what mktree reads back."""
    entries: list[bytes] = []
    at = 0
    while at < len(raw):
        space = raw.index(b" ", at)
        nul = raw.index(b"\0", space)
        mode, name = raw[at:space], raw[space + 1 : nul]
        oid = raw[nul + 1 : nul + 1 + hash_size].hex().encode()
        kind = b"tree" if mode == b"40000" else b"commit" if mode == b"160000" else b"blob"
        entries.append(b"%s %s %s\t%s" % (mode.rjust(6, b"0"), kind, oid, name))
        at = nul + 1 + hash_size
    return entries
