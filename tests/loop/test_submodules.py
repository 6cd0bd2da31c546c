"""Submodules are fenced like the repository's own git directory: a BUILD that replaces a
submodule's `.git` link with a repository of its own (whose config runs an fsmonitor) breaks its
stage's rules; ralph puts the link back, keeps what the agent made beside the log, and neither
ralph's git nor the person's next `git status` runs the agent's program."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.support.construct import add_tasks, construct, events
from tests.support.gitrepo import git, with_submodule

# BUILD, once: lib/.git becomes a repository of the agent's whose core.fsmonitor is a program
# that writes $SUBMODULE_MARKER; then it does its task honestly. VERIFY accepts.
AGENT = """import os, subprocess, sys
sys.path.insert(0, os.environ["AGENT_KIT_DIR"])
from pathlib import Path
from agent_kit import ralph

stage, task = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID")
once = Path(os.environ["SUBMODULE_MARKER"] + ".attacked")
if stage == "BUILD":
    if not once.exists():
        once.write_text("")
        monitor = Path("lib", "monitor.sh")
        monitor.write_text("#!/bin/sh\\necho ran >> " + os.environ["SUBMODULE_MARKER"] + "\\nexit 1\\n")
        monitor.chmod(0o755)
        try:
            if os.environ.get("SUBMODULE_LINK_TO"):  # the folder becomes a link to one outside
                import shutil
                shutil.rmtree("lib")
                os.symlink(os.environ["SUBMODULE_LINK_TO"], "lib")
                raise SystemExit(print("ATTACK link_submodule_folder ok", flush=True))
            os.remove("lib/.git")
            for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "mine"],
                         ["config", "core.fsmonitor", str(monitor.resolve())]):
                subprocess.run(["git", "-C", "lib", *args], check=True, capture_output=True)
            print("ATTACK replace_submodule_link ok", flush=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"ATTACK replace_submodule_link blocked {exc}", flush=True)
    Path("work").mkdir(exist_ok=True)
    Path("work", f"{task}.txt").write_text("ok\\n")
    ralph("task", "done", task)
elif stage == "VERIFY":
    ralph("task", "accept", task)
"""


def hostile_agent(tmp_path: Path) -> str:
    agent = tmp_path / "submodule_agent.py"
    agent.write_text(AGENT)
    return f"{sys.executable} {agent}"


def test_an_agent_that_replaces_a_submodules_git_link_is_undone_and_its_program_never_runs(project, tmp_path):
    marker = tmp_path / "ran"
    link = with_submodule(project, tmp_path)
    add_tasks(project, "One")
    env = {"SUBMODULE_MARKER": str(marker)}
    done = construct(project, agent=hostile_agent(tmp_path), env=env)
    assert done.returncode == 0 and "COMPLETE" in done.stdout, done.stdout + done.stderr
    assert (tmp_path / "ran.attacked").exists()  # the attack was made (unfenced: it got through)
    violated = [e for e in events(project) if e["event"] == "permission_violation"]
    assert len(violated) == 1 and "changed the git link of submodule lib" in violated[0]["did"][0]
    assert (project / "lib" / ".git").read_bytes() == link  # put back
    kept = [e for e in events(project) if e["event"] == "submodule_link_kept"]
    assert [e["folder"] for e in kept] == ["lib"]
    assert (project / kept[0]["kept"] / "config").is_file()  # the agent's repository, beside the log
    git(project, "status", "--porcelain")  # the person's next look
    assert not marker.exists()


def test_a_submodule_folder_replaced_by_a_link_is_put_back_and_nothing_is_written_where_it_leads(
    project, tmp_path
):
    """Undoing never writes through the agent's link: the link moves beside the log, the folder
    and its `.git` link come back."""
    marker, elsewhere = tmp_path / "ran", tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = with_submodule(project, tmp_path)
    add_tasks(project, "One")
    env = {"SUBMODULE_MARKER": str(marker), "SUBMODULE_LINK_TO": str(elsewhere)}
    done = construct(project, agent=hostile_agent(tmp_path), env=env)
    assert done.returncode == 0 and "COMPLETE" in done.stdout, done.stdout + done.stderr
    violated = [e for e in events(project) if e["event"] == "permission_violation"]
    assert len(violated) == 1 and "changed the git link of submodule lib" in violated[0]["did"][0]
    assert list(elsewhere.iterdir()) == []
    assert not (project / "lib").is_symlink() and (project / "lib" / ".git").read_bytes() == link


def test_a_fifo_in_place_of_a_submodules_link_or_its_config_is_never_read(tmp_path):
    """Reading one would block ralph for good: it is told apart by what it is, unread."""
    from ralph.store.gitlinks import read_link

    (tmp_path / "lib").mkdir()
    os.mkfifo(tmp_path / "lib" / ".git")
    assert read_link(tmp_path, "lib").kind == "odd"
    (tmp_path / "lib" / ".git").unlink()
    (tmp_path / "lib" / ".git").write_text("gitdir: ../modules-of-mine\n")
    (tmp_path / "modules-of-mine").mkdir()
    os.mkfifo(tmp_path / "modules-of-mine" / "config")
    link = read_link(tmp_path, "lib")
    assert link.kind == "file" and link.config is None
