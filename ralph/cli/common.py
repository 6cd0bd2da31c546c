"""What every command shares: the group that turns ralph's errors into one line on stderr and
an exit code, finding the repository, printing JSON, the common options."""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

import click

from ralph.errors import EXIT_INTERNAL, EXIT_REFUSED, InvalidInput, RalphError
from ralph.text import plural, printable, terminal_text, versioned

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

# A group named without its subcommand shows its help (click 8.2+ raises this usage error for it).
_SHOWS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


# OS errors that say what the system refused, not what ralph got wrong: one line, no crash log.
_ENVIRONMENT_ERRNOS = frozenset(
    {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EMFILE, errno.ENFILE}
)


class RalphGroup(click.Group):
    """Turns ralph's errors into one line on stderr and the error's exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        _forget_deferred()
        try:
            result = super().invoke(ctx)
            _say_deferred()
            return result
        except RalphError as exc:
            _say_deferred()  # written before the error: the run commits it all the same
            click.echo(f"ralph: {printable(_redacted(str(exc)))}", err=True)
            ctx.exit(exc.exit_code)
        except click.UsageError as exc:  # a bad flag or value: one line too, not click's four
            if isinstance(exc, _SHOWS_HELP):
                raise
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx else ""
            click.echo(f"ralph: {printable(exc.format_message())}{hint}", err=True)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.Abort, KeyboardInterrupt):
            raise
        except BrokenPipeError:  # `ralph task list | head -1`: the reader has all it wanted
            _discard_stdout()
            ctx.exit(0)
        except Exception as exc:
            if is_environment_error(exc):
                # Not a bug in ralph: a path is not what it should be (a directory where a file
                # goes, a missing folder), or the system refused (permissions, a read-only disk).
                click.echo(f"ralph: {environment_message(exc)}", err=True)
                ctx.exit(EXIT_REFUSED)
            if os.environ.get("RALPH_DEBUG"):  # a bug: one line for the user, the traceback in a file
                raise
            where = _write_crash_log()
            message = printable(_redacted(f"{type(exc).__name__}: {exc}"))
            click.echo(f"ralph: internal error: {message} (traceback: {where})", err=True)
            ctx.exit(EXIT_INTERNAL)


def _forget_deferred() -> None:
    """What an earlier caller in this process deferred (a test, a library user) is not this
    command's to say."""
    import sys

    beside = sys.modules.get("ralph.store.beside")
    if beside is not None:
        beside.deferred.clear()


def _say_deferred() -> None:
    """A change a live `ralph construct` is to commit (ralph.store.beside): said once."""
    import sys

    beside = sys.modules.get("ralph.store.beside")  # not loaded: nothing was deferred
    if beside is not None and beside.deferred:
        pid = beside.deferred[-1]
        say(f"ralph: ralph construct (pid {pid}) runs in this work tree: it commits this change", err=True)
        beside.deferred.clear()


def _redacted(message: str) -> str:
    """An error can quote what an agent or a person wrote (a plan line, a value): no secret in it."""
    from ralph.secrets import redact

    return redact(message)


def say(text: object = "", err: bool = False, nl: bool = True) -> None:
    """Print for a person: every command's text output goes through here, so no control character
    from a plan, an agent or a file name drives the terminal (newlines and tabs are kept)."""
    click.echo(terminal_text(str(text)), err=err, nl=nl)


def is_environment_error(exc: BaseException) -> TypeGuard[OSError]:
    """An OS error about a named path (the user's, or ralph's own in the user's repository), or
    one the system gives whatever the path: the environment's doing, not a bug in ralph."""
    return isinstance(exc, OSError) and (bool(exc.filename) or exc.errno in _ENVIRONMENT_ERRNOS)


