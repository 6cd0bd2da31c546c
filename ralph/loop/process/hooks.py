"""Hooks: the commands the config's `hooks` names, run on the loop's events (a task accepted or
killed, a question asked, a wait for a rate or usage limit, the run's end).

The journal tells the hooks of each event it writes; those that are hook events are queued and run
one after another by one thread, so a slow webhook never holds up a build. Each hook is a child of
the loop's supervisor (never a shell): Ctrl-C and SIGTERM stop it, except run_ended, which runs
on every ending, a stop or a spent budget included. Each gets the event as one JSON object on
stdin and is bounded by hook_timeout. A hook that fails, hangs or cannot start is
journalled as hook_failed and the run goes on. docs/hooks.md has examples.

Agents write the work tree, and hooks run outside the agents' runs: a hook whose program or
script lies in the work tree (`python3 scripts/slack_hook.py`) runs that file as the commit the run
started on has it, copied out for each run, never as an agent left it; one that names a file
that commit lacks is refused, in one line, at the start. And each hook runs in the run's fence (a
folder of its own writable, the work tree read-only), as the gate does: with the sandbox off (the
person's own config or --sandbox=off), unfenced."""

from __future__ import annotations

import os
import queue
import threading
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from ralph.loop.observe.journal import Journal, JournalRecord
from ralph.loop.process.sandbox import Sandbox
from ralph.loop.process.supervisor import BudgetSpent, ChildNotFound, Supervisor
from ralph.plan.records import HookEvent
from ralph.store import programs
from ralph.store.drivers import SCRIPT_SUFFIXES as _SCRIPT_SUFFIXES
from ralph.text import json_text, versioned
from ralph.usecases.config_values import split_command
from ralph.usecases.settings import Settings

HOOK_LOGS = "hooks"  # under the log directory: one log per hook run
# A hook's argument that is not its program is taken for a file to pin when it names a file of the
# work tree and looks like a path: a folder in it, or a script's suffix (_SCRIPT_SUFFIXES, which
# git's drivers are read by too: ralph.store.drivers). (A word such as "ralph" in
# `notify-send ralph "the run ended"` is text, even where the repository has a file of that name.)


class Pinned(NamedTuple):
    """A file of the work tree a hook names, as the commit the run started on has it."""

    relpath: str
    data: bytes
    executable: bool


# The journal's events that are hook events, by the hook event's name.
_JOURNALLED = {
    "task_killed": HookEvent.TASK_KILLED,
    "question_asked": HookEvent.QUESTION_ASKED,
    "limit_wait": HookEvent.LIMIT_WAIT,
    "construct_end": HookEvent.RUN_ENDED,
}

# A hook queued to run: its event, its argv and the JSON payload it reads on stdin.
_Queued = tuple[HookEvent, tuple[str, ...], dict[str, object]]


def hook_event(record: JournalRecord) -> HookEvent | None:
    """The hook event a journal record is, if any."""
    if record.get("event") == "verdict":
        return HookEvent.TASK_ACCEPTED if record.get("verdict") == "accepted" else None
    return _JOURNALLED.get(record.get("event", ""))


