"""The fence around every agent run and gate run: bubblewrap (bwrap), from the distribution's
packages, on Linux.

Why bubblewrap and not Landlock: the runs need a *view*, not only a rule set. bwrap gives each run
a mount namespace in which the whole file system is read-only, its own work tree is writable, /tmp
is a private empty tmpfs, the agent CLI's own state folders are writable, and each file that holds
secrets is replaced by an empty read-only file (a folder by an empty read-only one). Landlock only
allows or denies by file hierarchy: it cannot hide one `.env` inside a readable work tree without
listing every sibling, nor give a run a private /tmp, and it keeps nothing from other processes'
/proc. bwrap also puts the run in a pid namespace of its own, so whatever the run starts (a
`setsid` daemon too) ends with it.

What the run sees:
  /                              read-only (the repository and its main work tree included)
  its own work tree              writable: the repository's in a serial run, the build's or the
                                 verifier's worktree otherwise; for a plan-only stage (PLAN,
                                 INVESTIGATE, DECOMPOSE, CHECK: `plan_only`) read-only but for
                                 plan.jsonl and its lock, which its `ralph` commands change (Fence)
  .git of that work tree         read-only (and the common git directory, each submodule's `.git`
                                 link, and the `.git` of each repository nested in the tree that
                                 is no submodule, the folders on the way to it unmovable mount
                                 points): ralph commits, agents
                                 never; their `ralph` commands run with RALPH_COMMIT=0 and change
                                 only plan.jsonl (and its lock), which lie in the work tree, and
                                 a record of their operations that is theirs, not ralph's
  ralph's own install            read-only even where it lies in the work tree (sys.prefix in the
                                 project's own .venv, or an editable source there): said once
  /tmp                           a private tmpfs, empty at the start, gone at the end (TMPDIR=/tmp)
  the agent CLI's state folders  writable (~/.claude, ~/.codex, ~/.config/opencode, ~/.gemini):
                                 the CLI keeps its login and sessions there
  ~/.cache, ~/.npm               the run's own: empty private folders, gone at its end (they hold
                                 code other tools run later)
  secret files                   empty: `.env*` and private-key names the repository does not track,
                                 ~/.ssh, cloud credentials, git's credential store, and the patterns
                                 of the config key `sandbox_hide`
Not stopped: the network (the CLIs reach their model API), reading the rest of the file system
(read-only is not hidden), the environment ralph passes on (API keys), CPU, memory and disk use.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ralph.errors import GitError, Refused
from ralph.store.lock import LOCK_NAME, RALPH_FILES
from ralph.store.reader import PLAN_NAME

BWRAP_ENV = "RALPH_BWRAP"  # the bwrap program to use; "" (or a path that is not there): none here
MODES = ("off", "auto", "required")
PRIVATE_TMP = Path("/tmp")
# The folders the sandbox mounts afresh (a private /tmp, a minimal /dev): what the run must still
# see under them (a repository or $HOME in /tmp or /dev/shm, as in the tests) is bound again.
FRESH_MOUNTS = (PRIVATE_TMP, Path("/dev"))
# Where ralph itself is imported from (an editable install in a clone under /tmp, as in CI): an
# agent's own `ralph` commands import it there.
RALPH_SOURCE = Path(__file__).resolve().parents[3]

# Names of files that hold secrets, matched anywhere in the repository among the files git does
# not track (a tracked file is in the history anyway; hiding it would only show it as changed).
SECRET_NAMES = (
    ".env",
    ".env.*",
    ".envrc",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    # Private keys and certificates with theirs, cloud and service credentials, deploy variables.
    "*.pem",
    "*.p12",
    "*.pfx",
    "credentials.json",
    "service-account*.json",
    "secrets.toml",
    "*.tfvars",
    "*.tfvars.json",
    ".dev.vars",
)
# In the home folder: keys, cloud and registry credentials, git's credential store and cache.
SECRET_HOME_PATHS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".oci",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".cache/git/credential",
    ".npmrc",
    ".pypirc",
    ".config/gh/hosts.yml",
    ".password-store",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
)
# Each run's own: caches that package managers and build tools write as they work, and that hold
# code other tools run later (pre-commit's hooks in ~/.cache/pre-commit, npx's packages in
# ~/.npm/_npx): an agent rewrote pre-commit's cached hook, and the person's next `git commit` ran
# it. Each run gets an empty private folder in their place, gone with the run.
SHARED_CACHES = (".cache/", ".npm/")


# The top-level entries of a work tree a plan-only run's fence leaves alone: plan.jsonl and its lock,
# which the run's `ralph` commands change (the lock is mounted writable over itself instead), and
# .git, read-only in every run anyway.
UNFENCED_NAMES = frozenset({PLAN_NAME, LOCK_NAME, ".git"})

# Said at the first fenced run of a repository that names nothing more to hide: the list above is
# what ralph knows of; the project knows its own.
HIDE_HINT = (
    "sandbox: agents and gates see .env*, private keys, certificates and cloud credential files empty;"
    " name any other file they must not read with `ralph config set sandbox_hide '[\"NAME-OR-GLOB\"]'`"
)
TOLD_NAME = "ralph/sandbox-hide-told"  # under the git directory: the hint above was given
# Said once when ralph itself is installed inside the work tree it fences (the project's own .venv):
# its prefix is read-only in every run, as ralph's code must be.
PREFIX_HINT = (
    "sandbox: ralph is installed in {where}, inside the work tree agents write: it is read-only in"
    " every run (a .pth file or a rewritten ralph there would run at your next ralph command);"
    " install ralph outside the repository (pipx install from a clone or a git URL, or a virtualenv"
    " elsewhere) to keep that folder the project's"
)
PREFIX_TOLD_NAME = "ralph/prefix-told"


def first_fenced_run(git_dir: Path, told_name: str = TOLD_NAME) -> bool:
    """Whether this is the repository's first fenced run (the first time this is asked, for the
    hint `told_name` records)."""
    told = git_dir / told_name
    if told.exists():
        return False
    with contextlib.suppress(OSError):
        told.parent.mkdir(exist_ok=True)
        told.touch()
    return True


class SandboxUnavailable(Refused):
    """`--sandbox=required`, and this system has no sandbox."""


class Fence:
    """What the runs of one plan-only step (ralph.loop.runs.permissions.PLAN_ONLY_STAGES) could not
    write in their work tree: how a change made meanwhile is told to be a person's, not theirs.

    Such a run sees each top-level entry of its work tree mounted read-only over itself, but
    plan.jsonl, its lock (mounted writable over itself: it can be neither removed nor replaced by a
    link, whose target ralph's lock holder would write) and .git. The folder itself stays writable:
    ralph's state commands replace plan.jsonl atomically, with a temporary file beside it renamed
    over it, and a rename onto a mount point fails. So a run can still make top-level names that
    did not exist when it started (a mount namespace fences what exists, not names to come) and
    remove or replace an entry that cannot be mounted over (a symbolic link); nothing under a
    fenced entry, and no fenced entry itself (a mount point cannot be removed or renamed).

    `seen`: the top-level names when the step began; `held`: those of them every run of the step
    had read-only (a run started again after a rate limit is wrapped anew: a name gone at its start,
    or made by an earlier run, was open to it). A change under a held name cannot be a run's.
    Unfenced (`Fence.open`, `fenced` false), nothing is held."""

    def __init__(self, seen: frozenset[str], held: frozenset[str], fenced: bool = True):
        self.seen, self.held, self.fenced = seen, held, fenced

    @classmethod
    def open(cls, root: Path) -> Fence:
        """A step whose runs are not fenced: everything was theirs to write."""
        return cls(top_level_names(root), frozenset(), fenced=False)

    def searched(self, root: Path) -> frozenset[str]:
        """The top-level names in `root` now where a run of the step may have hidden files from
        git with an ignore rule of its own: those it could write, fenced (names made since, links,
        names gone meanwhile); unfenced, those made since only. Unfenced every name was open, and
        reading every ignored folder of the tree (dependencies, caches) after each run would cost
        more than it finds: such a run could as well hide files in .git/info/exclude."""
        now = top_level_names(root)
        return now - self.held if self.fenced else now - self.seen

    def holds(self, path: str) -> bool:
        """Whether no run of the step could have changed `path` (relative, as git names it)."""
        return PurePosixPath(path).parts[0] in self.held

    def keep(self, names: frozenset[str]) -> None:
        """A run of the step had only these names read-only."""
        self.held &= names


class Sandbox:
    """How to start a run inside the fence. `home`: the repository the loop runs in (its main work
    tree); `state_paths`: the agent CLI's own files and folders, relative to $HOME; `hide`: the
    config's extra patterns (file names, or paths from / or ~/); `read_only`: what stays read-only
    inside a writable work tree besides .git (the loop's logs and journal, which ralph writes from
    outside). `close` when the loop ends."""

    def __init__(
        self,
        program: str,
        home: Path,
        state_paths: tuple[str, ...] = (),
        hide: tuple[str, ...] = (),
        read_only: tuple[Path, ...] = (),
    ):
        import tempfile

        self.program, self.home = program, home.resolve()
        # ralph's own interpreter and packages, and its source where it is installed editable:
        # never writable by a run (installed_inside).
        self.prefix, self.source = Path(sys.prefix).resolve(), RALPH_SOURCE
        self.state_paths, self.hide = tuple(state_paths), tuple(hide)
        self.read_only = tuple(path.resolve() for path in read_only)  # read-only even in the work tree
        # What a hidden file reads as: empty. (/dev/null would do, but the sandbox's binds are
        # nodev, so opening it there fails, which some tools take for a crash.)
        handle, name = tempfile.mkstemp(prefix="ralph-hidden-")
        os.close(handle)
        os.chmod(name, 0o444)
        self.empty_file = Path(name)
        self._home_git_dirs = [self.home / ".git", *(Path(name) for name in _git_dirs_of(self.home))]
        self._dirs_of: dict[Path, list[str]] = {}  # a worktree's git directories, asked of git once
        self._links_of: dict[Path, list[Path]] = {}  # a work tree's submodule links, the same
        self._nested_of: dict[Path, list[str]] = {}  # a work tree's nested repositories, the same
        # Folders writable even inside a read-only tree or the read-only logs (a spec draft's
        # folder: ralph.loop.stages.draft), bound last so that no mount above hides them.
        self.writable_last: tuple[Path, ...] = ()
        # The step each work tree's plan-only runs belong to (`fencing`); the stages that have them
        # run one at a time in the loop's work tree, never beside each other.
        self._fences: dict[Path, Fence] = {}

    def close(self) -> None:
        self.empty_file.unlink(missing_ok=True)

    @contextlib.contextmanager
    def fencing(self, work_tree: Path) -> Iterator[Fence]:
        """One step of plan-only runs in `work_tree` (a run and its runs again after a rate
        limit): the Fence they had, as each run's wrap narrows it."""
        root = work_tree.resolve()
        seen = top_level_names(root)
        fence = Fence(seen, frozenset(name for name in seen if _fenceable(root / name)))
        self._fences[root] = fence
        try:
            yield fence
        finally:
            self._fences.pop(root, None)

    def wrap(
        self,
        argv: list[str],
        work_tree: Path,
        env: dict[str, str],
        cwd: Path | None = None,
        fresh: bool = False,
        plan_only: bool = False,
    ) -> list[str]:
        """`argv` as bwrap runs it: in the view above, with `work_tree` writable. `fresh`: the
        work tree is a checkout ralph made or cleaned for this run (a verifier's), which holds no
        file git does not track: no secret to look for in it. `plan_only`: a plan-only stage's
        run, which may change plan.jsonl alone (Fence)."""
        home_dir = Path(env.get("HOME") or Path.home()).resolve()
        work_tree = work_tree.resolve()
        args = [self.program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        args += ["--tmpfs", str(PRIVATE_TMP)]
        seen = [self.home, home_dir, Path(sys.prefix).resolve(), RALPH_SOURCE]
        # The program and the scripts and folders its command line names (`python /tmp/x/agent.py`):
        # read-only, so that one in a temporary folder still runs under the private /tmp.
        for arg in argv:
            if os.path.isabs(arg) and os.path.exists(arg):
                path = Path(arg).resolve()
                seen.append(path if path.is_dir() else path.parent)
        for path in _unique(seen):
            if any(_under(path, fresh) for fresh in FRESH_MOUNTS) and path.exists():
                args += ["--ro-bind", str(path), str(path)]
        for path in _caches(home_dir):  # before the CLI's state: one may lie inside a cache
            args += ["--tmpfs", str(path)]
        writable = self._writable(work_tree, home_dir, env)
        args += ["--bind", str(work_tree), str(work_tree)]
        if plan_only:
            args += self._plan_only(work_tree, writable)
        else:  # a plan-only run's top-level entries are read-only mount points already
            for path in _folders_on_the_way(work_tree, self._nested(work_tree)):
                args += ["--bind", str(path), str(path)]
        for path in writable[1:]:
            args += ["--bind", str(path), str(path)]
        kept = [*self._git_dirs(work_tree), *(p for p in self.read_only if p.exists())]
        for path in [*kept, *self.installed_inside(work_tree)]:
            args += ["--ro-bind", str(path), str(path)]
        for record, path in self._pending_ops(work_tree):  # a file of their own, at the record's place
            args += ["--bind", str(record), str(path)]
        for path in self.secrets(work_tree, home_dir, fresh):
            if path.is_dir():
                args += ["--tmpfs", str(path), "--remount-ro", str(path)]
            else:
                args += ["--ro-bind", str(self.empty_file), str(path)]
        for path in self.writable_last:
            args += ["--bind", str(path), str(path)]
        args += ["--unshare-pid", "--die-with-parent", "--setenv", "TMPDIR", str(PRIVATE_TMP)]
        args += ["--chdir", str((cwd or work_tree).resolve()), "--"]
        return args + list(argv)

    def installed_inside(self, work_tree: Path) -> list[Path]:
        """Where ralph is installed, when that lies in `work_tree`, which the runs write: its prefix
        (sys.prefix: the project's own .venv), and its source when installed editable from a folder
        of the work tree. Bound read-only over the writable tree, or an agent's `.pth` file (or its
        rewrite of ralph's entry script or package) would run at the person's next `ralph status`,
        outside any fence. Not a source that is the work tree itself (ralph building ralph): that
        tree is the build's to write."""
        work_tree = work_tree.resolve()
        return [
            path
            for path in _unique([self.prefix, self.source])
            if _under(path, work_tree) and path != work_tree and path.is_dir()
        ]

    def _plan_only(self, work_tree: Path, writable: list[Path]) -> list[str]:
        """The mounts that leave a plan-only run only plan.jsonl to change in `work_tree` (Fence):
        each top-level entry read-only over itself, but those the fence leaves alone and those that
        hold a folder the run must write (the agent CLI's state, where $HOME is in the tree)."""
        inside = {path.relative_to(work_tree).parts[0] for path in writable[1:] if _under(path, work_tree)}
        names = frozenset(
            name for name in top_level_names(work_tree) - inside if _fenceable(work_tree / name)
        )
        fence = self._fences.get(work_tree)
        if fence is not None:
            fence.keep(names)
        args: list[str] = []
        for name in sorted(names):
            args += ["--ro-bind", str(work_tree / name), str(work_tree / name)]
        lock = _lock_file(work_tree)
        if lock is not None:
            args += ["--bind", str(lock), str(lock)]
        return args

    def _writable(self, work_tree: Path, home_dir: Path, env: dict[str, str]) -> list[Path]:
        """The folders the run may write, its work tree first."""
        paths = [work_tree]
        state = [home_dir / name for name in self.state_paths]
        if env.get("CODEX_HOME"):
            state.append(Path(env["CODEX_HOME"]))
        for path in state:
            if path.exists() or path.is_symlink():
                paths.append(path.resolve())
        return _unique(paths)

    def make_state_folders(self, home_dir: Path) -> None:
        """The CLI's state folders and the shared caches that do not exist yet, made now: inside,
        $HOME is read-only, so the CLI could not make them on its first run (opencode makes
        ~/.cache, and stopped with EROFS)."""
        for name in (*SHARED_CACHES, *self.state_paths):
            if name.endswith("/"):
                with contextlib.suppress(OSError):  # the CLI then says what it misses
                    (home_dir / name).mkdir(parents=True, exist_ok=True)

    def _git_dirs(self, work_tree: Path) -> list[Path]:
        """The work tree's `.git` (a folder, or a worktree's file naming its folder) and the
        repository's git directories: read-only even where they lie inside a writable tree."""
        nested = [work_tree / path / ".git" for path in self._nested(work_tree)]
        paths = [work_tree / ".git", *self._home_git_dirs, *self._submodule_links(work_tree), *nested]
        if work_tree != self.home:
            paths += [Path(name) for name in self._worktree_git_dirs(work_tree)]
        return [path for path in _unique(paths) if path.exists()]

    def _submodule_links(self, work_tree: Path) -> list[Path]:
        """Each submodule's `.git` link in the work tree: read-only too (ralph.store.gitlinks)."""
        if work_tree not in self._links_of:  # none in a folder that is no work tree (a hook's own)
            from ralph.store.git import Repo

            found = Repo(work_tree).changes.gitlinks() if os.path.lexists(work_tree / ".git") else []
            self._links_of[work_tree] = [work_tree / path / ".git" for path in found]
        return [path for path in self._links_of[work_tree] if not path.is_symlink()]

    def _nested(self, work_tree: Path) -> list[str]:
        """The git repositories inside the work tree that are no submodule (Repo.changes.nested_repos): a
        person's clone inside it, an embedded repository. Their `.git` folders are read-only, and
        each folder on the way to one is a mount point of its own, which cannot be renamed: an
        agent that moved the folder aside and made one with a `.git` of its own (a config whose
        core.fsmonitor is a program) would have the person's next `git status` there run it, and
        the repository's history would be left wherever the agent put it."""
        if work_tree not in self._nested_of:
            from ralph.store.git import Repo

            found: list[str] = []
            if os.path.lexists(work_tree / ".git"):
                with contextlib.suppress(GitError):
                    found = Repo(work_tree).changes.nested_repos(UNSCANNED_FOLDERS)
            # Not what ralph keeps beside its logs (an agent's repository, unnested), read-only anyway.
            self._nested_of[work_tree] = [
                path for path in found if not any(_under(work_tree / path, ro) for ro in self.read_only)
            ]
        return [path for path in self._nested_of[work_tree] if _plain_folders(work_tree, path)]

    def _worktree_git_dirs(self, work_tree: Path) -> list[str]:
        if work_tree not in self._dirs_of:  # a build's agent and gate runs share one answer
            self._dirs_of[work_tree] = _git_dirs_of(work_tree)
        return self._dirs_of[work_tree]

    def _pending_ops(self, work_tree: Path) -> list[tuple[Path, Path]]:
        """The file the run's `ralph` commands append the operations behind their plan changes
        to, and where they look for it: the work tree's record (ralph.store.pending_ops), which
        the run sees replaced by a file of its own. ralph's own record stays out of its reach, and
        what it wrote is checked by replaying it before a commit names it."""
        from ralph.store import pending_ops

        dot_git = work_tree / ".git"
        git_dir = dot_git if dot_git.is_dir() else next(iter(self._worktree_git_dirs(work_tree)), None)
        if git_dir is None:
            return []
        fenced = pending_ops.fenced_record(Path(git_dir))
        record = Path(git_dir) / pending_ops.NAME
        try:
            record.touch()  # the place the run's own file is bound to
        except OSError:
            return []
        return [] if fenced is None else [(fenced.resolve(), record.resolve())]

    def secrets(self, work_tree: Path, home_dir: Path, fresh: bool = False) -> list[Path]:
        """The files and folders the run sees empty, as they are now (`fresh`: as for wrap)."""
        found = [home_dir / name for name in SECRET_HOME_PATHS]
        names = list(SECRET_NAMES)
        for pattern in self.hide:
            if pattern.startswith(("/", "~")):
                import glob

                found += [Path(match) for match in glob.glob(os.path.expanduser(pattern))]
            else:
                names.append(pattern)
        for tree in _unique([self.home, *([] if fresh else [work_tree])]):
            found += [tree / name for name in _untracked_matching(tree, names)]
        found = [path for path in _unique(found) if path.exists()]
        # A folder is hidden whole, as an empty read-only one: nothing can be mounted inside it.
        folders = {path for path in found if path.is_dir()}
        return [path for path in found if not any(parent in folders for parent in path.parents)]


BWRAP_SAID = "bwrap: "  # how bubblewrap begins its own errors (it then exits 1, running nothing)


def unseen_program(sandbox: Sandbox, program: str, path: str | None) -> str | None:
    """Why the fence cannot run `program` (an agent CLI named by its name, found on `path`), or
    None. The fence mounts an empty /tmp (FRESH_MOUNTS) and binds again only the folders it
    knows the run needs: a CLI installed under the temporary folder (an npm prefix there) is not
    among them, and every run would fail with `bwrap: execvp ...: No such file or directory`."""
    if os.sep in program:
        return None  # named by its path: bound for the run as its command line names it (wrap)
    found = shutil.which(program, path=path)
    if found is None:
        return None  # not installed: said before (AgentUnavailable)
    real = Path(found).resolve()
    home = Path(os.environ.get("HOME") or Path.home()).resolve()
    bound = [sandbox.home, home, Path(sys.prefix).resolve(), RALPH_SOURCE]  # as wrap binds them
    for where in (Path(found).absolute(), real):
        hidden = next((fresh for fresh in FRESH_MOUNTS if _under(where, fresh)), None)
        if hidden is not None and not any(_under(where, folder) for folder in bound):
            return (
                f"the agent program {program} ({found}) lies under {hidden}, which the sandbox"
                f" replaces with an empty one: no run could start it; install it outside {hidden}"
                " (npm: a --prefix elsewhere), name it by its path with --agent-cmd, or run with"
                " --sandbox=off"
            )
    return None


def setup_failure(exit_code: int | None, tail: list[str]) -> str | None:
    """bwrap's own error when it is what ended a run (it exits 1 after saying `bwrap: ...`, before
    the agent runs), or None."""
    if exit_code != 1:
        return None
    said = [line.strip() for line in tail if line.strip()]
    return said[-1] if said and said[-1].startswith(BWRAP_SAID) else None


def failed_setup(line: str) -> str:
    """What a run's bwrap error (setup_failure) means, and the fix, in one line."""
    return (
        f"the sandbox could not start the agent ({line}): no run can; bubblewrap needs unprivileged"
        " user namespaces (sysctl kernel.unprivileged_userns_clone=1, or an AppArmor profile that"
        " allows bwrap) and the agent program outside /tmp; or run with --sandbox=off"
    )


def top_level_names(root: Path) -> frozenset[str]:
    """The names in the folder `root`, but those a plan-only run's fence leaves alone and ralph's
    own temporary files beside plan.jsonl."""
    try:
        names = os.listdir(root)
    except OSError:  # the work tree is gone: the loop finds that out on its own
        return frozenset()
    return frozenset(name for name in names if name not in UNFENCED_NAMES and not RALPH_FILES.fullmatch(name))


def _fenceable(path: Path) -> bool:
    """A folder or a plain file, which a mount can cover; a symbolic link cannot be (a mount on it
    lands on its target), nor can a name that is gone meanwhile."""
    return not path.is_symlink() and (path.is_dir() or path.is_file())


def _lock_file(work_tree: Path) -> Path | None:
    """plan.jsonl's lock in `work_tree`, made if it is missing (as any ralph command makes it), to be
    mounted writable over itself; None when something else has its name (a link, a folder), which
    the run's ralph commands then refuse, as they do outside."""
    path = work_tree / LOCK_NAME
    with contextlib.suppress(OSError):  # there already (the usual case), or it cannot be made
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))
    return path if not path.is_symlink() and path.is_file() else None


