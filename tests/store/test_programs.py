"""ralph's own git calls run nothing an agent could have written (ralph.store.programs and the
hardened settings of ralph.store.git): not a `git` on a PATH entry inside the work tree or a relative
one, not a hook (a hooksPath in the work tree, as husky sets), not a submodule's fsmonitor through a
`.git` link an agent replaced, not an external diff or textconv program. Each attack writes a marker
outside the repository when it works; the controls show each one works against plain git."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from ralph.store import programs
from ralph.store.git import Repo
from tests.support.gitrepo import git, with_submodule

HOOKS = (
    *("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit"),
    *("post-checkout", "reference-transaction"),
)


def marker_script(path: Path, marker: Path) -> Path:
    """An executable that appends its name to `marker` (a file outside the repository)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "$0" >> {marker}\nexit 0\n')
    path.chmod(0o755)
    return path


def ran(marker: Path) -> list[str]:
    return marker.read_text().splitlines() if marker.exists() else []


def test_ralphs_git_is_never_one_inside_the_work_tree_or_on_a_relative_path(repo, tmp_path):
    """The project's .venv activated (its bin first on PATH), a `bin` and an empty entry: ralph's
    commit still runs the system's git."""
    marker = tmp_path / "ran"
    for folder in (".venv/bin", "bin"):
        marker_script(repo / folder / "git", marker)
    path = os.pathsep.join([str(repo / ".venv" / "bin"), "bin", "", os.environ["PATH"]])
    done = subprocess.run(
        [sys.executable, "-m", "ralph", "-C", str(repo), "task", "add", '{"name": "one"}'],
        cwd=repo, env={**os.environ, "PATH": path}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert ran(marker) == []
    assert "one" in git(repo, "show", "HEAD:plan.jsonl")  # committed, by the real git
    control = subprocess.run(["git", "--version"], cwd=repo, env={**os.environ, "PATH": path}, check=False)
    assert control.returncode == 0 and ran(marker)  # the plain lookup takes the planted one


def test_the_trusted_path_drops_work_tree_relative_and_empty_entries(tmp_path):
    tree = tmp_path / "tree"
    (tree / ".venv" / "bin").mkdir(parents=True)
    outside = tmp_path / "tools"
    outside.mkdir()
    link = tmp_path / "link-in"  # outside by its name, inside where it leads
    link.symlink_to(tree / ".venv" / "bin")
    programs.fence(tree)
    entries = [str(tree / ".venv" / "bin"), "bin", "", ".", str(link), str(outside), str(outside)]
    path = os.pathsep.join(entries)
    assert programs.trusted_path(path) == str(outside)


class NamingATreeMidLookup(str):
    """A path whose every comparison, as `fenced` looks it up, names one more work tree: what another
    of the loop's threads (a build's, a reviewer's) may do at that moment."""

    trees: Path
    named: int

    def __new__(cls, path: str, trees: Path) -> NamingATreeMidLookup:
        looked_up = super().__new__(cls, path)
        looked_up.trees, looked_up.named = trees, 0
        return looked_up

    def __eq__(self, other: object) -> bool:
        self.named += 1
        programs.fence(self.trees / f"tree-{self.named}")
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_a_work_tree_named_while_another_thread_looks_a_path_up_breaks_neither(tmp_path):
    """A lookup goes through the work trees known when it started; one named meanwhile is known to
    the next lookup (a review's four reviewers once ended the run: the lookup found the work trees
    changed under it)."""
    programs.fence(tmp_path / "first")
    looked_up = NamingATreeMidLookup(str(tmp_path / "elsewhere"), tmp_path)
    assert programs.fenced(looked_up) is False
    assert looked_up.named >= 1
    assert programs.fenced(os.path.realpath(tmp_path / f"tree-{looked_up.named}"))


def test_a_path_is_fenced_inside_a_work_tree_and_never_beside_one_that_shares_its_prefix(tmp_path):
    tree = tmp_path / "app"
    tree.mkdir()
    programs.fence(tree)
    real = os.path.realpath(tree)
    assert programs.fenced(real)
    assert programs.fenced(os.path.join(real, ".venv", "bin", "git"))
    assert not programs.fenced(real + "-other")  # /x/app-other is not inside /x/app
    assert not programs.fenced(os.path.join(real + "2", "bin", "git"))
    assert not programs.fenced(os.path.dirname(real))


def test_no_hook_runs_in_ralphs_git_calls(repo, tmp_path):
    """core.hooksPath in the work tree (husky's way): ralph's commits, worktrees and reverts run no
    hook from it, and `hook()` still finds the pre-commit hook ralph means to run (in the fence)."""
    marker = tmp_path / "ran"
    for name in HOOKS:
        marker_script(repo / ".husky" / name, marker)
    git(repo, "add", ".husky")
    git(repo, "commit", "-qm", "hooks")
    git(repo, "config", "core.hooksPath", ".husky")
    ours = Repo(repo)
    ours.index.commit_file("plan.jsonl", (repo / "plan.jsonl").read_bytes() + b"\n", "ralph: plan")
    (repo / "code.txt").write_text("built\n")
    ours.index.commit_paths({"code.txt"}, "ralph(build): code")
    (repo / "code.txt").write_text("changed\n")
    ours.changes.revert({"code.txt"})
    checkout = ours.worktrees.add(tmp_path / "wt", ours.head() or "")
    ours.worktrees.remove(checkout.root)
    assert ran(marker) == []
    assert ours.config.hook("pre-commit") == repo / ".husky" / "pre-commit"
    git(repo, "commit", "-q", "--allow-empty", "-m", "a person's commit")  # the control
    assert ran(marker)


def test_a_submodules_git_link_replaced_by_a_git_dir_with_an_fsmonitor_runs_nothing(repo, tmp_path):
    """An agent replaced lib/.git (a link into .git/modules) by a repository of its own whose config
    runs an fsmonitor: ralph's status, diffs and patches never go into the submodule."""
    marker = tmp_path / "ran"
    with_submodule(repo, tmp_path)
    (repo / "lib" / ".git").unlink()
    git(repo / "lib", "init", "-q")
    git(repo / "lib", "add", "lib.txt")
    git(repo / "lib", "commit", "-qm", "the agent's")
    monitor = marker_script(tmp_path / "monitor.sh", marker)
    git(repo / "lib", "config", "core.fsmonitor", str(monitor))
    (repo / "lib" / "lib.txt").write_text("changed in the submodule\n")
    (repo / "code.txt").write_text("built\n")
    ours = Repo(repo)
    # The gitlink shows as changed (its link leads to another commit: read from refs, running
    # nothing); what changed inside the submodule does not, as git never looks there.
    assert ours.changes.paths() == {"code.txt", "lib"}
    assert ours.changes.work_state()[2] == {"code.txt", "lib"}
    ours.changes.diff_stat({"code.txt", "lib"})
    ours.changes.save_patch({"code.txt"}, tmp_path / "kept.patch")
    assert ran(marker) == []
    git(repo, "status", "--porcelain")  # the control: plain git runs it
    assert ran(marker)


def test_no_external_diff_or_textconv_runs_in_ralphs_diffs(repo, tmp_path):
    marker = tmp_path / "ran"
    tool = marker_script(tmp_path / "tool.sh", marker)
    (repo / ".gitattributes").write_text("*.txt diff=agent\n")
    (repo / "code.txt").write_text("one\n")
    git(repo, "add", ".gitattributes", "code.txt")
    git(repo, "commit", "-qm", "attributes")
    git(repo, "config", "diff.agent.textconv", str(tool))
    git(repo, "config", "diff.external", str(tool))
    (repo / "code.txt").write_text("two\n")
    ours = Repo(repo)
    ours.git("diff", "HEAD", "--", "code.txt")
    ours.changes.diff_stat({"code.txt"})
    ours.changes.patch("HEAD", "--", "code.txt")
    assert ran(marker) == []
    git(repo, "diff", "HEAD")  # the control
    assert ran(marker)


def test_a_tool_runs_to_its_end_or_is_stopped_at_its_timeout(tmp_path):
    done = programs.run(["sh", "-c", "cat; pwd"], timeout_s=60, cwd=tmp_path, input="given\n")
    assert (done.returncode, done.stdout) == (0, f"given\n{tmp_path}\n")
    try:
        programs.run(["sleep", "60"], timeout_s=0.2, closed_stdin=True)
    except TimeoutError as exc:
        assert "timed out after 0.2 seconds" in str(exc)
    else:
        raise AssertionError("a tool outliving its timeout was not stopped")


def test_work_trees_fenced_while_other_threads_look_never_break_a_look(monkeypatch, tmp_path):
    """Parallel builds and verifiers fence their worktrees from their own threads while others
    look a program up: a look never fails (a dict that changed size under its loop ended a run
    with three parallel verifiers), and every fenced tree is known after."""
    monkeypatch.setattr(programs, "_FENCED", dict(programs._FENCED))  # this test's trees go after it
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    failures: list[BaseException] = []
    roots = [tmp_path / f"tree{n}" for n in range(1000)]
    done = threading.Event()

    def look() -> None:
        try:
            while not done.is_set():
                programs.fenced(str(tmp_path / "elsewhere"))
        except BaseException as exc:  # noqa: BLE001 - what the look raised is the finding
            failures.append(exc)

    lookers = [threading.Thread(target=look) for _ in range(2)]
    try:
        for thread in lookers:
            thread.start()
        for root in roots:
            programs.fence(root)
    finally:
        done.set()
        for thread in lookers:
            thread.join()
        sys.setswitchinterval(previous)
    assert failures == []
    assert all(programs.fenced(os.path.realpath(root)) for root in roots)
