"""Hooks for tests: scripts a config hook runs, what an APPEND hook received, and setting config
keys through the real CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support.construct import in_process

# Appends each event it gets on stdin to the file named by its argument, one line each.
APPEND = "import sys\nwith open(sys.argv[1], 'a') as out:\n    out.write(sys.stdin.read())\n"
# Writes its pid, then never ends (its timeout must stop it).
# The pid file appears whole or not at all: a test reads it as soon as it exists.
HANG = (
    "import os, sys, time\nopen(sys.argv[1] + '.part', 'w').write(str(os.getpid()))\n"
    "os.replace(sys.argv[1] + '.part', sys.argv[1])\ntime.sleep(120)\n"
)


def config_set(root: Path, key: str, value: object) -> None:
    text = value if isinstance(value, str) else json.dumps(value)
    done = in_process(["-C", str(root), "config", "set", key, text], dict(os.environ))
    assert done.returncode == 0, done.stderr


def script(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def received_events(received: Path, root: Path) -> tuple[list[dict], dict[str, list[dict]]]:
    """What an APPEND hook was given, in order and by event name; each event checked to carry the
    schema version, a time and the repository's root, as every hook's JSON does."""
    from ralph.text import SCHEMA_VERSION

    got = [json.loads(line) for line in received.read_text().splitlines()]
    assert {event["schema_version"] for event in got} == {SCHEMA_VERSION}
    assert all(event["time"].startswith("20") and event["root"] == str(root) for event in got)
    by_event: dict[str, list[dict]] = {}
    for event in got:
        by_event.setdefault(event["event"], []).append(event)
    return got, by_event