def _caches(home_dir: Path) -> list[Path]:
    """The shared caches there are (a link: where it leads), each to be a private empty folder."""
    found = []
    for name in SHARED_CACHES:
        path = home_dir / name
        if path.is_dir():
            found.append(path.resolve())
    return _unique(found)


def _git_dirs_of(tree: Path) -> list[str]:
    """The git directory and the common one of the work tree `tree`, as git names them."""
    from ralph.store.git import Repo

    try:
        return Repo(tree).git_dirs()
    except (OSError, GitError):
        return []


# Folders of installed dependencies and tool caches: the scan for secrets below does not walk them.
# They hold thousands of files nobody keeps a secret among (a .venv: some 7,000; node_modules: often
# 100,000), and walking them was most of a run's set-up: 39 ms a scan for ralph's own checkout with
# its .venv, 4 ms without it, paid by every agent run and gate (a verifier's twice).
UNSCANNED_FOLDERS = (
    ".venv",
    "venv",
    "node_modules",
    "__pycache__",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
)


def _untracked_matching(tree: Path, names: list[str]) -> list[str]:
    """Files under `tree` that git does not track (ignored ones too) whose name or path matches,
    outside the UNSCANNED_FOLDERS."""
    pathspecs = [f":(glob){name}" if "/" in name else f":(glob)**/{name}" for name in names]
    pathspecs += [f":(exclude,glob)**/{folder}/**" for folder in UNSCANNED_FOLDERS]
    from ralph.store.git import Repo

    try:
        return Repo(tree).changes.untracked(pathspecs)
    except (OSError, GitError):
        return []


