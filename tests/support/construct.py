"""`ralph construct` from a test, with the scripted fake agent (scripts/fake_agent.py) that calls the
real `ralph` commands, and what the tests read afterwards: the plan, the journal, git's log.

A run the test waits for goes through the click app in the test's own process: the loop, its
agents, gates and git are the same, only ralph's own Python start-up is saved. Runs the test
signals, and tests about ralph as a program, start it as a real process."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from click.testing import CliRunner

from ralph.cli.main import cli
from ralph.loop.observe.journal import read_events
from tests.support.gitrepo import git
from tests.support.specs import as_checked

FAKE_AGENT = Path(__file__).parent / "scripts" / "fake_agent.py"
RALPH_SERVER = FAKE_AGENT.with_name("ralph_server.py")
# The gate of the builds: os, not pathlib, whose import was 8 of its 21 ms of CPU (most builds of the
# suite run it).
CHECK_WORK = """import os, sys
names = sorted(os.listdir("work")) if os.path.isdir("work") else []
bad = [n for n in names if n.endswith(".txt") and open(os.path.join("work", n)).read().startswith("FAIL")]
print("FAILED: " + " ".join(bad) if bad else "all work ok")
sys.exit(1 if bad else 0)
"""


def with_app_spec(repo: Path, spec: str) -> Path:
    """The repository with specs/app.md and the gate check_work.py committed."""
    (repo / "specs" / "app.md").write_text(as_checked(spec))  # the spec check is on, as a user has it
    (repo / "check_work.py").write_text(CHECK_WORK)
    git(repo, "add", "specs/app.md", "check_work.py")
    git(repo, "commit", "-qm", "the app spec and its gate")
    return repo


_started: list[subprocess.Popen] = []  # ralph runs started with wait=False, stopped after each test


def construct(
    root: Path,
    *flags: str,
    agent: str | None = None,
    wait: bool = True,
    env: dict | None = None,
    process: bool = False,
    python: str | None = None,
    **kwargs,
):
    """Runs `ralph construct` on the app spec with the fake agent: in this process when the test
    waits for it, else (wait=False, process=True, `python`: ralph run by another interpreter, or
    Popen arguments) as a real process."""
    agent = agent or f"{shlex.quote(sys.executable)} {shlex.quote(str(FAKE_AGENT))}"
    argv = [
        python or sys.executable, "-m", "ralph", "-C", str(root), "construct", "specs/app.md",
        "--agent", "command", "--agent-cmd", agent,
        "--gate", f"{shlex.quote(sys.executable)} check_work.py", "--timeout", "30s", *flags,
    ]  # fmt: skip
    env = {
        **os.environ,
        "FAKE_AGENT_STATE": str(root.parent / "agent-state"),
        "AGENT_KIT_DIR": str(FAKE_AGENT.parent),
        "RALPH_LOCK_TIMEOUT": "120",
        **(env or {}),
    }
    if wait and not process and not python and not kwargs:
        return in_process(argv[3:], {"AGENT_RALPH_SERVER": ralph_server(), **env})
    if not wait:
        kwargs.setdefault("preexec_fn", default_signals)
        kwargs = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kwargs}  # or a terminal's
        running = subprocess.Popen(argv, env=env, text=True, **kwargs)
        _started.append(running)
        return running
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, **kwargs)


_server: subprocess.Popen | None = None
# Where this process's server listens: the temporary folder as the session began (a test may point
# TMPDIR into its own folder, which goes when it ends).
SERVER_SOCKET = Path(tempfile.gettempdir()) / f"ralph-server-{os.getpid()}.sock"


def ralph_server() -> str:
    """$AGENT_RALPH_SERVER for the agents of the runs this test process waits for: the socket of a
    ralph_server.py started at the first such run, its user and its mount namespace
    (scripts/agent_kit.py). It ends with this process (its stdin closes). Runs the tests signal, and
    ralph as a process of its own, keep their agents' commands in the agents' own processes."""
    global _server
    if _server is None or _server.poll() is not None or not SERVER_SOCKET.exists():
        if _server is not None:
            _server.kill()
            _server.wait()
        SERVER_SOCKET.unlink(missing_ok=True)
        _server = subprocess.Popen(
            [sys.executable, str(RALPH_SERVER), str(SERVER_SOCKET)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd="/",
            start_new_session=True,  # no signal a test sends its own group reaches it
        )
        assert _server.stdout is not None and _server.stdout.readline() == "ready\n"
    return f"{SERVER_SOCKET}:{os.getuid()}/{os.stat('/proc/self/ns/mnt').st_ino}"


def stop_ralph_server() -> None:
    """The server ends (its stdin closes) and is waited for: its CPU time, and that of its forks,
    then counts in this process's children, as an agent's own commands did."""
    global _server
    if _server is not None:
        assert _server.stdin is not None
        _server.stdin.close()
        _server.wait()
        _server = None


def in_process(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """The real CLI through click's test runner, with exactly `env` as the environment."""
    runner = CliRunner()
    unset = {key: None for key in os.environ if key not in env}
    result = runner.invoke(cli, args, env={**unset, **env}, catch_exceptions=False)
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def default_signals() -> None:
    """In the ralph child, before exec: a parent that ignores SIGINT (a `(cmd &)` shell) or SIGHUP
    (nohup) passes SIG_IGN down, and ralph would then ignore the signals these tests send."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def stop_leftovers(tmp_path: Path) -> None:
    """Whatever a failing test left running is stopped: its ralph runs, and every agent and
    grandchild whose pid the fake agent recorded."""
    while _started:
        running = _started.pop()
        if running.poll() is None:
            running.kill()
        running.communicate()
    for pid_file in (tmp_path / "agent-state").glob("*.pid"):
        text = pid_file.read_text()
        if not text.isdigit():  # a gate's or hostile script's file cut short by a kill: no process
            continue
        pid = int(text)
        if ours(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def ours(pid: int) -> bool:
    """The pid is still a fake agent, a test's gate or their `sleep` (pids are reused)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            argv = cmdline.read().split(b"\0")
    except (FileNotFoundError, ProcessLookupError):
        return False
    scripts = (b"fake_agent.py", b"slow_gate.py")
    return alive(pid) and (argv[:2] == [b"sleep", b"600"] or any(arg.endswith(scripts) for arg in argv))


