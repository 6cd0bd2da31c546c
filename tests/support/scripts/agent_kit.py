"""What the tests' scripted agents share: `ralph(*args)` runs the real CLI in the agent's own
process, as `$RALPH_BIN args` would in a new one, and returns its output.

The suite's agents call ralph a few hundred times; a Python start-up for each was a fifth of the
fast suite's CPU time. An agent run with AGENT_RALPH=subprocess runs $RALPH_BIN as a real agent
would, which keeps that path covered (test_plans_builds_and_verifies_dependent_tasks_to_complete).
Scripts outside this folder find it through $AGENT_KIT_DIR, which the tests' construct() sets."""

from __future__ import annotations

import contextlib
import io
import os


def ralph(*args: str) -> str:
    # subprocess only where it is used: ralph's own commands never import it, and an agent's run
    # without it is some 3 ms of CPU shorter.
    if os.environ.get("AGENT_RALPH") == "subprocess":
        import shlex
        import subprocess

        command = shlex.split(os.environ["RALPH_BIN"])
        return subprocess.run([*command, *args], check=True, capture_output=True, text=True).stdout
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
    if code:
        import subprocess

        raise subprocess.CalledProcessError(code, ["ralph", *args], out.getvalue(), err.getvalue())
    return out.getvalue()
