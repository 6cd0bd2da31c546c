"""The errors ralph reports to people: each is one line, each maps to an exit code."""

from __future__ import annotations

from ralph.text import plural

# Exit codes are part of the interface: agents and scripts branch on them.
EXIT_OK = 0
EXIT_REFUSED = 1  # a valid request the plan cannot honour (unknown id, nothing to accept, ...)
EXIT_INVALID = 2  # invalid input: bad JSON, a malformed plan.jsonl, bad usage
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug in ralph; the traceback goes to a file
EXIT_BUSY = 75  # EX_TEMPFAIL: the plan lock stayed taken; trying again may work
EXIT_REMOTE = 11  # the shared git remote could not be reached, or refused a push (not a lost race)


class RalphError(Exception):
    """A failure with a message for the user."""

    exit_code = EXIT_REFUSED


class Refused(RalphError):
    """The operation is valid in form but the plan's state does not allow it."""

    exit_code = EXIT_REFUSED


class InvalidInput(RalphError):
    """What the user (or an agent) passed in is malformed."""

    exit_code = EXIT_INVALID


class PlanInvalid(InvalidInput):
    """plan.jsonl itself is malformed; nothing will be written until it is fixed."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        first = problems[0]
        more = (
            f" (and {plural(len(problems) - 1, 'more problem')}; run 'ralph check')"
            if len(problems) > 1
            else ""
        )
        super().__init__(f"{first}{more}")


class Busy(RalphError):
    exit_code = EXIT_BUSY


# How git (and the C library under it) says a disk is full: strerror(ENOSPC), strerror(EDQUOT).
NO_SPACE_WORDS = ("No space left on device", "Disk quota exceeded")


class GitError(RalphError):
    exit_code = EXIT_REFUSED

    def __init__(self, message: str = "", *args: object):
        super().__init__(message, *args)
        # git's words read once, here: whatever catches it reads the field (disk_full below)
        self.no_space = any(words in message for words in NO_SPACE_WORDS)


def disk_full(exc: BaseException) -> bool:
    """Whether `exc` says the disk (or the user's quota) is full: git's error, or ralph's own
    write's. Not the work's fault nor the person's: the loop ends DISK_FULL, what was under way
    recorded as interrupted (ralph.store.intent), undone or finished once there is room."""
    import errno

    if isinstance(exc, GitError):
        return exc.no_space
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


class BranchSwitched(GitError):
    """The work tree's branch changed under a running construct (a person's `git switch`): ralph
    stops before committing onto a branch that is not the run's."""


class WorkTreeGone(GitError):
    """The work tree a git command was to run in is gone (an agent removed the worktree it ran in)."""


class RemoteError(GitError):
    """The shared git remote failed us after the retries: unreachable, or it refused for a reason
    other than another runner's push (permissions, a hook)."""

    exit_code = EXIT_REMOTE


class RemoteOffline(RemoteError):
    """The remote could not be reached (no network, no such path or host, no credentials)."""


class RemoteRejected(RemoteError):
    """The remote refused a push for a reason other than a lost race: permissions, a hook."""


class CodeConflict(RemoteError):
    """The local branch's own commits (a build) change files another runner changed on the
    remote meanwhile: git cannot merge them. The loop takes it as the build's verdict."""

    def __init__(self, message: str, files: list[str]):
        super().__init__(message)
        self.files = files


class Problem:
    """One problem found in plan.jsonl, located by file and line (0: the file as a whole)."""

    __slots__ = ("path", "line", "message")

    def __init__(self, path: str, line: int, message: str):
        self.path = path
        self.line = line
        self.message = message

    def __str__(self) -> str:
        where = f"{self.line}:" if self.line else ""  # line 0: the file as a whole
        return f"{self.path}:{where} {self.message}"

    def __repr__(self) -> str:
        return f"Problem({str(self)!r})"
