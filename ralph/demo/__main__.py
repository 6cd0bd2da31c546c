"""Run the demo: a new git repository with the example spec, then `ralph construct`. The
repository is kept (its path is printed) so that what ralph did can be looked at afterwards."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent


def main() -> int:
    if sys.argv[1:] == ["--draft"]:
        return draft()
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
    add_skill(root)
    subprocess.run([sys.executable, "-m", "ralph", "-C", str(root), "init"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "Example project: the greeter spec"], check=True)
    show_skills(root)
    agent = f"{shlex_quote(sys.executable)} -m ralph.demo.agent"
    # --review: the demo shows the review before COMPLETE whatever the person's own config says.
    command = [sys.executable, "-m", "ralph", "-C", str(root), "construct", "specs/greeter.md", "--review"]
    print(f"$ ralph construct specs/greeter.md --review --agent command --agent-cmd '{agent}'", flush=True)
    done = subprocess.run([*command, "--agent", "command", "--agent-cmd", agent])
    print("\n$ git log --oneline", flush=True)
    subprocess.run([*git, "--no-pager", "log", "--oneline"], check=True)
    show_build_words(root)
    print(
        "\nThe demo agent is a script, not a model: the token counts above are simulated"
        " (no model was called and nothing was spent)."
        f"\nThe repository is kept at {root}: look around (git log -p plan.jsonl), then rm -rf it.",
        flush=True,
    )
    print(on_path(), flush=True)
    return done.returncode


SKILL = ".ralph/skills/greeter-style/SKILL.md"


def add_skill(root: Path) -> None:
    """The example project keeps a skill for agents; ralph lists it in the prompt of each BUILD
    whose task's type it is for (a feature), and the demo agent reads it there."""
    (root / SKILL).parent.mkdir(parents=True)
    shutil.copy(HERE / "skill.md", root / SKILL)


def show_skills(root: Path) -> None:
    print("$ ralph skills", flush=True)
    subprocess.run([sys.executable, "-m", "ralph", "-C", str(root), "skills"], check=True)


def show_build_words(root: Path) -> None:
    """What the demo agent said in each BUILD (its logs hold its stream-json events): which skill
    it used, for which type of task."""
    print("\nThe demo agent's words in its BUILD logs (build/ralph-logs/*-build-*.log):", flush=True)
    for log in sorted((root / "build" / "ralph-logs").glob("ralph-*-build-*.log")):
        task = log.stem.split("-build-", 1)[1]
        for text in agent_texts(log):
            print(f"  {task}: {text}", flush=True)


def agent_texts(log: Path) -> list[str]:
    texts = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # ralph's own lines in the log
        if isinstance(event, dict) and event.get("type") == "assistant":
            texts += [part["text"] for part in event["message"]["content"] if part.get("type") == "text"]
    return texts


def draft() -> int:
    """The way to a first spec, as a person without a terminal takes it: the demo agent drafts
    specs/farewell.md from an idea and asks a question (ralph ends WAITING); the answer is given
    with `ralph answer`, the draft goes on; the draft is accepted (written and committed), then
    built. With a terminal, `ralph spec draft` asks the question and shows the draft itself."""
    root = Path(tempfile.mkdtemp(prefix="ralph-demo-draft-"))
    print(f"demo repository: {root}", flush=True)
    git = ["git", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True)
    for key, value in (("user.name", "ralph demo"), ("user.email", "demo@ralph.invalid")):
        subprocess.run([*git, "config", key, value], check=True)
    shutil.copy(HERE / "Makefile", root / "Makefile")
    (root / ".gitignore").write_text("__pycache__/\n")
    subprocess.run([sys.executable, "-m", "ralph", "-C", str(root), "init"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "Example project"], check=True)
    agent = f"{shlex_quote(sys.executable)} -m ralph.demo.agent"
    ralph = [sys.executable, "-m", "ralph", "-C", str(root)]

    def step(shown: str, *args: str) -> int:
        print(f"\n$ {shown}", flush=True)
        return subprocess.run([*ralph, *args], stdin=subprocess.DEVNULL).returncode

    idea = "a farewell function beside the greeter, with a test"
    flags = ["--agent", "command", "--agent-cmd", agent]
    step(
        f"ralph spec draft farewell '{idea}' --agent command --agent-cmd '{agent}'",
        "spec",
        "draft",
        "farewell",
        idea,
        *flags,
    )
    asked = subprocess.run([*ralph, "questions", "--json"], capture_output=True, text=True, check=True)
    question = json.loads(asked.stdout.splitlines()[0])["id"]
    step(f"ralph answer {question} Goodbye", "answer", question, "Goodbye")
    step("ralph spec draft farewell", "spec", "draft", "farewell")
    if step("ralph spec draft farewell --accept", "spec", "draft", "farewell", "--accept"):
        return 1
    done = step(
        f"ralph construct specs/farewell.md --agent command --agent-cmd '{agent}'",
        "construct", "specs/farewell.md", *flags,
    )  # fmt: skip
    print("\n$ git log --oneline", flush=True)
    subprocess.run([*git, "--no-pager", "log", "--oneline"], check=True)
    print(
        "\nThe demo agent is a script, not a model: no model was called and nothing was spent."
        f"\nThe repository is kept at {root}: look around (`git log -p specs/` shows the accepted"
        " spec and its questions), then rm -rf it.",
        flush=True,
    )
    print(on_path(), flush=True)
    return done


def on_path() -> str:
    """Whether the `ralph` beside this Python is the one a shell finds, and if not, the one line
    that makes it so: `make demo` installs ralph into .venv, which no shell has on its PATH."""
    folder = Path(sys.executable).parent  # a virtualenv's bin/, not where its python links to
    found = shutil.which("ralph")
    if found and Path(found).resolve() == (folder / "ralph").resolve():
        return f"`ralph` is on your PATH ({found})."
    if (folder / "activate").is_file():
        return f"`ralph` is installed in {folder}: to put it on your PATH, run: source {folder / 'activate'}"
    return f'`ralph` is installed in {folder}: to put it on your PATH, run: export PATH="{folder}:$PATH"'


def shlex_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


if __name__ == "__main__":
    sys.exit(main())