def _plain_folders(work_tree: Path, relpath: str) -> bool:
    """Whether each folder from the work tree to `relpath` is a folder and its `.git` is there,
    none of them a link (a mount on a link lands where it leads)."""
    path = work_tree
    for part in Path(relpath).parts:
        path = path / part
        if path.is_symlink() or not path.is_dir():
            return False
    return (path / ".git").exists() and not (path / ".git").is_symlink()


def _folders_on_the_way(work_tree: Path, nested: list[str]) -> list[Path]:
    """Each folder from the work tree (not itself) down to each nested repository, outermost first."""
    folders: list[Path] = []
    for relpath in nested:
        parts = Path(relpath).parts
        folders += [work_tree.joinpath(*parts[: depth + 1]) for depth in range(len(parts))]
    return _unique(folders)


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _unique(paths: list[Path]) -> list[Path]:
    return list(dict.fromkeys(paths))


def bwrap_program() -> str | None:
    """The bwrap to use: $RALPH_BWRAP when set ("" for none), else bwrap on PATH."""
    from ralph.store.programs import trusted_path

    named = os.environ.get(BWRAP_ENV)
    if named is not None:
        return named if named and os.access(named, os.X_OK) else None
    return shutil.which("bwrap", path=trusted_path())  # never a bwrap an agent wrote


