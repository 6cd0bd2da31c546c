"""Run the demo: a new git repository with the example spec, then `ralph construct`. The
repository is kept (its path is printed) so that what ralph did can be looked at afterwards."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent


def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="ralph-demo-"))
    print(f"demo repository: {root}", flush=True)
    from ralph.store.programs import git_program

    git = [git_program(), "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True)
    for key, value in (("user.name", "ralph demo"), ("user.email", "demo@ralph.invalid")):
        subprocess.run([*git, "config", key, value], check=True)
    (root / "specs").mkdir()
    shutil.copy(HERE / "greeter.md", root / "specs" / "greeter.md")
    shutil.copy(HERE / "Makefile", root / "Makefile")
    # An example Python project ignores its bytecode, or its builds would commit it.
    (root / ".gitignore").write_text("__pycache__/\n")
    subprocess.run([sys.executable, "-m", "ralph", "-C", str(root), "init"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "Example project: the greeter spec"], check=True)
    agent = f"{shlex_quote(sys.executable)} -m ralph.demo.agent"
    command = [sys.executable, "-m", "ralph", "-C", str(root), "construct", "specs/greeter.md"]
    print(f"$ ralph construct specs/greeter.md --agent command --agent-cmd '{agent}'", flush=True)
    done = subprocess.run([*command, "--agent", "command", "--agent-cmd", agent])
    print("\n$ git log --oneline", flush=True)
    subprocess.run([*git, "--no-pager", "log", "--oneline"], check=True)
    print(
        "\nThe demo agent is a script, not a model: the token counts above are simulated"
        " (no model was called and nothing was spent)."
        f"\nThe repository is kept at {root}: look around (git log -p plan.jsonl), then rm -rf it.",
        flush=True,
    )
    return done.returncode


def shlex_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


if __name__ == "__main__":
    sys.exit(main())
