"""Running git in one work tree, and where that work tree stands: its git directories, HEAD and its
branch.

Each operation runs the git binary (never a shell): importing gitpython alone costs 120-150 ms, more
than a whole `ralph task done` may take, and one plumbing call costs 1-5 ms. The one place its
object database could have paid for that, reading a file's whole history for `ralph log`, is one
`git log -p` process instead (gitlog.file_history): git's own diff beat reading every version, through
gitpython or `git cat-file --batch` (measured there), so ralph does not use gitpython.

Paths are always literal (GIT_LITERAL_PATHSPECS): a file named `pages/[id].js` is that file, not a
pattern.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ralph.errors import GitError, WorkTreeGone
from ralph.store import programs, refs
from ralph.store.root import git_dir

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Generator

ZERO_SHA = "0" * 40
# The most one git command may take: plumbing takes milliseconds, a fetch or push of a large
# build minutes. A git still running then (a remote that stopped answering, a filter driver that
# hangs) is killed and the command fails, rather than hold the plan's lock for ever.
GIT_TIMEOUT_S = 600.0
_COMMON_DIRS: dict[str, Path] = {}  # a work tree's git common dir (Runner.common_dir)
# Variables a git hook or wrapper may set that would point git somewhere other than this repo.
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


class Runner:
    """git in one work tree: each part of a Repo runs its commands through the Repo's one Runner."""

    def __init__(self, root: Path):
        self.root = root
        programs.fence(root)  # nothing ralph runs comes from inside it
        self.env = {key: value for key, value in os.environ.items() if key not in _LOCATION_VARS}
        self.env["PATH"] = programs.trusted_path(self.env.get("PATH", os.defpath))
        self.env["GIT_LITERAL_PATHSPECS"] = "1"
        self.env["GIT_TERMINAL_PROMPT"] = "0"  # a fetch or push never waits for a password
        self.env["GIT_CONFIG_PARAMETERS"] = _config_parameters(self.env, (*_HOOKS_OFF, *_HARDENED))

    def git(self, *args: str, stdin: bytes | None = None) -> str:
        return self.output(args, stdin).decode("utf-8", "replace")

    def paths(self, *args: str) -> list[str]:
        """The paths a git command lists with -z, as names to hand back to git (see listing)."""
        return [path for path in self.listing(*args).split("\0") if path]

    def listing(self, *args: str) -> str:
        """git's output for a command that lists paths, as names to hand back to git: a name that
        is not UTF-8 keeps its bytes (as surrogates, which arguments encode back), where the
        replacement character would name no file at all."""
        return self.output(args).decode("utf-8", "surrogateescape")

    def output(
        self, args: tuple[str, ...], stdin: bytes | None = None, env: dict[str, str] | None = None
    ) -> bytes:
        """git's stdout as bytes; GitError naming the command when it fails. `env`: variables
        set for this command alone."""
        done = self.run(args, stdin, env)
        if done.returncode != 0:
            raise GitError(explain(args, done.stderr.decode("utf-8", "replace")))
        return done.stdout

    def run(
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
                env={**self.env, **env} if env else self.env,
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
        done = self.run(args)
        return done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")

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
                env=self.env,
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
                raise GitError(explain(args, errors.read().decode("utf-8", "replace")))

    # --- where this work tree stands -------------------------------------------------------------
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

    def git_dirs(self) -> list[str]:
        """The git directory and the common one of this work tree, absolute, as git names them."""
        return self.listing("rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir").split()

    def head(self) -> str | None:
        """The commit HEAD points at, or None in a repository with no commits yet: from the ref
        files where they say (ralph.store.refs), else from git."""
        return self._unless_known(
            refs.head_commit(self.git_dir()), "rev-parse", "-q", "--verify", "HEAD^{commit}"
        )

    def branch(self) -> str | None:
        """The branch HEAD is on, or None when HEAD is detached: from the HEAD file where it says
        (ralph.store.refs), else from git."""
        return self._unless_known(refs.head_branch(self.git_dir()), "symbolic-ref", "-q", "--short", "HEAD")

    def _unless_known(self, found: str | None, *args: str) -> str | None:
        """`found` as the ref files gave it, or, where they could not say (refs.ASK_GIT), what git
        prints for `args` (None when git finds nothing)."""
        if found != refs.ASK_GIT:
            return found
        try:
            return self.git(*args).strip()
        except GitError:
            return None

    def commit_of(self, rev: str) -> str | None:
        """The commit `rev` names, or None when it names none (not a revision, or not a commit)."""
        if rev.startswith("-"):  # never an option
            return None
        done = self.run(("rev-parse", "-q", "--verify", "--end-of-options", f"{rev}^{{commit}}"))
        return done.stdout.decode().strip() if done.returncode == 0 else None

    def commits(self, *args: str) -> list[str]:
        """`git rev-list ARGS`, first parents only: the commits, newest first."""
        return self.git("rev-list", "--first-parent", *args).split()


def explain(args: tuple[str, ...], stderr: str) -> str:
    """What a failed git command said, in one line naming the command."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    text = " ".join(lines[-3:]) if lines else "no message"
    if "Please tell me who you are" in stderr or "empty ident" in stderr:
        return "git needs an identity to commit: set user.name and user.email (git config --global ...)"
    return f"git {_subcommand(args)} failed: {text}"


def git_argv(args: tuple[str, ...] | list[str]) -> list[str]:
    """The argv of `git ARGS` as ralph runs it: the trusted git (ralph.store.programs), and the
    options the command always gets (_COMMAND_OPTIONS), before its `--` if it has one. Run it with
    a Runner's environment, which holds the hardened settings; before its `--end-of-options` too,
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
