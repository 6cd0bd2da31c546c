"""What the tests' scripted agents share: `ralph(*args)` runs the real CLI for the agent, as
`$RALPH_BIN args` would in a new process, and returns its output.

The suite's agents call ralph a few hundred times; a Python start-up for each was a fifth of the
fast suite's CPU time, and importing click and ralph's CLI in each agent half of the agent's. So
the commands run in a fork of a server that imported them once (ralph_server.py, whose socket
$AGENT_RALPH_SERVER names with its user and mount namespace) where the agent runs as that server's
user in its mount namespace; in the agent's own process elsewhere (a fenced agent: a server
outside its fence must not run its commands). An agent run with AGENT_RALPH=subprocess runs
$RALPH_BIN as a real agent would, which keeps that path covered
(test_plans_builds_and_verifies_dependent_tasks_to_complete). Scripts outside this folder find it
through $AGENT_KIT_DIR, which the tests' construct() sets."""

from __future__ import annotations

import contextlib
import io
import os


def ralph(*args: str, told: bool = True) -> str:
    """`told=False`: a look the scripted agent takes for its own choices, which a real agent never
    needs (its task is in its prompt): never through $RALPH_BIN, even with AGENT_RALPH=subprocess,
    whose runs then pay a Python start-up only for the commands an agent's prompt tells it to run."""
    # subprocess only where it is used: ralph's own commands never import it, and an agent's run
    # without it is some 3 ms of CPU shorter.
    if told and os.environ.get("AGENT_RALPH") == "subprocess":
        import shlex
        import subprocess

        command = shlex.split(os.environ["RALPH_BIN"])
        return subprocess.run([*command, *args], check=True, capture_output=True, text=True).stdout
    server = _server()
    code, out, err = _served(server, args) if server and os.path.exists(server) else _here(args)
    if code:
        import subprocess

        raise subprocess.CalledProcessError(code, ["ralph", *args], out, err)
    return out


def _server() -> str | None:
    """The server's socket, if this agent is where that server is: the same user, the same mount
    namespace (not inside a sandbox)."""
    named = os.environ.get("AGENT_RALPH_SERVER", "")
    path, _, owner = named.rpartition(":")
    if not path:
        return None
    uid, _, namespace = owner.partition("/")
    here = f"{os.getuid()}/{os.stat('/proc/self/ns/mnt').st_ino}"
    return path if here == f"{uid}/{namespace}" else None


def _served(path: str, args: tuple[str, ...]) -> tuple[int, str, str]:
    import json
    import socket
    import struct

    header = struct.Struct(">I")
    umask = os.umask(0)
    os.umask(umask)
    request = {"args": list(args), "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask}
    body = json.dumps(request).encode()
    payload = header.pack(len(body)) + body
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)
        sent = socket.send_fds(conn, [payload], [0, 1, 2])
        if sent < len(payload):
            # Only what is left: a send of nothing still fails (EPIPE) once the server's fork has
            # read the whole request, run it, answered and gone, which a loaded machine allows.
            conn.sendall(payload[sent:])
        data = b""
        while len(data) < header.size or len(data) < header.size + header.unpack_from(data)[0]:
            more = conn.recv(1 << 16)
            if not more:
                raise RuntimeError(f"ralph_server gave no answer to ralph {' '.join(args)}")
            data += more
    answer = json.loads(data[header.size :])
    return answer["code"], answer["out"], answer["err"]


def _here(args: tuple[str, ...]) -> tuple[int, str, str]:
    """The CLI in this process."""
    from ralph.cli.main import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.main(list(args), prog_name="ralph")
            code = 0
        except SystemExit as stop:
            if isinstance(stop.code, str):  # as a process exits on sys.exit(message): 1, the message said
                err.write(f"{stop.code}\n")
            code = 1 if isinstance(stop.code, str) else stop.code or 0
    return code, out.getvalue(), err.getvalue()