def wait_for(condition, what: str, timeout_s: float = 60) -> None:
    """Poll until `condition()` holds; the timeout only guards against a hang."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def gone(pid: int) -> bool:
    """The process has ended (a zombie counts: it runs nothing), polled for a while since an
    orphaned grandchild may still be on its way out."""
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def add_tasks(root: Path, *names: str, chain: bool = False) -> list[str]:
    from ralph.usecases import tasks

    ids: list[str] = []
    for name in names:
        item: dict[str, str | list[str]] = {"name": name, "accept": "work file says ok"}
        if chain and ids:
            item["deps"] = [ids[-1]]
        ids.append(tasks.add(root, [item])[0]["id"])
    return ids


def plan_records(root: Path, ref: str | None = None) -> list[dict]:
    text = git(root, "show", f"{ref}:plan.jsonl") if ref else (root / "plan.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def subjects(root: Path) -> list[str]:
    return git(root, "log", "--format=%s").splitlines()


def events(root: Path) -> list[dict]:
    return read_events(root / "build" / "ralph-logs" / "events.jsonl")


def assert_clean(root: Path) -> None:
    status = git(root, "status", "--porcelain").splitlines()
    assert status == [], status
    check = CliRunner().invoke(cli, ["-C", str(root), "check"], catch_exceptions=False)
    assert check.exit_code == 0, check.stderr


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


# The first BUILD run fails as Claude Code does on a 429 (its result event, exit 1); every other
# run is the fake agent's.
LIMITED_ONCE = """import json, os, pathlib, sys
flag = pathlib.Path(os.environ["FAKE_AGENT_STATE"]) / "limited-once"
if os.environ["RALPH_STAGE"] == "BUILD" and not flag.exists():
    flag.parent.mkdir(parents=True, exist_ok=True)
    flag.write_text("limited")
    result = {"type": "result", "subtype": "success", "is_error": True, "api_error_status": __STATUS__,
              "result": __MESSAGE__}
    print(json.dumps(result), flush=True)
    sys.exit(1)
sys.path.insert(0, os.environ["AGENT_KIT_DIR"])  # the fake agent in this process: no second start-up
import runpy
runpy.run_path(__FAKE__, run_name="__main__")
"""


def limited_once(tmp_path: Path, status: int, message: str) -> str:
    script = tmp_path / "limited_once.py"
    code = LIMITED_ONCE.replace("__STATUS__", str(status)).replace("__MESSAGE__", repr(message))
    script.write_text(code.replace("__FAKE__", repr(str(FAKE_AGENT))))
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
