"""ralph's one git layer: a `Repo` over one work tree.

Each operation runs the git binary (never a shell): importing gitpython alone costs 120-150 ms, more
than a whole `ralph task done` may take, and one plumbing call costs 1-5 ms. The one place its
object database could have paid for that, reading a file's whole history for `ralph log`, is one
`git log -p` process instead (gitlog.file_history): git's own diff beat reading every version, through
gitpython or `git cat-file --batch` (measured there), so ralph does not use gitpython.

Committing plan.jsonl builds the new tree from HEAD's tree with only plan.jsonl replaced, so the
user's staged and unstaged work is never part of ralph's commit and the index keeps everything
the user staged. Paths are always literal (GIT_LITERAL_PATHSPECS): a file named `pages/[id].js` is
that file, not a pattern.
"""

from __future__ import annotations

import os
import re
import stat
import threading
import time
from collections import OrderedDict
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from ralph.errors import BranchSwitched, GitError, WorkTreeGone
from ralph.store import loose, programs, refs
from ralph.store.blobs import blob_sha
from ralph.store.root import PLAN_NAME, git_dir

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Generator, Iterable

ZERO_SHA = "0" * 40
# The most one git command may take: plumbing takes milliseconds, a fetch or push of a large
# build minutes. A git still running then (a remote that stopped answering, a filter driver that
# hangs) is killed and the command fails, rather than hold the plan's lock for ever.
GIT_TIMEOUT_S = 600.0
FILES_KEPT_BYTES = 16 * 2**20  # file_at's bytes kept by object id, per Repo
_KINDS = {b"40000": "tree", b"160000": "commit"}  # by a tree entry's mode; any other is a blob
_COMMON_DIRS: dict[str, Path] = {}  # a work tree's git common dir (Repo.common_dir)
# Variables a git hook or wrapper may set that would point git somewhere other than this repo.
_FULL_HASH = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_COMMON_DIR")
# Settings over every config file that keep each git call ralph makes from running what a
# repository, a submodule or an agent wrote: no fsmonitor program, no hooks (ralph's commits,
# checkouts and ref updates run none: a hooksPath in the work tree, as husky sets, is the agents' to
# write; the one hook ralph means to run, pre-commit with run_hooks, it runs itself, in the fence),
# and no command that goes into submodules, whose `.git` links lie in the work tree. Given as
# GIT_CONFIG_PARAMETERS, which is what `git -c` passes on (the same precedence, over every file, and
# for the git processes git starts too), read by every git version; the argv stays the command's.
# Filters stay on (git-lfs needs its clean and smudge): a driver is defined only in config, which
# agents cannot write (.git and $HOME are read-only in the fence, and a config that includes a file
# of the work tree is refused at the start of a run: ralph.loop.preflight), so .gitattributes
# chooses among the person's drivers alone, and git starts them with a PATH that has no entry
# inside the work tree; a driver whose command names a file of the work tree (`./scripts/clean.sh`)
# is refused at the start too (ralph.store.drivers).
_HOOKS_OFF = (f"core.hooksPath={os.devnull}",)
_HARDENED = (
    "core.fsmonitor=false",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "push.recurseSubmodules=no",
)
# Options each command gets, right after its name: status and diff never look into a submodule's
# work tree (which would run git there, with the config its `.git` link leads to: `dirty` still
# shows a gitlink an agent staged or committed, read from the refs its link leads to, running
# nothing), and a diff never runs an external diff or a textconv program.
_COMMAND_OPTIONS = {
    "status": ("--ignore-submodules=dirty",),
    "diff": ("--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty"),
    "diff-tree": ("--no-ext-diff", "--no-textconv"),
}


