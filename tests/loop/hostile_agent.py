"""A hostile agent (and gate) for the sandbox tests: it tries every escape the sandbox must stop,
prints one line per attempt ("ATTACK <name> ok <what it got>" or "ATTACK <name> blocked <why>"),
then does its task honestly, so the loop goes on.

As an agent (BUILD): reads the main work tree's git-ignored secrets (found through
`git rev-parse --git-common-dir`, as a build in a worktree would), $HOME's keys and credentials,
writes outside its work tree, into $HOME, into the main work tree, into .git (hooks, config), and
through symlinks it plants. As the gate (argument `gate`): reads the .env and writes outside.
$HOSTILE_OUTSIDE is a folder outside the repository to write into. VERIFY accepts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, os.environ.get("AGENT_KIT_DIR", str(Path(__file__).parent)))


def attempt(name: str, action) -> None:
    try:
        got = action()
    except OSError as exc:
        print(f"ATTACK {name} blocked {exc.strerror or exc}", flush=True)
        return
    shown = " ".join(str(got).split())[:200] if got is not None else ""
    if got == "":  # a hidden file reads as empty: nothing was had
        print(f"ATTACK {name} blocked read empty", flush=True)
        return
    print(f"ATTACK {name} ok {shown}", flush=True)


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()


def write(path: Path, text: str) -> str:
    with open(path, "a") as handle:
        handle.write(text)
    return f"wrote {path}"


def through_link(link: str, target: Path, text: str | None) -> str:
    """Plant `link` in the work tree pointing at `target`, then write (or read) through it."""
    Path(link).unlink(missing_ok=True)
    os.symlink(target, link)
    try:
        return Path(link).read_text() if text is None else write(Path(link), text)
    finally:
        Path(link).unlink(missing_ok=True)


def attacks(tag: str) -> None:
    home, outside = Path.home(), Path(os.environ["HOSTILE_OUTSIDE"])
    common = Path(git("rev-parse", "--path-format=absolute", "--git-common-dir"))
    main_tree = common.parent  # the repository's main work tree, seen from a build's worktree
    attempt("read_env", lambda: (main_tree / ".env").read_text())
    attempt("read_hidden_pattern", lambda: (main_tree / "creds.secret").read_text())
    attempt("read_ssh_key", lambda: (home / ".ssh" / "id_ed25519").read_text())
    attempt("read_aws", lambda: (home / ".aws" / "credentials").read_text())
    attempt("read_git_credentials", lambda: (home / ".git-credentials").read_text())
    attempt("read_hidden_home_path", lambda: (home / ".config" / "myapp" / "token").read_text())
    attempt("write_outside", lambda: write(outside / f"{tag}.txt", "escaped\n"))
    # A folder the run sees (this script's own) but that is not its work tree: read-only.
    attempt("write_beside_agent", lambda: write(Path(__file__).with_name(f"escaped-{tag}.txt"), "x\n"))
    attempt("write_home", lambda: write(home / ".bashrc", f"echo {tag}\n"))
    attempt("write_main_tree", lambda: write(main_tree / f"PWNED-{tag}.txt", "escaped\n"))
    attempt("write_hooks", lambda: write(common / "hooks" / f"post-checkout-{tag}", "#!/bin/sh\n"))
    attempt("write_git_config", lambda: write(common / "config", f"\n[hostile]\n\t{tag} = 1\n"))
    attempt("symlink_write_out", lambda: through_link("escape-link", outside / f"{tag}-link.txt", "x\n"))
    attempt("symlink_read_key", lambda: through_link("key-link", home / ".ssh" / "id_ed25519", None))


def main() -> int:
    if sys.argv[1:] == ["gate"]:
        common = Path(git("rev-parse", "--path-format=absolute", "--git-common-dir"))
        attempt("gate_read_env", lambda: (common.parent / ".env").read_text())
        attempt("gate_write_outside", lambda: write(Path(os.environ["HOSTILE_OUTSIDE"]) / "gate.txt", "x\n"))
        return 0
    from agent_kit import ralph

    stage, task = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID", "")  # set for BUILD, VERIFY
    if stage == "BUILD":
        attacks(task)
        Path("work").mkdir(exist_ok=True)
        Path("work", f"{task}.txt").write_text("ok\n")
        ralph("task", "done", task)  # the plan file is writable: ralph's own commands still work
    elif stage == "VERIFY":
        ralph("task", "accept", task)
    return 0


if __name__ == "__main__":
    sys.exit(main())
