"""Processes a run leaves behind outside its process group. A daemon started with `setsid` (or a
double fork) is in a session of its own, so stopping the run's group misses it, and its parent
exits at once, so it is nobody's child: without help it is re-parented to PID 1 and runs on.

On Linux the construct loop makes ralph a child subreaper (prctl PR_SET_CHILD_SUBREAPER): such
orphans are re-parented to ralph instead, where /proc shows them (their ppid is ralph's pid). Every
supervised child carries a run mark in its environment (MARK=<ralph pid>.<run number>), and its
descendants inherit it; after a run ends, the children of ralph that carry a finished run's mark
are ended with everything they started (TERM, a grace period, KILL) and reaped. ralph's own
children (git, a gpg-agent a signed plan commit starts) carry no mark and are left alone.
Elsewhere, or where prctl fails, nothing is adopted and nothing here runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import NamedTuple

MARK = "_RALPH_RUN"  # not RALPH_*: those are the loop's variables, which a gate must not see
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
KILL_WAIT_S = 5.0  # after SIGKILL, how long to wait for a process to go before giving up on it


class Proc(NamedTuple):
    name: str
    state: str  # "R", "S", "Z" (a zombie: exited, not yet reaped), ...
    ppid: int
    pgrp: int
    sid: int


def _prctl() -> Callable[..., int] | None:
    """libc's prctl with its argument types, or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # here: only the construct loop needs it

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    prctl.restype = ctypes.c_int
    return prctl


def _is_subreaper(prctl: Callable[..., int]) -> bool:
    import ctypes

    value = ctypes.c_int(0)
    return prctl(PR_GET_CHILD_SUBREAPER, ctypes.addressof(value), 0, 0, 0) == 0 and bool(value.value)


@contextlib.contextmanager
def subreaper() -> Iterator[bool]:
    """While inside, this process adopts the orphans of its descendants; yields whether it does
    (False where prctl is missing or refuses). The previous setting is restored on the way out."""
    prctl = _prctl()
    was = prctl is not None and _is_subreaper(prctl)
    on = prctl is not None and prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    try:
        yield on
    finally:
        if on and not was and prctl is not None:  # on: prctl is there
            prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def process_table() -> dict[int, Proc] | None:
    """Every process /proc shows; None where there is no /proc."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    table = {}
    for entry in proc.iterdir():
        if entry.name.isdigit():
            found = _proc(int(entry.name))
            if found is not None:
                table[int(entry.name)] = found
    return table


def descendants_table() -> dict[int, Proc] | None:
    """This process's descendants (its children, theirs, ...) as process_table() shows them, found
    through /proc's children files instead of every process's stat: after each agent run and
    gate, ralph looks for what the run left, and a person's machine runs hundreds of processes
    where a run leaves a few. None where those files are missing (a kernel built without
    CONFIG_PROC_CHILDREN): the caller reads the whole table. A process forked while the files
    are read can be missed, as by a whole scan: the callers look again until nothing is left."""
    try:
        todo = _children(os.getpid())
    except OSError:
        return None
    table: dict[int, Proc] = {}
    while todo:  # a loop, not recursion: a fork bomb's tree is deep
        pid = todo.pop()
        if pid in table:
            continue
        found = _proc(pid)
        if found is None:
            continue  # gone meanwhile
        table[pid] = found
        with contextlib.suppress(OSError):
            todo += _children(pid)
    return table


def _children(pid: int) -> list[int]:
    """The children of every thread of `pid`: a child belongs to the thread that started it."""
    children: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(FileNotFoundError):  # the thread ended meanwhile
            children += map(int, Path(f"/proc/{pid}/task/{task}/children").read_text().split())
    return children


def _proc(pid: int) -> Proc | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # it exited while being read
        return None
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state, ppid, pgrp, session
    return Proc(name, fields[0], int(fields[1]), int(fields[2]), int(fields[3]))


def mark_of(pid: int) -> str | None:
    """The run mark in the process's environment as it started; None when it has none, or the
    environment cannot be read (a zombie's is empty; another user's is not ours to read)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    prefix = MARK.encode() + b"="
    for item in environ.split(b"\0"):
        if item.startswith(prefix):
            return item[len(prefix) :].decode("ascii", "replace")
    return None


def end_left_behind(finished: Callable[[str], bool], exclude: Collection[int], grace_s: float) -> list[str]:
    """End what finished runs left behind: each child of this process (an adopted orphan) whose
    mark `finished` accepts, with all its descendants. SIGTERM, SIGKILL after `grace_s`, then each
    is reaped. `exclude`: children the supervisor is still running. Returns "pid name" of each one
    ended; never raises."""
    me, my_sid = os.getpid(), os.getsid(0)
    ended: dict[int, str] = {}
    killed_at: float | None = None
    deadline = time.monotonic() + grace_s
    while True:
        table = _ours()
        if table is None:
            return []
        ours = {pid: p for pid, p in table.items() if p.ppid == me and pid not in exclude}
        for pid, proc in ours.items():
            if proc.state == "Z" and (pid in ended or _safe_to_reap(pid, proc, my_sid)):
                _reap(pid)
        roots = [
            pid
            for pid, proc in ours.items()
            if proc.state != "Z" and (pid in ended or _marked(pid, finished))
        ]
        left = [pid for pid in _with_descendants(table, roots) if table[pid].state != "Z"]
        if not left:
            break
        now = time.monotonic()
        if killed_at is not None and now - killed_at > KILL_WAIT_S:
            break  # uninterruptible (state D): SIGKILL lands when it wakes; not worth a hang
        if now >= deadline:
            killed_at = killed_at or now
        for pid in left:
            if killed_at is not None or pid not in ended:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL if killed_at is not None else signal.SIGTERM)
            ended.setdefault(pid, table[pid].name)
        time.sleep(0.05)
    for pid in ended:  # those that died as a descendant and were re-parented to ralph since
        _reap(pid)
    return [f"{pid} {name}" for pid, name in ended.items()]


def reap_adopted() -> None:
    """Reap every zombie child outside this process's session: adopted orphans that exited by
    themselves. Only where no other thread of this process runs a child of its own in a new
    session (ralph's git commands are), whose exit status this would take: the loop's end."""
    table = _ours() or {}
    me, my_sid = os.getpid(), os.getsid(0)
    for pid, proc in table.items():
        if proc.ppid == me and proc.state == "Z" and proc.sid != my_sid:
            _reap(pid)


def _ours() -> dict[int, Proc] | None:
    """This process's descendants, from the children files where there are, else every process."""
    table = descendants_table()
    return table if table is not None else process_table()


def _marked(pid: int, finished: Callable[[str], bool]) -> bool:
    mark = mark_of(pid)
    return mark is not None and finished(mark)


def _safe_to_reap(pid: int, proc: Proc, my_sid: int) -> bool:
    """An exited orphan that no thread of ralph can be waiting for: not in ralph's session (its
    plain subprocesses are) and not the leader of its own session (git commands and supervised
    children are, and their threads reap them)."""
    return proc.sid not in (my_sid, pid)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _with_descendants(table: dict[int, Proc], roots: list[int]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, proc in table.items():
        children.setdefault(proc.ppid, []).append(pid)
    found, queue = [], list(roots)
    seen = set(queue)
    while queue:  # a loop, not recursion: a fork bomb's tree is deep
        pid = queue.pop()
        found.append(pid)
        for child in children.get(pid, ()):
            if child not in seen:
                seen.add(child)
                queue.append(child)
    return found
