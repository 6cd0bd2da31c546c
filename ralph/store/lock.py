"""The one lock every writer of plan.jsonl holds: a real file lock, waited for within a bound; and
the lock a whole run holds (`ralph construct`: one per repository).

Both are flock(2) locks: the kernel drops the lock of a process that dies, so a lock left by a
killed process never blocks the next. Its holder writes itself into the file ("pid N, since T")
and empties it when it lets go: a file that names a holder while nobody holds the lock was left by
a process that was killed holding it. `ralph doctor` reports it (`holder`), and clears it (`clear`),
which only empties the file, under the lock: removing a flock file would let two processes hold
"the" lock at once (one on the removed file, one on the new one)."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ralph.errors import Busy, InvalidInput, RalphError

LOCK_NAME = "plan.jsonl.lock"
# ralph's own files beside plan.jsonl (its lock, the temporary files of its atomic writes):
# never an agent's change, nor a build's.
# ralph's own files in a work tree, never a build's change: the plan's lock and temporary copies,
# and the log folder (a link an agent put there is never committed with its build).
RALPH_FILES = re.compile(re.escape(LOCK_NAME) + r"|\.plan\.jsonl\.\d+\.tmp|build/ralph-logs(?:/.*)?")
CONSTRUCT_LOCK_NAME = "ralph-construct.lock"  # in the work tree's git directory
DEFAULT_LOCK_TIMEOUT_S = 60.0


@contextmanager
def plan_lock(root: Path) -> Iterator[None]:
    """The lock every writer of plan.jsonl holds; waiting is bounded and ends in Busy.

    flock(2) on plan.jsonl.lock, tried every 50 ms until the timeout, as the filelock package
    does; importing that package cost about 40 ms of CPU, a third of a whole `ralph task done`
    (measured), so ralph takes the lock itself. The file stays after release: a waiter locking a
    file already unlinked would guard nothing. Where the file system has no flock, filelock's
    fallback (a lock file that exists while held) takes over."""
    import time

    timeout = lock_timeout()
    path = root / LOCK_NAME
    fd: int | None = None
    deadline = time.monotonic() + timeout
    while True:
        try:
            fd = _locked_fd(path)
        except OSError as exc:  # a read-only folder, a directory where the lock file goes, ...
            if exc.errno != errno.ENOSYS:
                raise _cannot_lock(path, exc) from None
            break  # no flock here
        if fd is not None:
            break
        if time.monotonic() >= deadline:
            raise _busy(timeout)
        time.sleep(0.05)
    if fd is None:
        with _portable_lock(path, timeout):
            yield
        return
    _name_holder(fd, _holder_text())
    try:
        yield
    finally:
        _name_holder(fd, "")  # let go: the file names no holder
        os.close(fd)  # closing releases the lock


def _cannot_lock(path: Path, exc: OSError) -> RalphError:
    found = not_a_file(path)
    if found is not None:  # never made so by ralph: an agent's doing, which doctor undoes
        return RalphError(
            f"cannot take the lock {LOCK_NAME}: it is {found}, not ralph's lock file;"
            " 'ralph doctor --fix' puts ralph's back"
        )
    return RalphError(f"cannot take the lock {LOCK_NAME}: {exc.strerror or exc}")


def _name_holder(fd: int, text: str) -> None:
    """Best effort: the lock is the kernel's, the text only says who held it."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, text.encode(), 0)
    except OSError:
        pass


def _busy(timeout: float) -> Busy:
    return Busy(f"plan.jsonl is busy: another ralph command held its lock for {timeout:g}s")


def _locked_fd(path: Path) -> int | None:
    """The lock file, open and locked by this process, or None while another process holds it."""
    import fcntl

    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd, created = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644), True
    except FileExistsError:
        fd, created = os.open(path, flags), False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException as exc:
        os.close(fd)
        if created and isinstance(exc, OSError) and exc.errno == errno.ENOSYS:
            path.unlink(missing_ok=True)  # the fallback's lock is a file that exists while held
        raise
    if os.fstat(fd).st_nlink == 0:  # its holder's file was removed meanwhile: lock the new one
        os.close(fd)
        return None
    return fd


