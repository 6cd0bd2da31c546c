"""ralph's CLI, imported once, for the tests' scripted agents: each `ralph(...)` call of an agent
(agent_kit.py) is sent here and run in a fork of this process, in the agent's folder, environment
and umask, with its standard streams, and the output and exit code go back. An agent's Python then imports
neither click nor ralph (about half of its start-up). A fork that sees its agent go (killed, say)
kills itself, as the agent's own command would have died with it.

One server per test process (tests/support/construct.py starts it); it ends when its stdin, a
pipe from that process, closes. Run as `python ralph_server.py SOCKET`: it prints "ready" once it
listens."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import time

import click

from ralph.cli.main import cli

HEADER = struct.Struct(">I")


def receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """One request: a length-prefixed JSON object, the agent's stdin, stdout and stderr passed along
    with it."""
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    while len(data) < HEADER.size or len(data) < HEADER.size + HEADER.unpack_from(data)[0]:
        more = conn.recv(1 << 16)
        if not more:
            raise EOFError("the agent went before its request was whole")
        data += more
    return json.loads(data[HEADER.size :]), fds


def send(conn: socket.socket, message: dict) -> None:
    body = json.dumps(message).encode()
    conn.sendall(HEADER.pack(len(body)) + body)


def die_with(conn: socket.socket) -> None:
    """The agent waits on this connection until the answer: its end means the agent died."""
    try:
        gone = conn.recv(1) == b""
    except OSError:
        gone = True
    if gone:
        os.kill(os.getpid(), signal.SIGKILL)


def run(request: dict) -> dict:
    """cli.main as a `ralph` process runs it: exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.main(request["args"], prog_name="ralph")
            code = 0
        except SystemExit as stop:
            if isinstance(stop.code, str):  # as a process exits on sys.exit(message): 1, the message said
                err.write(f"{stop.code}\n")
            code = 1 if isinstance(stop.code, str) else stop.code or 0
    return {"code": code, "out": out.getvalue(), "err": err.getvalue()}


def reap(*_: object) -> None:
    """Wait for the forks that ended: their CPU time then counts in this server's, and the server's
    in the test process's once it waits for the server (what `time make test` measures; forks
    the kernel reaped on its own would count nowhere)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def serve_one(conn: socket.socket) -> None:
    """In the fork: become the agent's command, run it, answer."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # its own children (git) are waited for by their runs
    request, fds = receive(conn)
    for number, fd in enumerate(fds):  # what git or anything else writes to them goes where the agent's would
        os.dup2(fd, number)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    os.umask(request["umask"])
    threading.Thread(target=die_with, args=(conn,), daemon=True).start()
    answer = run(request)
    # The agent's streams let go before it has its answer, as its own command's would have: ralph
    # reads the agent's output until every process holding it is gone.
    nothing = os.open(os.devnull, os.O_RDWR)
    for number in (0, 1, 2):
        os.dup2(nothing, number)
    send(conn, answer)


def warm() -> None:
    """What the agents' commands load lazily, loaded once here instead of in each fork."""
    context = click.Context(cli)
    for name in ("task", "issue", "query", "ask", "config"):
        cli.get_command(context, name)
    import ralph.store.git  # noqa: F401
    import ralph.usecases.reads  # noqa: F401
    import ralph.usecases.tasks  # noqa: F401


def main() -> None:
    path = sys.argv[1]
    # As a command's own Python process has them, whatever the test process ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, signal.SIG_DFL)
    warm()
    # What was loaded lives as long as the server: frozen, a fork's collections never walk it (nor,
    # touching each object's header, copy the pages it shares with the server).
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, reap)
    print("ready", flush=True)
    while True:
        ready, _, _ = select.select([listener, sys.stdin], [], [])
        if sys.stdin in ready and not os.read(0, 1):
            break  # the test process went
        if listener in ready:
            conn, _ = listener.accept()
            if os.fork() == 0:
                listener.close()
                try:
                    serve_one(conn)
                finally:
                    os._exit(0)
            conn.close()
    os.unlink(path)
    with contextlib.suppress(ChildProcessError):
        while True:  # the forks still answering: waited for, as above
            os.wait()


if __name__ == "__main__":
    main()