def probe(program: str) -> str | None:
    """Why `program` cannot make a sandbox here (user namespaces off, ...), or None when it can."""
    from ralph.store import programs

    try:
        done = programs.run(
            [program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "true"],
            timeout_s=30, closed_stdin=True,
        )  # fmt: skip
    except OSError as exc:  # TimeoutError too
        return f"{program} does not run: {exc}"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return f"{program} cannot make a sandbox here: {said}"
    return None


def unavailable_reason() -> tuple[str | None, str | None]:
    """(the bwrap program, None) when a sandbox can be made here; else (None, why not)."""
    if not sys.platform.startswith("linux"):
        return None, f"no sandbox on {sys.platform} (ralph fences runs with bubblewrap, on Linux)"
    program = bwrap_program()
    if program is None:
        named = os.environ.get(BWRAP_ENV)
        if named is not None:
            return None, f"${BWRAP_ENV} names no program ({named!r})"
        return None, "bubblewrap is not installed (apt-get install bubblewrap, or dnf install bubblewrap)"
    why = probe(program)
    return (None, why) if why else (program, None)


def make(
    mode: str,
    home: Path,
    state_paths: tuple[str, ...],
    hide: tuple[str, ...],
    read_only: tuple[Path, ...] = (),
) -> tuple[Sandbox | None, str]:
    """The sandbox the mode asks for and the one line that says what the runs get. Raises
    SandboxUnavailable when it is required and cannot be made."""
    if mode == "off":
        return None, "sandbox off (--sandbox=off): agents and gates run unfenced"
    program, why = unavailable_reason()
    if program is None:
        if mode == "required":
            raise SandboxUnavailable(f"--sandbox=required, but {why}")
        return None, f"no sandbox: {why}; agents and gates run unfenced"
    sandbox = Sandbox(program, home, state_paths, hide, read_only)
    return sandbox, f"sandbox on ({program}): each run writes only its work tree, /tmp and its CLI's state"