@contextmanager
def _portable_lock(path: Path, timeout: float) -> Iterator[None]:
    from filelock import FileLock, Timeout

    lock = FileLock(path, timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise _busy(timeout) from None
    except OSError as exc:
        raise RalphError(f"cannot take the lock {LOCK_NAME}: {exc.strerror or exc}") from None
    _write_holder(path)
    try:
        yield
    finally:
        _write_holder(path, "")
        lock.release()


def lock_timeout() -> float:
    """Seconds to wait for the lock: RALPH_LOCK_TIMEOUT, a number >= 0 (a negative one would wait
    forever), else the default."""
    text = os.environ.get("RALPH_LOCK_TIMEOUT")
    if text is None:
        return DEFAULT_LOCK_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):  # also refuses NaN
        raise InvalidInput(f"RALPH_LOCK_TIMEOUT must be a number of seconds >= 0, not {text!r}")
    return value


@contextmanager
def exclusive_run(path: Path, what: str) -> Iterator[None]:
    """Hold `path` locked while `what` runs; a second one fails at once with Busy naming the
    first (pid, start). The kernel drops the lock of a process that dies, so a file left by a dead
    run never blocks the next."""
    import fcntl

    handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 (held for the whole run)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown pid"
            raise Busy(f"another {what} is running in this repository ({holder})") from None
        handle.seek(0)
        handle.truncate()
        handle.write(_holder_text())
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()  # let go: the file names no holder
    finally:
        handle.close()  # closing releases the lock


def _holder_text() -> str:
    import time

    return f"pid {os.getpid()}, since {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}"


def _write_holder(path: Path, text: str | None = None) -> None:
    """Name this process in a lock file it holds ("" when letting go). Best effort: the lock is
    the kernel's, the text only says who held it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        os.ftruncate(fd, 0)
        os.write(fd, (_holder_text() if text is None else text).encode())
    except OSError:
        pass
    finally:
        os.close(fd)


def not_a_file(path: Path) -> str | None:
    """What stands at a lock's name when it is not a regular file ("a symbolic link", "a folder",
    ...), or None (a regular file, or nothing: the next command makes it). Only ralph makes its
    locks, always as regular files: anything else there is an agent's (or a person's) doing, and
    every command that needs the lock fails on it (it is opened without following links)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "a folder" if stat.S_ISDIR(mode) else "a special file"


def restore(path: Path, keep: Path) -> str | None:
    """ralph's lock put back at `path` as an empty regular file, when something else stands there:
    that is moved to `keep` (a name no file has: the person sees what it was), or, a link that
    cannot be moved there, removed (its target is not touched). Returns what stood there, or None
    when the lock was a regular file (or missing) and nothing was done."""
    found = not_a_file(path)
    if found is None:
        return None
    keep.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(path, keep)  # a link moves as a link: nothing is followed
    except OSError:
        if not path.is_symlink():
            raise
        path.unlink()
    with contextlib.suppress(FileExistsError):  # made meanwhile by a ralph command: a regular file
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))
    return found


def holder_of(text: str) -> tuple[int, str | None] | None:
    """The pid and start a lock file names ("pid N, since T", as its holder writes it), or None
    (emptied: let go, or never held)."""
    import re

    found = re.match(r"pid (\d+)(?:, since (.+))?", text.strip())
    return (int(found.group(1)), found.group(2)) if found else None


class LockState:
    """A lock file as `ralph doctor` finds it: `held` by a live process, and the holder the file
    names (its own, or a killed one's when not held; "" when it names none)."""

    __slots__ = ("path", "held", "holder")

    def __init__(self, path: Path, held: bool, holder: str):
        self.path, self.held, self.holder = path, held, holder

    @property
    def stale(self) -> bool:
        return not self.held and bool(self.holder)


def probe(path: Path) -> LockState | None:
    """The state of the lock file at `path` (None when there is none), found by trying to take the
    lock without waiting and letting go at once."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a folder, a fifo: no lock of ralph's (not_a_file)
            return None
        holder = os.read(fd, 200).decode("utf-8", "replace").strip()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return LockState(path, True, holder)
        return LockState(path, False, holder)
    finally:
        os.close(fd)  # closing lets go of a lock this took


def clear(path: Path) -> bool:
    """Empty a stale lock file, holding its lock meanwhile; False when a live process holds it."""
    import fcntl

    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return True
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        os.ftruncate(fd, 0)
        return True
    finally:
        os.close(fd)
