"""Hooks: the commands the config's `hooks` names, run on the loop's events (a task accepted or
killed, a question asked, a wait for a rate or usage limit, the run's end).

The journal tells the hooks of each event it writes; those that are hook events are queued and run
one after another by one thread, so a slow webhook never holds up a build. Each hook is a child of
the loop's supervisor (never a shell): Ctrl-C and SIGTERM stop it, except run_ended, which runs
on every ending, a stop or a spent budget included. Each gets the event as one JSON object on
stdin and is bounded by hook_timeout. A hook that fails, hangs or cannot start is
journalled as hook_failed and the run goes on. docs/hooks.md has examples."""

from __future__ import annotations

import queue
import threading
from pathlib import Path

from ralph.loop.journal import Journal
from ralph.loop.supervisor import BudgetSpent, ChildNotFound, Supervisor
from ralph.ops.settings import Settings, split_command
from ralph.plan.records import HookEvent
from ralph.store import programs
from ralph.text import json_text, versioned

HOOK_LOGS = "hooks"  # under the log directory: one log per hook run

# The journal's events that are hook events, by the hook event's name.
_JOURNALLED = {
    "task_killed": HookEvent.TASK_KILLED,
    "question_asked": HookEvent.QUESTION_ASKED,
    "limit_wait": HookEvent.LIMIT_WAIT,
    "construct_end": HookEvent.RUN_ENDED,
}


def hook_event(record: dict) -> HookEvent | None:
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
        self.commands = {
            HookEvent(event): _argv(command, event)
            for event, command in (settings.hooks or {}).items()
            if command
        }
        self._queue: queue.Queue = queue.Queue()
        self._worker: threading.Thread | None = None
        # Set when the worker has run every queued hook. Waited on instead of Thread.join: a join
        # interrupted by a signal (CPython 3.11) can leave the thread taken for ended, and the
        # next join returns at once, with run_ended still notifying.
        self._idle = threading.Event()
        self._lock = threading.Lock()
        self._runs = 0

    def notify(self, record: dict) -> None:
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
            self._idle.wait()  # (further signals are ignored meanwhile: ralph.loop.signals)
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

    def _run(self, event: HookEvent, argv: tuple[str, ...], payload: dict) -> None:
        self._runs += 1
        log = self.log_dir / f"{self._runs:03d}-{event}.log"
        about = {"hook": str(event), "argv": list(argv), "log": str(log.relative_to(self.root))}
        # The person's PATH less what an agent could have written (ralph.store.programs): a hook
        # named `notify-send` is never a notify-send in the project's .venv/bin or ./bin.
        env = {**programs.trusted_env(), "RALPH_HOOK_EVENT": str(event)}
        data = (json_text(payload) + "\n").encode()
        try:
            # A stop (or a spent budget) ends the other hooks with the agents, but run_ended still
            # runs, bounded by its timeout: a CI timeout or a closed terminal must still notify.
            result = self.supervisor.run(
                list(argv),
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


def _argv(command: str | list[str], event: str) -> tuple[str, ...]:
    return split_command(command, f"hook {event}") if isinstance(command, str) else tuple(command)
