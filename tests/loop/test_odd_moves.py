"""An agent's odd move is its attempt's outcome, never the run's end: a git repository made inside
the work tree, a build's worktree removed, plan.jsonl replaced by a symlink or deleted, the branch
switched, reset or detached. Each fails
that attempt with a verdict saying what happened, keeps the agent's files, and leaves the other
builds going. Serial and --parallel 2, real git and real agent processes (tests/loop/odd_agent.py)."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ralph.plan.records import Verdict
from tests.support.construct import add_tasks, assert_clean, construct, events
from tests.support.gitrepo import git

ODD_AGENT = Path(__file__).with_name("odd_agent.py")
AGENT = f"{shlex.quote(sys.executable)} {shlex.quote(str(ODD_AGENT))}"
MODES = pytest.mark.parametrize("parallel", ["1", "2"], ids=["serial", "parallel"])
# The default (--parallel 4) builds in worktrees: that mode stays in `make test`; the serial one of
# each move runs with the slow suites (`make e2e`, which CI runs too), to keep `make test` short.
DEFAULT_MODE_FAST = pytest.mark.parametrize(
    "parallel", [pytest.param("1", id="serial", marks=pytest.mark.slow), pytest.param("2", id="parallel")]
)


def first_fast(*moves: str) -> list:
    """Moves of one kind (the same verdict, the same handling): the first runs in `make test`, the
    others with the slow suites; each is a whole construct run, about 1.4 s of CPU."""
    return [pytest.param(move, marks=[pytest.mark.slow] * (n > 0)) for n, move in enumerate(moves)]


LOGS = Path("build") / "ralph-logs"


@pytest.fixture
def project(app_repo: Callable[[str], Path]) -> Path:
    return app_repo("# App\n\nParts that can be built side by side.\n")


def run_odd(project: Path, move: str, parallel: str, *flags: str) -> tuple[str, str]:
    """The odd task and a plain sibling, built to the end; their ids."""
    odd, plain = add_tasks(project, f"Odd {move}", "Plain")
    done = construct(project, "--parallel", parallel, "--max-iterations", "6", *flags, agent=AGENT)
    assert done.returncode == 0, done.stderr
    assert (project.parent / "agent-state" / f"{odd}.odd").exists(), "the agent made its move"
    return odd, plain


def verdicts(project: Path, task_id: str) -> list[str]:
    return [e["verdict"] for e in events(project) if e["event"] == "build_failed" and e["item"] == task_id]


def builds(project: Path, task_id: str) -> int:
    return int((project.parent / "agent-state" / f"build-{task_id}").read_text())


def assert_sibling_untouched(project: Path, plain: str) -> None:
    """The plain task was built once, never failed, and is accepted."""
    assert verdicts(project, plain) == []
    assert builds(project, plain) == 1
    assert "accepted" in git(project, "log", "--format=%s", "--grep", plain)


@pytest.mark.slow
@MODES
@pytest.mark.parametrize("move", first_fast("[nested-repo]", "[nested-uncommitted]"))
def test_a_nested_repository_fails_the_attempt_and_its_files_are_committed_as_files(project, move, parallel):
    odd, plain = run_odd(project, move, parallel)

    assert verdicts(project, odd) == [Verdict.NESTED_REPOSITORY]
    # The files are plain files of the repository, never a gitlink with its content in no commit.
    committed = git(project, "ls-tree", "-r", "HEAD", "nested").splitlines()
    assert [line.split()[:2] for line in committed] == [["100644", "blob"]] * 2
    assert (project / "nested" / "code.txt").read_bytes() == b"nested work\n"
    assert (project / "nested" / "inner" / "deeper.txt").read_bytes() == b"deeper work\n"
    assert not (project / "nested" / ".git").exists() and not (project / "nested" / "inner" / ".git").exists()
    assert git(project, "ls-tree", "HEAD", "loop-link").split()[0] == "120000"  # a symlink, left as one
    kept = [path for path in (project / LOGS).glob(f"*build-{odd}*.nested") if path.is_dir()]
    assert len(kept) == 1, "its .git is kept beside the attempt's log"
    nested_git = kept[0] / "nested" / ".git"
    assert (nested_git / "HEAD").is_file() and (kept[0] / "nested" / "inner" / ".git" / "HEAD").is_file()
    if move == "[nested-repo]":  # its history goes with it
        assert git(project, "--git-dir", str(nested_git), "log", "--format=%s").strip() == "nested"
    assert_sibling_untouched(project, plain)
    assert_clean(project)


@pytest.mark.slow
@DEFAULT_MODE_FAST
def test_a_nested_repository_committed_by_the_agent_is_undone_and_kept_as_files(project, parallel):
    odd, plain = run_odd(project, "[nested-gitlink]", parallel)

    assert verdicts(project, odd) == [Verdict.PERMISSION_VIOLATION]  # it committed
    [patch] = (project / LOGS).glob(f"*build-{odd}*.patch")
    assert b"+nested work" in patch.read_bytes(), "its files are in the patch, as files"
    assert b"+deeper work" in patch.read_bytes()
    assert b"Subproject commit" not in patch.read_bytes()
    [kept] = (project / LOGS).glob(f"*build-{odd}*.nested")
    assert git(project, "--git-dir", str(kept / "nested" / ".git"), "log", "--format=%s").strip() == "nested"
    assert git(project, "ls-tree", "-r", "HEAD", "nested") == ""  # the retry did without it
    assert_sibling_untouched(project, plain)
    assert_clean(project)


@pytest.mark.slow
@DEFAULT_MODE_FAST
@pytest.mark.parametrize("move", first_fast("[plan-symlink]", "[plan-folder]"))
def test_a_plan_replaced_by_a_link_or_folder_fails_the_attempt_and_the_run_goes_on(project, move, parallel):
    odd, plain = run_odd(project, move, parallel)

    assert verdicts(project, odd) == [Verdict.PLAN_REPLACED]
    [kept] = (project / LOGS).glob(f"*build-{odd}*.plan.jsonl.replaced")  # as it was, beside the log
    if move == "[plan-symlink]":
        assert kept.is_symlink()
    else:
        assert (kept / "notes.txt").read_text() == "the agent's notes\n"
    assert (project / "plan.jsonl").is_file() and not (project / "plan.jsonl").is_symlink()
    assert_sibling_untouched(project, plain)
    assert_clean(project)


@pytest.mark.slow
@DEFAULT_MODE_FAST
def test_a_deleted_plan_fails_the_attempt_as_missing(project, parallel):
    odd, plain = run_odd(project, "[plan-missing]", parallel)

    assert verdicts(project, odd) == [Verdict.PLAN_MISSING]
    assert_sibling_untouched(project, plain)
    assert_clean(project)


@DEFAULT_MODE_FAST
@pytest.mark.parametrize("move", first_fast("[switch-branch]", "[reset-back]", "[detach]"))
def test_a_build_that_moves_its_branch_fails_the_attempt_and_the_branch_is_put_back(project, move, parallel):
    """Switching to a branch of its own, resetting the branch behind where it started, detaching
    HEAD: a change to git's state outside the task's files. The attempt fails, the work tree goes
    back to the loop's branch, the retry builds the task, and the branch the agent made stays
    (it is not ralph's to delete)."""
    before = git(project, "rev-parse", "HEAD").strip()
    odd, plain = run_odd(project, move, parallel)

    assert verdicts(project, odd) == [Verdict.PERMISSION_VIOLATION]
    assert git(project, "branch", "--show-current").strip() == "main"
    assert git(project, "merge-base", "--is-ancestor", before, "HEAD") == ""  # nothing of it lost
    assert "accepted" in git(project, "log", "--format=%s", "--grep", odd)
    assert (git(project, "branch", "--list", "agent-side") != "") == (move == "[switch-branch]")
    assert_sibling_untouched(project, plain)
    assert_clean(project)


# The same move's other two tests stay in `make test`: at the last attempt (the verdict, the task
# set aside and decomposed, the sibling untouched) and with its .git link unlinked (the verdict, the
# run going on to the end, no worktree left).
@pytest.mark.slow
def test_a_build_that_removes_its_worktree_fails_alone(project):
    odd, plain = run_odd(project, "[remove-worktree]", "2")

    assert verdicts(project, odd) == [Verdict.WORKTREE_REMOVED]
    assert builds(project, odd) == 1  # the attempt after the removal is the fake agent's own build
    assert_sibling_untouched(project, plain)
    worktrees = git(project, "worktree", "list", "--porcelain").splitlines()
    assert [line for line in worktrees if line.startswith("worktree ")] == [f"worktree {project}"]
    assert git(project, "branch", "--list", "ralph/*") == ""
    assert_clean(project)


@pytest.mark.slow
@DEFAULT_MODE_FAST
def test_a_verifier_that_removes_its_checkout_gives_no_verdict_and_the_run_goes_on(project, parallel):
    odd, plain = add_tasks(project, "Odd [verify-removes-checkout]", "Plain")
    done = construct(project, "--parallel", parallel, "--max-iterations", "6", agent=AGENT)
    assert done.returncode == 0, done.stderr
    assert (project.parent / "agent-state" / f"{odd}.odd-verify").exists(), "the verifier made its move"

    violations = [e for e in events(project) if e["event"] == "permission_violation"]
    assert [(e["items"], e["did"]) for e in violations] == [([odd], ["removed its checkout"])]
    assert "accepted" in git(project, "log", "--format=%s", "--grep", odd)  # by the next VERIFY
    assert_sibling_untouched(project, plain)
    worktrees = git(project, "worktree", "list", "--porcelain").splitlines()
    assert [line for line in worktrees if line.startswith("worktree ")] == [f"worktree {project}"]
    assert_clean(project)


def test_a_removed_worktree_at_the_last_attempt_sets_the_task_aside_for_decompose(project):
    odd, plain = add_tasks(project, "Odd [remove-worktree]", "Plain")
    flags = ("--parallel", "2", "--max-attempts", "1", "--max-iterations", "1")
    done = construct(project, *flags, agent=AGENT)
    assert done.returncode == 3, done.stderr  # the iteration limit, after DECOMPOSE split the task

    assert verdicts(project, odd) == [Verdict.WORKTREE_REMOVED]
    killed = [e for e in events(project) if e["event"] == "task_killed" and e["item"] == odd]
    assert [e["kill_reason"] for e in killed] == ["doom_loop"]
    assert f"ralph(decompose): {odd} ->" in git(project, "log", "--format=%s")
    assert_sibling_untouched(project, plain)


@pytest.mark.slow
def test_a_build_that_unlinks_its_worktree_fails_alone_and_its_folder_is_kept(project):
    odd, plain = run_odd(project, "[unlink-worktree]", "2")

    assert verdicts(project, odd) == [Verdict.WORKTREE_REMOVED]
    [kept] = (project / LOGS).glob(f"*build-{odd}*.worktree")
    assert (kept / "work" / f"{odd}.txt").read_text().startswith("ok"), "the agent's files are kept"
    assert (kept / ".git").is_dir()  # the repository it made in place of the link
    assert_sibling_untouched(project, plain)
    worktrees = git(project, "worktree", "list", "--porcelain").splitlines()
    assert [line for line in worktrees if line.startswith("worktree ")] == [f"worktree {project}"]
    assert_clean(project)


LATIN1_BEFORE = "caf\xe9 cr\xe8me\n".encode("latin-1")
LATIN1_AFTER = "caf\xe9 cr\xe8me br\xfbl\xe9e\n".encode("latin-1")  # what odd_agent.py writes
BINARY = bytes(range(256)) * 4


@pytest.mark.slow
@DEFAULT_MODE_FAST
def test_changes_set_aside_as_a_patch_are_bytes_that_git_apply_takes_back(project, parallel):
    (project / "menu.txt").write_bytes(LATIN1_BEFORE)
    git(project, "add", "menu.txt")
    git(project, "commit", "-qm", "a Latin-1 file")
    odd, _ = add_tasks(project, "Odd [not-utf8] [gate-always-fails]", "Plain")
    flags = ("--parallel", parallel, "--max-attempts", "1", "--max-iterations", "1")
    done = construct(project, *flags, agent=AGENT)
    assert done.returncode == 3, done.stderr  # the iteration limit, after DECOMPOSE split the task
    assert (project / "menu.txt").read_bytes() == LATIN1_BEFORE, "the killed build's changes are undone"
    # Beside a running build the first failure is set aside uncounted (stale-*.patch) and the task
    # built again from the new HEAD; the first patch is the one with the agent's move.
    patch = min((project / LOGS).glob(f"*-{odd}.patch"), key=lambda path: path.stat().st_mtime_ns)

    git(project, "apply", str(patch))

    assert (project / "menu.txt").read_bytes() == LATIN1_AFTER
    assert (project / "blob.bin").read_bytes() == BINARY