class Hooks:
    def __init__(
        self, root: Path, settings: Settings, supervisor: Supervisor, journal: Journal, log_dir: Path
    ):
        self.root, self.supervisor, self.journal = root, supervisor, journal
        self.log_dir = root / log_dir / HOOK_LOGS
        self.timeout_s = settings.hook_timeout_s
        self.sandbox: Sandbox | None = None  # the run's fence, once made: each hook runs in it
        self.refused: list[str] = []  # one line per hook refused at the start
        self._pins: dict[str, Pinned] = {}  # an argument of a hook -> the file it names, pinned
        self.commands: dict[HookEvent, tuple[str, ...]] = {}
        start: list[str | None] = []  # the commit the run started on, read once if need be
        for event, command in (settings.hooks or {}).items():
            argv = _argv(command, event) if command else ()
            inside = [arg for at, arg in enumerate(argv) if _in_work_tree(root, arg, at == 0)]
            if inside and not start:
                from ralph.store.git import Repo

                start.append(Repo(root).head())
            if argv and self._pin(event, argv, inside, start[0] if start else None):
                self.commands[HookEvent(event)] = argv
        self._queue: queue.Queue[_Queued | None] = queue.Queue()  # None: the worker stops
        self._worker: threading.Thread | None = None
        # Set when the worker has run every queued hook. Waited on instead of Thread.join: a join
        # interrupted by a signal (CPython 3.11) can leave the thread taken for ended, and the
        # next join returns at once, with run_ended still notifying.
        self._idle = threading.Event()
        self._lock = threading.Lock()
        self._runs = 0

    def _pin(self, event: str, argv: tuple[str, ...], inside: list[str], start: str | None) -> bool:
        """Keep the files of the work tree `argv` names (`inside`) as commit `start` has them;
        False, and one line in `refused`, when it lacks one (or has a link or a folder there)."""
        from ralph.store.git import Repo

        repo = Repo(self.root)
        for arg in inside:
            relpath = _relpath(self.root, arg)
            mode = repo.objects.mode_at(start, relpath) if start else None
            data = repo.objects.file_at(start, relpath) if start and mode in ("100644", "100755") else None
            if data is None:
                where = f"commit {start[:8]}" if start else "any commit"
                self.refused.append(
                    f"hook {event} refused: {relpath} lies in the work tree, which agents write, and is"
                    f" no file of {where}, where the run started; name a committed file or one outside"
                    " the repository"
                )
                self.journal.event("hook_refused", hook=event, argv=list(argv), path=relpath)
                return False
            self._pins[arg] = Pinned(relpath, data, mode == "100755")
        return True

    def notify(self, record: JournalRecord) -> None:
        """Called by the journal with each record it writes: queue the hooks of a hook event."""
        event = hook_event(record)
        if event is None:
            return
        commands = [argv for key in (event, HookEvent.ANY) if (argv := self.commands.get(key))]
        if not commands:
            return
        fields = {key: value for key, value in record.items() if key not in ("ts", "event")}
        payload = versioned({"event": str(event), "time": record["ts"], "root": str(self.root), **fields})
        with self._lock:  # VERIFY journals from several threads: one worker all the same
            for argv in commands:
                self._queue.put((event, argv, payload))
            if self._worker is None:
                self._idle.clear()
                self._worker = threading.Thread(target=self._work, name="ralph-hooks", daemon=True)
                self._worker.start()

    def close(self) -> None:
        """Wait for the queued hooks (each bounded by its timeout): the run's end runs its hooks."""
        with self._lock:
            worker, self._worker = self._worker, None
            if worker is None:
                return
            self._queue.put(None)
        try:
            self._idle.wait()
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM while the run's last hooks run: the others
            self.supervisor.stop_all()  # stop, run_ended still notifies, bounded by its timeout
            self._idle.wait()  # (further signals are ignored meanwhile: ralph.loop.process.signals)
            raise

    def _work(self) -> None:
        try:
            while (item := self._queue.get()) is not None:
                try:
                    self._run(*item)
                except Exception as exc:  # noqa: BLE001 (a hook must never stop the run)
                    self.journal.event("hook_failed", hook=str(item[0]), argv=list(item[1]), error=repr(exc))
        finally:
            self._idle.set()

    def _run(self, event: HookEvent, argv: tuple[str, ...], payload: dict[str, object]) -> None:
        import tempfile

        self._runs += 1
        # A folder of its own, gone after it: the pinned files, and the one place it may write.
        with tempfile.TemporaryDirectory(prefix="ralph-hook-") as own:
            self._run_in(Path(own), event, argv, payload)

    def _run_in(self, own: Path, event: HookEvent, argv: tuple[str, ...], payload: dict[str, object]) -> None:
        log = self.log_dir / f"{self._runs:03d}-{event}.log"
        about = {"hook": str(event), "argv": list(argv), "log": str(log.relative_to(self.root))}
        # The person's PATH less what an agent could have written (ralph.store.programs): a hook
        # named `notify-send` is never a notify-send in the project's .venv/bin or ./bin.
        env = {**programs.trusted_env(), "RALPH_HOOK_EVENT": str(event)}
        data = (json_text(payload) + "\n").encode()
        run_argv = [self._materialize(own, arg) for arg in argv]
        if self.sandbox is not None:
            run_argv = self.sandbox.wrap(run_argv, own, env, cwd=self.root, fresh=True)
        try:
            # A stop (or a spent budget) ends the other hooks with the agents, but run_ended still
            # runs, bounded by its timeout: a CI timeout or a closed terminal must still notify.
            result = self.supervisor.run(
                run_argv,
                cwd=self.root,
                env=env,
                log_path=log,
                timeout_s=self.timeout_s,
                stdin_data=data,
                outlives_stop=event is HookEvent.RUN_ENDED,
            )
        except ChildNotFound as exc:
            self.journal.event("hook_failed", **about, error=f"cannot start: {exc}")
            return
        except BudgetSpent:
            self.journal.event("hook_failed", **about, stop_reason="budget")
            return
        if result.ok:
            self.journal.event("hook_ran", **about, duration_s=round(result.duration_s, 3))
        else:
            self.journal.event(
                "hook_failed", **about, exit_code=result.exit_code, stop_reason=result.stop_reason
            )

    def _materialize(self, own: Path, arg: str) -> str:
        """The argument as the hook gets it: a pinned file's copy in the run's own folder."""
        pinned = self._pins.get(arg)
        if pinned is None:
            return arg
        copy = own / "pinned" / pinned.relpath
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(pinned.data)
        copy.chmod(0o755 if pinned.executable else 0o644)
        return str(copy)


def _in_work_tree(root: Path, arg: str, program: bool) -> bool:
    """Whether a hook's argument names a file in the work tree (by its name, or where it leads):
    its program when that is a path (`./notify.sh`: a bare name is looked up on a PATH with no
    entry in the work tree), else an argument that looks like a path (_SCRIPT_SUFFIXES)."""
    if program and "/" not in arg:
        return False
    if not program and "/" not in arg.rstrip("/") and not arg.endswith(_SCRIPT_SUFFIXES):
        return False
    path = Path(arg) if os.path.isabs(arg) else root / arg
    if not os.path.lexists(path):
        return False
    return any(_under(found, root) for found in (os.path.normpath(path), os.path.realpath(path)))


def _under(path: str, root: Path) -> bool:
    """Whether `path` lies in the work tree `root` (as named, or where it really is)."""
    return any(path == top or path.startswith(top + os.sep) for top in _tops(root))


def _tops(root: Path) -> tuple[str, str]:
    return os.path.normpath(root), os.path.realpath(root)


def _relpath(root: Path, arg: str) -> str:
    """The path inside the work tree a hook's argument names, as git names it: by its name when
    that lies inside, else by where it leads."""
    path = os.path.normpath(Path(arg) if os.path.isabs(arg) else root / arg)
    if not _under(path, root):
        path = os.path.realpath(path)
    top = next(top for top in _tops(root) if path == top or path.startswith(top + os.sep))
    return PurePosixPath(*Path(os.path.relpath(path, top)).parts).as_posix()


def _argv(command: str | list[str], event: str) -> tuple[str, ...]:
    return split_command(command, f"hook {event}") if isinstance(command, str) else tuple(command)
