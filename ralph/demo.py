"""`make demo`: ralph's state commands in a throwaway git repository (no model account needed)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path


def _run(root: Path, *args: str) -> str:
    print(f"$ {' '.join(args)}")
    done = subprocess.run(args, cwd=root, capture_output=True, text=True)
    output = (done.stdout + done.stderr).rstrip()
    if output:
        print(output)
    return done.stdout


def main() -> int:
    ralph = [sys.executable, "-m", "ralph"]
    with tempfile.TemporaryDirectory(prefix="ralph-demo-") as folder:
        root = Path(folder)
        for args in (
            ["init", "-q"],
            ["config", "user.name", "ralph demo"],
            ["config", "user.email", "demo@ralph.invalid"],
        ):
            subprocess.run(["git", *args], cwd=root, check=True)
        _run(root, *ralph, "init")
        first = json.loads(
            _run(
                root,
                *ralph,
                "task",
                "add",
                "--json",
                json.dumps({"name": "Parse the config file", "accept": "bad input gives file:line"}),
            )
        )
        _run(
            root, *ralph, "task", "add", json.dumps({"name": "Add the --verbose flag", "deps": [first["id"]]})
        )
        _run(root, *ralph, "task", "prioritize")
        _run(root, *ralph, "query", "next")
        _run(root, *ralph, "task", "done")
        _run(root, *ralph, "status")
        _run(root, "git", "log", "--oneline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