def environment_message(exc: OSError) -> str:
    """One line naming the path and what is wrong with it."""
    where = f" {exc.filename}" if exc.filename else ""
    return f"cannot use{printable(str(where))}: {printable(exc.strerror or str(exc))}"


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so the flush at exit does not fail on the closed pipe again
    (Python would print "Exception ignored ... BrokenPipeError" and exit 120)."""
    import sys

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # not a real file (a test's captured output): nothing to flush
        pass


def _write_crash_log() -> str:
    """The traceback, in a new file only this user can read, under a name nobody can predict (a
    fixed name in /tmp could be a symlink someone planted). Never raises: the report is one line."""
    import tempfile
    import traceback

    try:
        state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "ralph"
        state.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix="crash-", suffix=".log", dir=state)  # O_EXCL, 0600
        with os.fdopen(handle, "w", encoding="utf-8", errors="replace") as log:
            log.write(traceback.format_exc())
        return name
    except Exception as exc:  # noqa: BLE001 (the crash report itself must not crash)
        return f"not saved: {type(exc).__name__}"


def root_of(ctx: click.Context) -> Path:
    """The repository the command acts on: the work tree around -C (default: here)."""
    from ralph.store.root import find_root

    return find_root(Path(ctx.find_root().params.get("directory") or "."))


# json.dumps escapes C0 controls but writes DEL and the C1 controls (U+0080-U+009F, where U+009B is
# CSI) as they are; they can only occur inside strings, where \u escapes are the same JSON value.
_RAW_IN_JSON = re.compile(r"[\x7f-\x9f]")


def emit(data: object) -> None:
    """One JSON value on one line; no character in it can drive the terminal."""
    click.echo(json_line(data))


def json_line(data: object) -> str:
    """What `emit` prints, for a command that prints many values at once. Every object printed
    carries `schema_version` (docs/json-output.md)."""
    if isinstance(data, dict):
        data = versioned(data)
    text = json.dumps(data, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a hand-edited line: keep it as JSON escapes
        text = json.dumps(data)
    return _RAW_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


no_commit_option = click.option("--no-commit", is_flag=True, help="Change plan.jsonl without committing it.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")


def current_task() -> str | None:
    """The task an agent started by `ralph construct` is working on."""
    return os.environ.get("RALPH_TASK_ID") or None


def task_or_current(task_id: str | None) -> str | None:
    """The task a command names: the argument, else $RALPH_TASK_ID; an empty one is an error (it
    used to mean "the next task" or "every done task")."""
    if task_id is not None and not task_id.strip():
        raise InvalidInput("the task id is empty")
    return task_id or current_task()


def commit_choice(no_commit: bool) -> bool | None:
    return False if no_commit else None  # None: as the config record says


# --- shell completion of ids ------------------------------------------------------------------


def _plan_ids(ctx: click.Context, kind: str, incomplete: str) -> list[CompletionItem]:
    """The ids of the plan's live records of this kind that start with `incomplete`. Completion
    runs on every Tab: it reads plan.jsonl leniently (a broken line is skipped, no lock, no git)
    and never fails, whatever the plan or the directory holds."""
    from click.shell_completion import CompletionItem

    try:
        root = root_of(ctx)
        found: list[CompletionItem] = []
        for raw in (root / "plan.jsonl").read_bytes().splitlines():
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if not (
                isinstance(record, dict) and record.get("t") == kind and isinstance(record.get("id"), str)
            ):
                continue
            if record["id"].startswith(incomplete) and record["id"].isprintable():
                label = record.get("name" if kind == "task" else "text")
                help_text = printable(label)[:80] if isinstance(label, str) else None
                found.append(CompletionItem(record["id"], help=help_text))
        return found
    except Exception:  # noqa: BLE001 (a completion that fails must offer nothing, not a traceback)
        return []


def task_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    return _plan_ids(ctx, "task", incomplete)


def issue_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    return _plan_ids(ctx, "issue", incomplete)


def agent_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """--agent on Tab: the adapters ralph has (`ralph agents`)."""
    from ralph.agents import ADAPTERS

    return [name for name in ADAPTERS if name.startswith(incomplete)]


def config_keys(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """A config KEY on Tab: every key the config record takes."""
    from ralph.plan.declared import CONFIG_KEYS

    return [key for key in CONFIG_KEYS if key.startswith(incomplete)]


def config_values(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """A config VALUE on Tab, where the key has a few: the agents for `agent`, true or false for a
    flag; nothing for the rest (a number or a command line is the person's own)."""
    from ralph.plan.declared import CONFIG_KEYS

    key = CONFIG_KEYS.get(ctx.params.get("key") or "")
    if ctx.params.get("key") == "agent":
        return agent_names(ctx, param, incomplete)
    if key is not None and key.kind == "flag":
        return [value for value in ("true", "false") if value.startswith(incomplete)]
    return []


def describe_cost(cost_usd: float | None, unknown_runs: int, why: bool = False) -> str:
    """ "$0.42", "$0.42 + 2 runs of unknown cost", or "unknown" when no run's cost is known, never
    $0. `why`: the reason too, said once in a report (its total), not in each of its rows."""
    if cost_usd is None or (unknown_runs and not cost_usd):
        reason = f" ({plural(unknown_runs, 'run')} with no reported cost and no price for the model)"
        return "unknown" + (reason if why and unknown_runs else "")
    return f"${cost_usd:.2f}" + (f" + {plural(unknown_runs, 'run')} of unknown cost" if unknown_runs else "")