def _plain_bytes(path: Path) -> bytes | None:
    """The bytes of `path` where it is a regular file, not a link and not executable (its commit's
    entry is then a plain blob's, as `git add` would stage it), read through the descriptor that
    was checked; None otherwise (a FIFO is not waited on)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as file:
        mode = os.fstat(descriptor).st_mode
        return file.read() if stat.S_ISREG(mode) and not mode & 0o111 else None


class Repo:
    def __init__(self, root: Path):
        self.root = root
        programs.fence(root)  # nothing ralph runs comes from inside it
        self._env = {key: value for key, value in os.environ.items() if key not in _LOCATION_VARS}
        self._env["PATH"] = programs.trusted_path(self._env.get("PATH", os.defpath))
        self._env["GIT_LITERAL_PATHSPECS"] = "1"
        self._env["GIT_TERMINAL_PROMPT"] = "0"  # a fetch or push never waits for a password
        self._env["GIT_CONFIG_PARAMETERS"] = _config_parameters(self._env, (*_HOOKS_OFF, *_HARDENED))
        self._signs: bool | None = None
        self._objects: Path | Literal[False] | None = None  # _loose_objects: not looked at yet
        self._commit_times: dict[str, int] = {}  # commit -> committer time, as read or made here
        self._code_trees: dict[str, str] = {}  # commit -> code_tree(commit)
        self._files: OrderedDict[tuple[str, str], bytes | None] = OrderedDict()  # file_at by object id
        self._files_bytes, self._files_lock = 0, threading.Lock()
        self.run_branch: str | None = None  # a construct's branch: nothing is committed on another

    def with_index(self, index: Path) -> Repo:
        """This work tree with an index file of its own (GIT_INDEX_FILE): what git stages through
        it leaves the index people use as it was."""
        other = Repo(self.root)
        other._env["GIT_INDEX_FILE"] = str(index)
        return other

    def git(self, *args: str, stdin: bytes | None = None) -> str:
        return self._output(args, stdin).decode("utf-8", "replace")

    def paths(self, *args: str) -> list[str]:
        """The paths a git command lists with -z, as names to hand back to git (see _paths)."""
        return [path for path in self._paths(*args).split("\0") if path]

    def _paths(self, *args: str) -> str:
        """git's output for a command that lists paths, as names to hand back to git: a name that
        is not UTF-8 keeps its bytes (as surrogates, which arguments encode back), where the
        replacement character would name no file at all."""
        return self._output(args).decode("utf-8", "surrogateescape")

    def _output(
        self, args: tuple[str, ...], stdin: bytes | None = None, env: dict[str, str] | None = None
    ) -> bytes:
        """git's stdout as bytes; GitError naming the command when it fails. `env`: variables
        set for this command alone."""
        done = self._run(args, stdin, env)
        if done.returncode != 0:
            raise GitError(_explain(args, done.stderr.decode("utf-8", "replace")))
        return done.stdout

    def _run(
        self,
        args: tuple[str, ...],
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        hooks_as_configured: bool = False,
    ) -> subprocess.CompletedProcess[bytes]:
        """`hooks_as_configured`: core.hooksPath as the person's config sets it (to find a hook,
        never to run one)."""
        import subprocess  # here, not above: a command may import this module and never run git

        try:
            # A session of its own: when ralph's process group is killed (SIGKILL of a timed-out
            # agent and everything it started), a git command already running still finishes and
            # removes its lock file (.git/index.lock, refs/heads/*.lock) instead of leaving it
            # behind for every later git command to fail on. These plumbing commands take
            # milliseconds and never wait for input.
            if hooks_as_configured:
                env = {**(env or {}), "GIT_CONFIG_PARAMETERS": _config_parameters(os.environ, _HARDENED)}
            return subprocess.run(
                git_argv(args),
                cwd=self.root,
                env={**self._env, **env} if env else self._env,
                input=stdin,
                capture_output=True,
                check=False,
                start_new_session=True,
                timeout=GIT_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            raise GitError(_timed_out(args)) from None
        except FileNotFoundError:
            if not self.root.is_dir():  # subprocess says the same of a missing working directory
                raise WorkTreeGone(
                    f"the work tree {self.root} is gone (removed while ralph worked in it)"
                ) from None
            raise GitError("git is not installed (or not on PATH)") from None

    def attempt(self, *args: str) -> tuple[int, str, str]:
        """Run git and hand back its exit code, stdout and stderr, for callers that tell failures
        apart themselves (a push that lost a race from one the remote refused)."""
        done = self._run(args)
        return done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")

    def config_get(self, key: str) -> str | None:
        """The value git would use for `key` (this repository's config, the user's, the system's),
        or None when none of them sets it."""
        done = self._run(("config", "--get", key))
        if done.returncode == 1:  # git's answer for a key that is not set
            return None
        if done.returncode != 0:
            raise GitError(_explain(("config",), done.stderr.decode("utf-8", "replace")))
        return done.stdout.decode("utf-8", "replace").removesuffix("\n")

    def config_files_in_work_tree(self) -> list[str]:
        """The config files git reads for this repository that lie in the work tree outside its
        git directories (a file `include.path` names, such as a tracked `.gitconfig`): agents
        write them, and a config can name programs git runs (a filter, a diff driver, ssh)."""
        listed = self._paths("config", "--list", "--show-origin", "--name-only", "-z").split("\0")
        files = {origin.removeprefix("file:") for origin in listed[::2] if origin.startswith("file:")}
        top = os.path.realpath(self.root)
        git_dirs = [os.path.realpath(self.git_dir()), os.path.realpath(self.common_dir())]
        found = []
        for name in sorted(files):
            real = os.path.realpath(self.root / name)  # a relative origin is relative to the work tree
            inside = real == top or real.startswith(top + os.sep)
            if inside and not any(real == d or real.startswith(d + os.sep) for d in git_dirs):
                found.append(os.path.relpath(real, top))
        return found

    def config_set(self, key: str, value: str) -> None:
        """Set `key` in this repository's own config (.git/config: neither committed nor cloned)."""
        self.git("config", "--local", key, value)

    def head(self) -> str | None:
        """The commit HEAD points at, or None in a repository with no commits yet: from the ref
        files where they say (ralph.store.refs), else from git."""
        found = refs.head_commit(self.git_dir())
        if found != refs.ASK_GIT:
            return found
        try:
            return self.git("rev-parse", "-q", "--verify", "HEAD^{commit}").strip()
        except GitError:
            return None

    def tree_entries(self, rev: str | None) -> list[bytes]:
        """A commit's (or tree's) top-level entries as `git ls-tree -z` prints them, kept as bytes:
        a name that is not UTF-8 must reach mktree exactly as it came, or the commit renames it."""
        if rev is None:
            return []
        return [entry for entry in self._output(("ls-tree", "-z", rev)).split(b"\0") if entry]

    def code_tree(self, rev: str) -> str:
        """What `rev` holds besides plan.jsonl, as one hash: equal for two commits whose code is the
        same (a claim, a verdict, a give-back change plan.jsonl alone). Cached: a commit never changes."""
        commit = rev if _FULL_HASH.fullmatch(rev) else (self.commit_of(rev) or "")
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
        out = self._output(("cat-file", "--batch"), stdin=b"HEAD^{commit}\nHEAD^{tree}\n")
        commit, tree = _batch_objects(out)
        if commit is None:
            return None, []
        self._note_commit_time(commit[0], commit[2])
        if tree is not None and commit[2].startswith(b"tree %s\n" % tree[0].encode()):
            return commit[0], _tree_records(tree[2], len(tree[0]) // 2)
        parent = self.head()  # HEAD moved between the two look-ups: the tree of the commit read now
        return parent, self.tree_entries(parent)

    def _snapshot_from_files(self) -> tuple[str, list[bytes]] | None:
        """snapshot() without git, where HEAD's ref, its commit and its tree are all files that say
        (a branch's ref file, loose objects, no replace refs); None: ask git."""
        head = refs.head_commit(self.git_dir())
        objects = self._loose_objects_for(head) if head is not None else None
        if head is None or objects is None:  # (refs.ASK_GIT is no object id either)
            return None
        commit = loose.read(objects, head)
        tree = loose.tree_of(objects, commit[1]) if commit is not None and commit[0] == b"commit" else None
        if commit is None or tree is None or tree[0] != b"tree":
            return None
        self._note_commit_time(head, commit[1])
        return head, _tree_records(tree[1], loose.SHA1_HEX // 2)

    def commit_file(
        self, relpath: str, data: bytes, message: str, base: tuple[str | None, list[bytes]] | None = None
    ) -> tuple[str | None, list[bytes]]:
        """Commit `data` as the content of top-level file `relpath`, and nothing else.

        `base` is a snapshot() still current. Returns the new snapshot; its commit is None when
        HEAD already holds exactly these bytes (nothing to commit).
        """
        prepared = self.prepare_commit(relpath, data, message, base)
        if prepared is None:
            return None, (base or self.snapshot())[1]
        self.land(prepared)
        return prepared.commit, prepared.entries

    def commit_files(
        self, files: dict[str, bytes], message: str, base: tuple[str | None, list[bytes]] | None = None
    ) -> tuple[str | None, list[bytes]]:
        """Commit each top-level file of `files` with its bytes, and nothing else, in one commit;
        as commit_file does for one (None: HEAD already holds them all)."""
        parent, entries = base or self.snapshot()
        staged: list[tuple[str, str, str]] = []
        for relpath, data in files.items():
            old, mode = _entry_of(entries, relpath)
            if old != f"{mode} blob {blob_sha(data)}\t".encode() + os.fsencode(relpath):
                entries, blob = self._entries_with(entries, old, mode, relpath, data)
                staged.append((relpath, blob, mode))
        if not staged:
            return None, entries
        commit = self.commit_tree(self._mktree(entries), parent, message)
        subject = (message.splitlines()[0] if message.strip() else "ralph")[:200]
        self.git("update-ref", "-m", subject, "HEAD", commit, parent or ZERO_SHA)
        try:
            for relpath, blob, mode in staged:
                self._stage(relpath, blob, mode)
        except GitError as exc:
            self._undo_ref(PreparedCommit(*staged[0], commit, parent, entries, message))
            raise GitError(f"{exc}; HEAD was put back, nothing is committed") from None
        return commit, entries

    def prepare_commit(
        self, relpath: str, data: bytes, message: str, base: tuple[str | None, list[bytes]] | None = None
    ) -> PreparedCommit | None:
        """Write the commit's objects, moving nothing: whatever would stop the commit (no git
        identity, a full disk) fails here, before the caller writes any file. None when HEAD
        already holds exactly these bytes."""
        parent, entries = base or self.snapshot()
        old, mode = _entry_of(entries, relpath)
        if old == f"{mode} blob {blob_sha(data)}\t".encode() + os.fsencode(relpath):
            return None
        new_entries, blob = self._entries_with(entries, old, mode, relpath, data)
        commit = self.commit_tree(self._mktree(new_entries), parent, message)
        return PreparedCommit(relpath, mode, blob, commit, parent, new_entries, message)

    def land(self, prepared: PreparedCommit, from_work_tree: bool = False) -> None:
        """Move HEAD to the prepared commit and record the file in the index: both or neither.
        `from_work_tree`: the work tree's file holds the commit's bytes (see _stage)."""
        self.refuse_switched_branch()
        # The reflog keeps the subject; argv has a size limit, so a huge one is cut.
        subject = (prepared.message.splitlines()[0] if prepared.message.strip() else "ralph")[:200]
        # The old value makes this a compare-and-swap: a commit made meanwhile is never lost.
        self.git("update-ref", "-m", subject, "HEAD", prepared.commit, prepared.parent or ZERO_SHA)
        try:
            self._stage(prepared.relpath, prepared.blob, prepared.mode, from_work_tree)
        except GitError as exc:
            self._undo_ref(prepared)
            raise GitError(f"{exc}; HEAD was put back, nothing is committed") from None

    def _undo_ref(self, prepared: PreparedCommit) -> None:
        if prepared.parent:
            self.git("update-ref", "-m", "ralph: undo", "HEAD", prepared.parent, prepared.commit)
        else:
            self.git("update-ref", "-d", "HEAD", prepared.commit)

    @staticmethod
    def blob_in(entries: list[bytes], relpath: str) -> str | None:
        old, _ = _entry_of(entries, relpath)
        return old.split(b"\t", 1)[0].split()[2].decode() if old else None

    def _stage(self, relpath: str, blob: str, mode: str = "100644", from_work_tree: bool = False) -> None:
        """Record the committed content in the index, so `git status` shows plan.jsonl clean.
        `from_work_tree`: added from the work tree's file, which holds those bytes, so the index
        has its stat data too: each `git status` after a recorded blob alone would hash the file
        again (a read-only one never writes what it found back to the index)."""
        args = (
            ("add", "--", relpath)
            if from_work_tree
            else ("update-index", "--add", "--cacheinfo", f"{mode},{blob},{relpath}")
        )
        for delay in (0.05, 0.1, 0.2, 0.4, 0.8, 0):
            try:
                self.git(*args)
                return
            except GitError as exc:
                if "index.lock" not in str(exc) or not delay:
                    raise
                time.sleep(delay)  # someone else's git command holds the index for a moment

    def signs_commits(self) -> bool:
        """Whether this repository asks for signed commits (commit.gpgSign), as `git commit` would;
        read once per Repo (the loop commits through one Repo many times)."""
        if self._signs is None:
            try:
                self._signs = self.git("config", "--type=bool", "--get", "commit.gpgsign").strip() == "true"
            except GitError:  # not set
                self._signs = False
        return self._signs

    # --- what git is in the middle of ------------------------------------------------------------
    def git_dir(self) -> Path:
        """This work tree's git directory (`.git`, or where a `.git` file of a worktree points)."""
        return git_dir(self.root)

    def common_dir(self) -> Path:
        """The git directory every worktree of the repository shares (its own, in the main one);
        asked of git once per work tree and process (the ledgers under it are read often)."""
        key = str(self.root)
        if key not in _COMMON_DIRS:
            found = Path(self.git("rev-parse", "--git-common-dir").strip())
            _COMMON_DIRS[key] = found if found.is_absolute() else (self.root / found).resolve()
        return _COMMON_DIRS[key]

    def operation_in_progress(self) -> str | None:
        """The merge, rebase, cherry-pick or revert git is stopped in, if any. A commit made now
        would be dropped by its --abort, or folded into its result."""
        git_dir = self.git_dir()
        for marker, what in _OPERATIONS:
            if (git_dir / marker).exists():
                return f"a {what} is in progress ({marker} in {git_dir.name})"
        return None

    def head_detached(self) -> bool:
        """Whether HEAD names a commit rather than a branch: a commit made there belongs to no
        branch, and the next checkout leaves it behind. Read from the HEAD file (no git process:
        every state command's commit asks)."""
        try:
            head = (self.git_dir() / "HEAD").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False  # not a layout we know (a GIT_DIR elsewhere): git itself will say
        return not head.startswith("ref: ")

    def refuse_switched_branch(self) -> None:
        """Raise BranchSwitched when a run set `run_branch` (the branch it works on) and HEAD is
        on another one now: before anything is written, so nothing lands on a branch a person
        switched to under the run."""
        if self.run_branch is None:
            return
        now = self.branch()
        if now != self.run_branch:
            raise BranchSwitched(
                f"the work tree switched from {self.run_branch} to {now or 'a detached HEAD'} during the"
                " run: ralph stopped before committing onto it; switch back and run ralph construct again"
            )

    def branch(self) -> str | None:
        """The branch HEAD is on, or None when HEAD is detached: from the HEAD file where it says
        (ralph.store.refs), else from git."""
        found = refs.head_branch(self.git_dir())
        if found != refs.ASK_GIT:
            return found
        try:
            return self.git("symbolic-ref", "-q", "--short", "HEAD").strip()
        except GitError:
            return None

    def index_locked(self) -> bool:
        return (self.git_dir() / "index.lock").exists()

    # --- the work tree around agent runs -------------------------------------------------------
    def changed_paths(self, among: Iterable[str] | None = None, read_only: bool = False) -> set[str]:
        """Paths that differ from HEAD in the index or the work tree, and untracked files; only
        those of `among` when given (git then looks at those paths alone, not the whole tree).
        `read_only`: git leaves .git/index as it was (status otherwise refreshes it)."""
        limit = sorted(among) if among is not None else []
        if among is not None and not limit:
            return set()
        out = self._paths(
            *(["--no-optional-locks"] if read_only else []),
            "status", "--porcelain=v1", "-z", "--untracked-files=all", *(["--", *limit] if limit else []),
        )  # fmt: skip
        paths: set[str] = set()
        entries = iter(out.split("\0"))
        for entry in entries:
            if not entry:
                continue
            status, path = entry[:2], entry[3:]
            paths.add(path)
            if "R" in status or "C" in status:
                paths.add(next(entries, ""))  # the rename's source path follows
        paths.discard("")
        return paths

    def hidden_in(self, folders: Iterable[str]) -> set[str]:
        """The untracked files under `folders` that git ignores by a rule written in one of them (a
        .gitignore inside, or the folder being one): files whoever made those folders hid from
        `git status`. Those ignored by the repository's own rules (a build's output) are not."""
        names = sorted(folders)
        if not names:
            return set()
        ignored = self.paths("ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--", *names)
        if not ignored:
            return set()
        stdin = "\0".join(ignored).encode("utf-8", "surrogateescape")
        # -z: <source> NUL <line> NUL <pattern> NUL <path> NUL, one match per path; exit 1: none
        # matched. check-ignore refuses the literal pathspecs the other commands run with.
        args = ("check-ignore", "-v", "-z", "--stdin")
        done = self._run(args, stdin, {"GIT_LITERAL_PATHSPECS": "0"})
        if done.returncode not in (0, 1):
            raise GitError(_explain(args, done.stderr.decode("utf-8", "replace")))
        fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
        matches = zip(fields[0::4], fields[3::4], strict=False)
        return {path for source, path in matches if source and PurePosixPath(source).parts[0] in names}

    def work_state(self, read_only: bool = False) -> tuple[str | None, str | None, set[str]]:
        """HEAD's commit (None before the first), its branch (None when detached) and the paths
        changed_paths() gives, from one `git status` instead of three git runs: the loop takes
        this before and after every agent run. `read_only` as for changed_paths()."""
        out = self._paths(
            *(["--no-optional-locks"] if read_only else []),
            "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all",
        )  # fmt: skip
        head: str | None = None
        branch: str | None = None
        paths: set[str] = set()
        entries = iter(out.split("\0"))
        for entry in entries:
            kind, _, rest = entry.partition(" ")
            if kind == "#":
                key, _, value = rest.partition(" ")
                if key == "branch.oid" and value != "(initial)":
                    head = value
                elif key == "branch.head" and value != "(detached)":
                    branch = value
            elif kind in _V2_PATH_FIELD:  # ordinary, renamed or copied, unmerged, untracked
                paths.add(rest.split(" ", _V2_PATH_FIELD[kind])[-1])
                if kind == "2":
                    paths.add(next(entries, ""))  # the rename's source path follows
        paths.discard("")
        return head, branch, paths

    def commit_paths(self, paths: set[str], message: str) -> tuple[str | None, list[str]]:
        """Commit exactly `paths` (added, changed or deleted), skipping the user's hooks; return the
        commit and the files it changed (None and [] when nothing differed)."""
        if not paths:
            return None, []
        self.refuse_switched_branch()
        ordered = sorted(paths)
        if ordered == [PLAN_NAME] and (data := _plain_bytes(self.root / PLAN_NAME)) is not None:
            return self._commit_plan(data, message)
        return self._commit_added(ordered, message)

    def _commit_added(self, ordered: list[str], message: str) -> tuple[str | None, list[str]]:
        """commit_paths through `git add` and `git commit -- paths`."""
        # A path gone from both the work tree and the index (the agent ran `git rm` or `git mv`) is
        # already staged as deleted, and `git add` would refuse it: "pathspec did not match".
        gone = {path for path in ordered if not os.path.lexists(self.root / path)}
        indexed = set(self._paths("ls-files", "-z", "--", *sorted(gone)).split("\0")) if gone else set()
        addable = [path for path in ordered if path not in gone or path in indexed]
        if addable:
            self.git("add", "-A", "--", *addable)
        blobs = self._staged_blobs(ordered)
        staged = list(blobs)
        if not staged:
            return None, []
        takes_plan = PLAN_NAME in blobs
        if takes_plan:
            message = self._with_pending_ops(message, *blobs[PLAN_NAME])
        head = self.head()
        stamps = self._commit_dates([head] if head else [])
        self._output(
            ("commit", "--no-verify", "-q", "-F", "-", "--", *staged), _message_bytes(message), stamps
        )
        if takes_plan:
            from ralph.store import pending_ops

            pending_ops.forget(self)
        made = self.head()
        self._note_stamp(made, stamps)
        return made, staged

    def _commit_plan(self, data: bytes, message: str) -> tuple[str | None, list[str]]:
        """commit_paths of plan.jsonl alone, whose bytes are `data`: its blob and tree written here
        (ralph.store.loose), not hashed by `git add` and again by `git commit -- plan.jsonl` (two
        passes of git's collision-detecting SHA-1 over a long history's plan, in each of the loop's
        commits)."""
        parent, entries = self.snapshot()
        if _entry_of(entries, PLAN_NAME)[1] != "100644":  # executable in HEAD: as `git add` stages it
            return self._commit_added([PLAN_NAME], message)
        before, after = self.blob_in(entries, PLAN_NAME), blob_sha(data)
        message = self._with_pending_ops(message, before, after, data) if before != after else message
        prepared = self.prepare_commit(PLAN_NAME, data, message, (parent, entries))
        if prepared is None:  # HEAD holds it: the index is made to as well, as `git add` did
            self._stage(PLAN_NAME, after, from_work_tree=True)
            return None, []
        self.land(prepared, from_work_tree=True)
        if _plain_bytes(self.root / PLAN_NAME) != data:  # written meanwhile: the index holds HEAD's
            self._stage(PLAN_NAME, prepared.blob, prepared.mode)
        from ralph.store import pending_ops

        pending_ops.forget(self)
        return prepared.commit, [PLAN_NAME]

    def _staged_blobs(self, paths: list[str]) -> dict[str, tuple[str | None, str | None]]:
        """The paths among `paths` whose staged content differs from HEAD's, each with its blob in
        HEAD and in the index (None where it has none: added, deleted): one git run for both."""
        out = self._paths("diff", "--cached", "--no-renames", "--raw", "--no-abbrev", "-z", "--", *paths)
        fields = iter(out.split("\0"))
        blobs: dict[str, tuple[str | None, str | None]] = {}
        for meta in fields:  # ":100644 100644 <HEAD's blob> <the index's blob> M", then the path
            if not meta.startswith(":"):
                continue
            _, _, before, after, _ = meta[1:].split(" ", 4)
            blobs[next(fields, "")] = (_blob_or_none(before), _blob_or_none(after))
        blobs.pop("", None)
        return blobs

    def _with_pending_ops(
        self, message: str, parent: str | None, staged: str | None, data: bytes | None = None
    ) -> str:
        """The message with the operations that made the staged plan's change from blob `parent`
        to blob `staged` (ralph.store.pending_ops); `data`: its bytes, when not stored yet."""
        from ralph.store import pending_ops

        git_dir = self.git_dir()
        if staged is None or not any((git_dir / name).exists() for name in pending_ops.NAMES):
            return message
        return pending_ops.message_with(self, message, parent, staged, data)

    def stage_paths(self, paths: set[str]) -> None:
        """Put exactly `paths` in the index as they are in the work tree (added, changed, deleted)."""
        if paths:
            self.git("add", "-A", "--", *sorted(paths))

    def hook(self, name: str) -> Path | None:
        """The repository's hook program of that name (core.hooksPath respected), if it would run."""
        path = self.hook_path(name)
        return path if path.is_file() and os.access(path, os.X_OK) else None

    def hook_path(self, name: str) -> Path:
        """Where git looks for the hook of that name (core.hooksPath respected), there or not."""
        done = self._run(("rev-parse", "--git-path", f"hooks/{name}"), hooks_as_configured=True)
        if done.returncode != 0:
            raise GitError(_explain(("rev-parse",), done.stderr.decode("utf-8", "replace")))
        path = Path(done.stdout.decode("utf-8", "surrogateescape").strip())
        return path if path.is_absolute() else self.root / path

    def diff_stat(self, paths: set[str]) -> str:
        if self.head() is None:
            return ""
        return self.git("diff", "--stat", "HEAD", "--", *sorted(paths))

    def save_patch(self, paths: set[str], target: Path, base: str = "HEAD") -> None:
        """Keep a failed attempt's changes against `base` as a patch (untracked files included)
        before undoing them."""
        if not paths:
            return
        # Intent-to-add, so new files show in the diff; only paths in the work tree, as `git add`
        # refuses one that is gone from it and from the index (`git rm`, the source of a `git mv`).
        present = [path for path in sorted(paths) if os.path.lexists(self.root / path)]
        if present:  # -f: a file hidden by an ignore rule (hidden_in) is kept too
            self.git("add", "-N", "-f", "--", *present)
        target.write_bytes(self.patch(base, "--", *sorted(paths)) + b"\n")

    def patch(self, *args: str) -> bytes:
        """`git diff args` as a patch `git apply` takes back: bytes as git wrote them (a file that
        is not UTF-8 decoded and encoded again no longer applies), binary files included, and
        never a person's diff settings (an external diff, a textconv, colour)."""
        return self._output(("diff", *_PATCH_OPTIONS, *args))

    def commit_patch(self, commit: str, exclude: frozenset[str] = frozenset()) -> bytes:
        """What `commit` changed, as a binary patch (bytes, as patch() gives), without the paths
        in `exclude` (b'' when it changed nothing else)."""
        listed = self._paths("diff-tree", "-r", "--root", "--no-commit-id", "--name-only", "-z", commit)
        paths = sorted({path for path in listed.split("\0") if path} - exclude)
        if not paths:
            return b""
        return self._output(
            ("diff-tree", "-p", *_PATCH_OPTIONS, "--root", "--no-commit-id", commit, "--", *paths)
        )

    def at_head(self, paths: Iterable[str]) -> set[str]:
        """Those of `paths` that HEAD has an entry for (a file, a folder, a submodule): one git run
        each, as ls-tree given a folder and a path inside it lists the inner one alone."""
        wanted = sorted(paths)
        if not wanted or self.head() is None:
            return set()
        return {path for path in wanted if self._paths("ls-tree", "-z", "HEAD", "--", path)}

    def revert(self, paths: set[str]) -> None:
        """Put `paths` back as HEAD has them; files HEAD does not have are removed. Those go
        first: a tracked link put back first (an agent made a folder of `docs -> specs`) would
        send the removal of `docs/x.py` through it, to `specs/x.py`. Nor is anything removed
        through a link some other way (one made since git listed the path)."""
        if not paths:
            return
        listed = self._paths("ls-tree", "-r", "-z", "--name-only", "HEAD", "--", *sorted(paths))
        tracked = {path for path in listed.split("\0") if path}
        untracked = sorted(paths - tracked)
        if untracked:  # one git run for them all: one per file took 40 s for a 1,000-file build
            self.git("rm", "--cached", "-q", "--ignore-unmatch", *_PATHS_ON_STDIN, stdin=_nul_list(untracked))
        for path in untracked:
            if not self._through_link(path):
                (self.root / path).unlink(missing_ok=True)
        if tracked:
            self.git("checkout", "HEAD", "--", *sorted(tracked))

    def _through_link(self, path: str) -> bool:
        """Whether a folder on the way to `path` (relative) is a symbolic link."""
        parent = self.root
        for part in PurePosixPath(path).parts[:-1]:
            parent = parent / part
            if parent.is_symlink():
                return True
        return False

    # --- worktrees: a checkout of its own for a run that must not share this one ----------------
    def add_worktree(self, path: Path, commit: str) -> Repo:
        """Check `commit` out at `path` (which must not exist yet) as a detached worktree of this
        repository, and return it. The repository's hooks do not run: a post-checkout hook is the
        user's, for the user's checkouts."""
        self.git("worktree", "add", "-q", "--detach", str(path), commit)  # hooks off: git_argv
        return Repo(path)

    def remove_worktree(self, path: Path) -> None:
        """Remove a worktree made by add_worktree, whatever was changed or added in it (a folder
        already gone loses its registration). Never `git worktree prune`: that would also forget
        the user's own worktrees on a drive that is not mounted."""
        try:
            self.git("worktree", "remove", "--force", "--force", str(path))  # twice: even if locked
        except GitError:  # not a worktree (any more): what is at its path goes
            if path.is_symlink():  # a link put in its place: the link, never what it points to
                path.unlink()
            else:
                import shutil

                shutil.rmtree(path, ignore_errors=True)
            self._forget_worktree(path)

    def links_here(self) -> bool:
        """This worktree's .git is still the link git made to the repository's (not removed, not
        replaced by a repository of its own)."""
        dot_git = self.root / ".git"
        if dot_git.is_symlink() or not dot_git.is_file():
            return False
        text = dot_git.read_text(encoding="utf-8", errors="surrogateescape")
        admin = self.root / text.removeprefix("gitdir:").strip()  # absolute, or relative to here
        return text.startswith("gitdir:") and (admin / "gitdir").is_file()

    def _forget_worktree(self, path: Path) -> None:
        """The registration (.git/worktrees/<name>) of the worktree that was at `path`, when its
        folder is gone (an agent removed it): that one alone, where prune would take them all."""
        import shutil

        admin = self.common_dir() / "worktrees"
        for entry in admin.glob("*/gitdir") if admin.is_dir() else []:
            named = entry.read_text(encoding="utf-8", errors="surrogateescape").strip()
            if Path(named) == path / ".git" and not path.exists():
                shutil.rmtree(entry.parent, ignore_errors=True)

    def add_branch_worktree(self, path: Path, branch: str, commit: str) -> Repo:
        """Check `commit` out at `path` on a new branch `branch`, with no hooks run, as
        add_worktree does. Never -B: a branch of that name (a person's) makes git refuse."""
        self.git("worktree", "add", "-q", "-b", branch, str(path), commit)  # hooks off: git_argv
        return Repo(path)

    def branch_exists(self, branch: str) -> bool:
        return self._run(("show-ref", "--verify", "--quiet", f"refs/heads/{branch}")).returncode == 0

    def delete_branch(self, branch: str, expected: str | None = None) -> None:
        """Delete `branch` (gone already: nothing to do); with `expected`, only while it still
        points there (compare-and-delete: never a commit that moved it since)."""
        args = ("update-ref", "-d", f"refs/heads/{branch}") + ((expected,) if expected else ())
        self._run(args)

    def merge_tree(self, ours: str, theirs: str, plan_driver: str | None = None) -> tuple[str, list[str]]:
        """The three-way merge of two commits as a tree, without touching the index or the work
        tree (`git merge-tree --write-tree`), and the paths that conflicted (their tree entries
        then hold conflict markers). `plan_driver`: the command git runs as ralph's merge driver."""
        driver = ("-c", f"merge.ralph.driver={plan_driver}") if plan_driver else ()
        done = self._run((*driver, "merge-tree", "--write-tree", "--name-only", "-z", ours, theirs))
        if done.returncode not in (0, 1):
            raise GitError(_explain(("merge-tree",), done.stderr.decode("utf-8", "replace")))
        listing = done.stdout.decode("utf-8", "surrogateescape").split("\0\0", 1)[0].split("\0")
        return listing[0], sorted({path for path in listing[1:] if path})

    def file_at_head(self, relpath: str) -> bytes | None:
        """The file's bytes as HEAD has them, or None (no commit yet, or no such file). HEAD is
        read from the ref files (no git run), the file then kept by its commit (file_at)."""
        head = self.head()
        return self.file_at(head, relpath) if head is not None else None

    def gitlinks(self) -> list[str]:
        """The submodules of this work tree: the paths the index has as gitlinks. No git run where
        there is neither a .gitmodules nor a .git/modules (most repositories)."""
        if not (self.root / ".gitmodules").is_file() and not (self.common_dir() / "modules").is_dir():
            return []
        listed = self._paths("ls-files", "-z", "-s").split("\0")
        return [entry.split("\t", 1)[1] for entry in listed if entry.startswith("160000 ")]

    def nested_repos(self, skip: tuple[str, ...] = ()) -> list[str]:
        """The git repositories inside this work tree that are no submodule (gitlinks): a gitlink
        of the index with no .gitmodules entry whose `.git` is here (an embedded
        repository, `git add`ed), and a folder git does not track that holds one (a clone inside,
        ignored or not), outside the folders named `skip` (dependencies: none of the person's
        own). `ls-files -o` lists such a folder as `path/` and never goes into it."""
        listed = self._paths("ls-files", "-z", "-s").split("\0")
        tracked = [entry.split("\t", 1)[1] for entry in listed if entry.startswith("160000 ")]
        pathspecs = [":(glob)**/", *(f":(exclude,glob)**/{folder}/**" for folder in skip)]
        others = self._output(
            ("ls-files", "-z", "-o", "--", *pathspecs), env={"GIT_LITERAL_PATHSPECS": "0"}
        ).decode("utf-8", "surrogateescape")
        found = [*tracked, *(path.rstrip("/") for path in others.split("\0") if path.endswith("/"))]
        submodules = set(self.gitlinks())
        dot_gits = {
            path: self.root / path / ".git" for path in dict.fromkeys(found) if path not in submodules
        }
        # A folder, or a file naming one elsewhere (a worktree of another repository); never a link.
        return [path for path, dot_git in dot_gits.items() if dot_git.exists() and not dot_git.is_symlink()]

    def mode_at(self, rev: str, relpath: str) -> str | None:
        """The mode of the entry `relpath` in commit or tree `rev` (100644, 100755, 120000 for a
        link, 040000 for a folder, 160000 for a submodule), or None where it has none."""
        listed = self._paths("ls-tree", "-z", rev, "--", relpath).split("\0")
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
        done = self._run(("cat-file", "blob", f"{rev}:{relpath}"))
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
        out = self._output(("cat-file", "--batch"), stdin=names)
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
        done = self._run(("cat-file", "blob", sha))
        return done.stdout if done.returncode == 0 else None

    def _known_blob(self, sha: str) -> bytes | None:
        """Blob `sha` without a git run (_blob_without_git); None: ask git."""
        return _blob_without_git(sha, self._loose_objects_for(sha))

    def blobs(self, shas: list[str]) -> list[bytes | None]:
        """As blob() for each of `shas`, from one `git cat-file --batch` for those not known here."""
        found = {sha: self._known_blob(sha) for sha in shas}
        asked = [sha for sha, data in found.items() if data is None]
        if asked:
            out = self._output(("cat-file", "--batch"), stdin="".join(f"{sha}\n" for sha in asked).encode())
            for sha, obj in zip(asked, _batch_objects(out), strict=False):
                found[sha] = obj[2] if obj is not None and obj[1] == "blob" else None
        return [found[sha] for sha in shas]

    def files_at(self, revs: list[str], relpath: str) -> list[bytes | None]:
        """The file's bytes in each of `revs` (None where there is no such file), from one
        `git cat-file --batch`."""
        if not revs:
            return []
        asked = "".join(f"{rev}:{relpath}\n" for rev in revs).encode()
        found = _batch_objects(self._output(("cat-file", "--batch"), stdin=asked))
        return [obj[2] if obj is not None and obj[1] == "blob" else None for obj in found]

    def commit_tree(self, tree: str, parent: str | None, message: str, *more_parents: str) -> str:
        parents = [commit for commit in (parent, *more_parents) if commit]
        sign = ["-S"] if self.signs_commits() else []  # commit-tree ignores commit.gpgSign by itself
        stamps = self._commit_dates(parents)
        args = ("commit-tree", *sign, tree, *(arg for commit in parents for arg in ("-p", commit)), "-F", "-")
        made = self._output(args, _message_bytes(message), stamps).decode().strip()
        self._note_stamp(made, stamps)
        return made

    def _note_stamp(self, commit: str | None, stamps: dict[str, str]) -> None:
        """Remember the committer time ralph gave a commit it made: the next one, made on it,
        needs it (_commit_dates) and need not ask git."""
        if commit and "GIT_COMMITTER_DATE" in stamps:
            self._commit_times[commit] = int(stamps["GIT_COMMITTER_DATE"][1:].split()[0])

    def _commit_dates(self, parents: list[str]) -> dict[str, str]:
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
        if clock.skew_s() and "GIT_AUTHOR_DATE" not in self._env:
            stamps["GIT_AUTHOR_DATE"] = f"@{now} {zone}"
        if "GIT_COMMITTER_DATE" not in self._env:
            latest = max(self.commit_times(parents).values(), default=0)
            stamps["GIT_COMMITTER_DATE"] = f"@{max(now, latest)} {zone}"
        return stamps

    def commit_times(self, commits: list[str]) -> dict[str, int]:
        """Each commit's committer time (seconds since the epoch), read once per Repo."""
        missing = [commit for commit in commits if commit not in self._commit_times]
        if missing:
            out = self.git("log", "--no-walk=unsorted", "--format=%H %ct", *missing, "--")
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

    def tree_with_file(self, tree: str, relpath: str, data: bytes) -> str:
        """`tree` with its top-level file `relpath` replaced by `data` (its mode kept)."""
        entries = self.tree_entries(tree)
        old, mode = _entry_of(entries, relpath)
        return self._mktree(self._entries_with(entries, old, mode, relpath, data)[0])

    def _entries_with(
        self, entries: list[bytes], old: bytes | None, mode: str, relpath: str, data: bytes
    ) -> tuple[list[bytes], str]:
        """Tree entries with `old` replaced by a blob of `data` (written now), and that blob."""
        objects = self._loose_objects(entries)
        if objects is not None:
            blob = loose.store(objects, b"blob", data)
        else:
            blob = self.git("hash-object", "-w", "--stdin", stdin=data).strip()
        entry = f"{mode} blob {blob}\t".encode() + os.fsencode(relpath)
        return [*(other for other in entries if other is not old), entry], blob

    def _mktree(self, entries: list[bytes]) -> str:
        objects = self._loose_objects(entries)
        if objects is not None:
            return loose.store(objects, b"tree", loose.tree(entries))
        return self.git("mktree", "-z", stdin=b"\0".join([*entries, b""])).strip()

    def _loose_objects(self, entries: list[bytes]) -> Path | None:
        """The objects folder, when a commit's blob and tree (whose entries these are) may be
        written there without a git process (ralph.store.loose); None: git writes them."""
        return self._objects_folder() if loose.sha1_ids(entries) else None

    def _objects_folder(self) -> Path | None:
        """ralph.store.loose.objects_folder, looked up once per Repo."""
        if self._objects is None:
            self._objects = loose.objects_folder(self.git_dir()) or False
        return self._objects or None

    def staged_file(self, relpath: str) -> bytes | None:
        """The file's bytes as the index holds them (what the next commit gets), or None when the
        index has no merged version of it (not added, or a merge conflict not yet resolved)."""
        done = self._run(("cat-file", "blob", f":{relpath}"))
        return done.stdout if done.returncode == 0 else None

    def unmerged(self, relpath: str) -> bool:
        """Whether git's index holds the file as a merge conflict not yet resolved (`git add`)."""
        return bool(self.git("ls-files", "-u", "--", relpath).strip())

    def commit_of(self, rev: str) -> str | None:
        """The commit `rev` names, or None when it names none (not a revision, or not a commit)."""
        if rev.startswith("-"):  # never an option
            return None
        done = self._run(("rev-parse", "-q", "--verify", "--end-of-options", f"{rev}^{{commit}}"))
        return done.stdout.decode().strip() if done.returncode == 0 else None

    def git_dirs(self) -> list[str]:
        """The git directory and the common one of this work tree, absolute, as git names them."""
        return self._paths("rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir").split()

    def untracked(self, pathspecs: list[str]) -> list[str]:
        """The files git does not track (ignored ones too) that `pathspecs` match, their magic
        (`:(glob)`, `:(exclude)`) read as such."""
        out = self._output(
            ("ls-files", "-z", "--others", "--", *pathspecs), env={"GIT_LITERAL_PATHSPECS": "0"}
        )
        return [os.fsdecode(name) for name in out.split(b"\0") if name]

    def commits(self, *args: str) -> list[str]:
        """`git rev-list ARGS`, first parents only: the commits, newest first."""
        return self.git("rev-list", "--first-parent", *args).split()

    def lines(self, *args: str) -> Generator[bytes, None, None]:
        """git's output, line by line as it prints it, for a command whose output is too large to
        hold (a file's whole history); GitError at the end if git failed. A caller that stops
        early stops git too."""
        import subprocess
        import tempfile
        import threading

        with tempfile.TemporaryFile() as errors:  # a file, not a pipe: it cannot fill up and stall git
            git = subprocess.Popen(
                git_argv(args),
                cwd=self.root,
                env=self._env,
                stdout=subprocess.PIPE,
                stderr=errors,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            assert git.stdout is not None  # stdout=PIPE
            timed_out: list[bool] = []

            def stop() -> None:  # its timeout, while it prints
                timed_out.append(True)
                git.kill()

            timer = threading.Timer(GIT_TIMEOUT_S, stop)
            timer.daemon = True
            timer.start()
            try:
                yield from git.stdout
            finally:
                timer.cancel()
                git.stdout.close()
                if git.poll() is None:
                    git.kill()  # the caller stopped early
                returncode = git.wait()
            if timed_out:
                raise GitError(_timed_out(args))
            if returncode not in (0, -9):
                errors.seek(0)
                raise GitError(_explain(args, errors.read().decode("utf-8", "replace")))


# `git status --porcelain=v2` entries: how many space-separated fields come before the path.
_V2_PATH_FIELD = {"1": 7, "2": 8, "u": 9, "?": 0}

_OPERATIONS = (
    ("rebase-merge", "rebase"),
    ("rebase-apply", "rebase"),
    ("MERGE_HEAD", "merge"),
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("REVERT_HEAD", "revert"),
)


class PreparedCommit:
    """A commit whose objects are written but which no ref points at yet."""

    __slots__ = ("relpath", "mode", "blob", "commit", "parent", "entries", "message")

    def __init__(
        self,
        relpath: str,
        mode: str,
        blob: str,
        commit: str,
        parent: str | None,
        entries: list[bytes],
        message: str,
    ):
        self.relpath, self.mode, self.blob, self.commit = relpath, mode, blob, commit
        self.parent, self.entries, self.message = parent, entries, message


def _entry_of(entries: list[bytes], relpath: str) -> tuple[bytes | None, str]:
    """The top-level tree entry of `relpath` (None when absent) and the mode a new version of it
    gets: its executable bit kept."""
    name = os.fsencode(relpath)
    old = next((entry for entry in entries if entry.split(b"\t", 1)[1] == name), None)
    return old, "100755" if old and old.startswith(b"100755 ") else "100644"


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


# A patch as git makes it for itself: whatever the person's config says about showing diffs.
_PATCH_OPTIONS = ("--binary", "--no-ext-diff", "--no-textconv", "--no-color")

# Paths handed to git on stdin (NUL-separated), for lists as long as a build's files.
_PATHS_ON_STDIN = ("--pathspec-from-file=-", "--pathspec-file-nul")


def _nul_list(paths: Iterable[str]) -> bytes:
    """Paths as git reads them with --pathspec-file-nul (names that are not UTF-8 keep their bytes)."""
    return b"".join(path.encode("utf-8", "surrogateescape") + b"\0" for path in paths)


def _blob_or_none(name: str) -> str | None:
    """A blob's name as `git diff --raw` gives it; None for the zeros that say there is none."""
    return None if not name.strip("0") else name


def _message_bytes(message: str) -> bytes:
    # A name read from JSON may hold a lone surrogate ("\ud800"): not encodable, so replaced.
    return message.encode("utf-8", "replace")


def _explain(args: tuple[str, ...], stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    text = " ".join(lines[-3:]) if lines else "no message"
    if "Please tell me who you are" in stderr or "empty ident" in stderr:
        return "git needs an identity to commit: set user.name and user.email (git config --global ...)"
    return f"git {_subcommand(args)} failed: {text}"


def git_argv(args: tuple[str, ...] | list[str]) -> list[str]:
    """The argv of `git ARGS` as ralph runs it: the trusted git (ralph.store.programs), and the
    options the command always gets (_COMMAND_OPTIONS), before its `--` if it has one. Run it with
    a Repo's environment, which holds the hardened settings; before its `--end-of-options` too,
    after which git reads every word as a revision."""
    at = 0
    while at < len(args) and args[at].startswith("-"):  # -c key=value, --no-optional-locks
        at += 2 if args[at] == "-c" else 1
    options = _COMMAND_OPTIONS.get(args[at], ()) if at < len(args) else ()
    end = next(
        (index for index in range(at, len(args)) if args[index] in ("--", "--end-of-options")), len(args)
    )
    return [programs.git_program(), *args[:end], *options, *args[end:]]


def _config_parameters(env: dict[str, str] | os._Environ[str], settings: tuple[str, ...]) -> str:
    """GIT_CONFIG_PARAMETERS with `settings` after what `env` already has (a later one wins), each
    in single quotes, as git writes and reads them."""
    given = env.get("GIT_CONFIG_PARAMETERS", "").strip()
    quoted = ("'" + setting.replace("'", "'\\''") + "'" for setting in settings)
    return " ".join([*([given] if given else []), *quoted])


def _timed_out(args: tuple[str, ...]) -> str:
    return f"git {_subcommand(args)} did not finish in {GIT_TIMEOUT_S:g}s: stopped"


def _subcommand(args: tuple[str, ...]) -> str:
    """The git command `args` run, past the `-c key=value` settings before it."""
    at = 0
    while at < len(args) - 1 and args[at] == "-c":
        at += 2
    return args[at] if at < len(args) else "git"
