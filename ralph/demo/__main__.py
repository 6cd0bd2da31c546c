"""Run the demo: a temporary git repository with the example spec, then `ralph construct`."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ralph-demo-") as folder:
        root = Path(folder)
        git = ["git", "-C", str(root)]
        subprocess.run([*git, "init", "-q"], check=True)
        for key, value in (("user.name", "ralph demo"), ("user.email", "demo@ralph.invalid")):
            subprocess.run([*git, "config", key, value], check=True)
        (root / "specs").mkdir()
        shutil.copy(HERE / "greeter.md", root / "specs" / "greeter.md")
        shutil.copy(HERE / "Makefile", root / "Makefile")
        subprocess.run([sys.executable, "-m", "ralph", "-C", str(root), "init"], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "Example project: the greeter spec"], check=True)
        agent = f"{shlex_quote(sys.executable)} -m ralph.demo.agent"
        command = [sys.executable, "-m", "ralph", "-C", str(root), "construct", "specs/greeter.md"]
        print(f"$ ralph construct specs/greeter.md --agent command --agent-cmd '{agent}'", flush=True)
        done = subprocess.run([*command, "--agent", "command", "--agent-cmd", agent])
        print("\n$ git log --oneline", flush=True)
        subprocess.run([*git, "--no-pager", "log", "--oneline"], check=True)
        return done.returncode


def shlex_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


if __name__ == "__main__":
    sys.exit(main())
