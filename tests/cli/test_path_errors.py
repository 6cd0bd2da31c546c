"""Issue 24, "every error is one line": each command that touches a path, run against a directory
where a file should be, a file where a directory should be, a missing parent, a read-only place
and a config.toml that is not UTF-8, exits 1 or 2 with one line on stderr naming the path: no
traceback, no crash log, and nothing in the repository changed."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import ralph_in_process
from tests.support.gitrepo import git
from tests.support.specs import checked_spec

AGENT = ("--agent", "command", "--agent-cmd", "true")
GATE = ("--gate", "")


def _user_config(root: Path) -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "ralph" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # the suite's own (tests/support/gitrepo.py): this test breaks it
    return path


def plan_is_a_directory(root: Path) -> Path:
    (root / "plan.jsonl").unlink()
    (root / "plan.jsonl").mkdir()
    return root / "plan.jsonl"


def user_config_is_a_directory(root: Path) -> Path:
    path = _user_config(root)
    path.mkdir()
    return path


def user_config_is_not_utf8(root: Path) -> Path:
    path = _user_config(root)
    path.write_bytes(b'agent = "caf\xe9"\n')  # Latin-1
    return path


def logs_folder_is_a_file(root: Path) -> Path:
    shutil.rmtree(root / "build")
    (root / "build").mkdir()
    (root / "build" / "ralph-logs").write_text("not a folder\n")
    return root / "build" / "ralph-logs"


def build_folder_is_a_file(root: Path) -> Path:
    shutil.rmtree(root / "build")
    (root / "build").write_text("not a folder\n")
    return root / "build"


def specs_folder_is_a_file(root: Path) -> Path:
    shutil.rmtree(root / "specs")
    (root / "specs").write_text("not a folder\n")
    return root / "specs"


def read_only(path: Path, request: pytest.FixtureRequest) -> None:
    """Made unwritable even for root, who ignores permissions: `chattr +i` (immutable) where the
    file system has it; a plain chmod for anyone else."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(mode & ~0o222)
        request.addfinalizer(lambda: path.chmod(mode))
        return
    if (
        shutil.which("chattr") is None
        or subprocess.run(["chattr", "+i", path], capture_output=True).returncode
    ):
        pytest.skip("running as root without `chattr +i` here: no place is read-only to root")
    request.addfinalizer(lambda: subprocess.run(["chattr", "-i", path], check=True))


def _repository_state(root: Path) -> tuple:
    """Every file and folder of the work tree (what it holds) and every ref: to show nothing moved."""
    tree = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if name.startswith((".git/", "build/ralph-logs/")) or name in (".git", "plan.jsonl.lock"):
            continue  # git's own; ralph's lock file (it stays, empty, by design) and logs
        tree[name] = path.read_bytes() if path.is_file() else None
    return tree, git(root, "for-each-ref"), git(root, "rev-parse", "HEAD")


@pytest.fixture
def project(repo: Path) -> Path:
    (repo / "specs" / "x.md").write_text(checked_spec("a spec"))
    git(repo, "add", "specs/x.md")
    git(repo, "commit", "-qm", "a spec")
    return repo


def _assert_one_line_naming(root: Path, args: tuple[str, ...], named: Path | str, codes=(1, 2)) -> None:
    before = _repository_state(root)
    done = ralph_in_process(root, *args)
    assert done.returncode in codes, (args, done.returncode, done.stderr)
    assert len(done.stderr.splitlines()) == 1, (args, done.stderr)
    assert str(named) in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
    assert "internal error" not in done.stderr
    assert _repository_state(root) == before, args
    assert not (Path(os.environ["XDG_STATE_HOME"]) / "ralph").exists()  # no crash log


PLAN_COMMANDS = [
    ("init",),
    ("task", "add", "--name", "x"),
    ("task", "list"),
    ("check",),
    ("status",),
    ("config", "list"),
    ("config", "set", "max_attempts", "4"),
    ("query", "next"),
    ("issue", "add", "a problem"),
    ("report",),
    ("construct", "--dry-run", *AGENT, "specs/x.md"),
    ("construct", *AGENT, *GATE, "specs/x.md"),
]


@pytest.mark.parametrize("args", PLAN_COMMANDS, ids=" ".join)
def test_a_directory_where_plan_jsonl_should_be(project, args):
    _assert_one_line_naming(project, args, plan_is_a_directory(project))


CONFIG_COMMANDS = [
    ("config", "list"),
    ("construct", "--dry-run", *AGENT, "specs/x.md"),
    ("construct", *AGENT, *GATE, "specs/x.md"),
    ("plan", *AGENT, "specs/x.md"),
]


@pytest.mark.parametrize("args", CONFIG_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("fault", [user_config_is_a_directory, user_config_is_not_utf8])
def test_a_broken_user_config(project, args, fault: Callable[[Path], Path]):
    _assert_one_line_naming(project, args, fault(project))


@pytest.mark.parametrize(
    "fault", [logs_folder_is_a_file, build_folder_is_a_file, specs_folder_is_a_file], ids=lambda f: f.__name__
)
def test_init_with_a_file_where_a_folder_should_be_changes_nothing(project, fault):
    _assert_one_line_naming(project, ("init",), fault(project))


@pytest.mark.parametrize(
    "args", [("construct", *AGENT, *GATE, "specs/x.md"), ("plan", *AGENT, "specs/x.md")], ids=" ".join
)
@pytest.mark.parametrize("fault", [logs_folder_is_a_file, build_folder_is_a_file], ids=lambda f: f.__name__)
def test_a_run_whose_log_folder_is_a_file_commits_nothing(project, args, fault):
    _assert_one_line_naming(project, args, fault(project))


def test_report_into_a_missing_folder_or_onto_a_file_that_refuses_writes(project, tmp_path):
    _assert_one_line_naming(
        project, ("report", "-o", str(tmp_path / "no" / "r.html")), tmp_path / "no" / "r.html"
    )
    if Path("/proc/version").exists():  # opens for writing, then the write fails (EIO): no filename
        _assert_one_line_naming(project, ("report", "-o", "/proc/version"), Path("/proc/version"))


def test_report_into_a_read_only_folder(project, tmp_path, request):
    folder = tmp_path / "out"
    folder.mkdir()
    read_only(folder, request)
    _assert_one_line_naming(project, ("report", "-o", str(folder / "r.html")), folder / "r.html")
    assert not list(folder.iterdir())


@pytest.mark.parametrize(
    "args",
    [
        ("task", "add", "--name", "x"),
        ("config", "set", "max_attempts", "4"),
        ("construct", *AGENT, *GATE, "specs/x.md"),
    ],
    ids=" ".join,
)
def test_a_read_only_repository_folder(project, args, request):
    read_only(project, request)
    # The lock file next to plan.jsonl is the first thing ralph would create there.
    _assert_one_line_naming(project, args, "plan.jsonl.lock")


@pytest.mark.parametrize(
    "args", [("construct", *AGENT, *GATE, "specs/x.md"), ("plan", *AGENT, "specs/x.md")], ids=" ".join
)
def test_a_read_only_log_folder_stops_the_run_before_it_commits(project, args, request):
    read_only(project / "build" / "ralph-logs", request)
    _assert_one_line_naming(project, args, project / "build" / "ralph-logs" / "events.jsonl")


def test_init_in_a_read_only_folder(bare_repo, request):
    git(bare_repo, "commit", "-q", "--allow-empty", "-m", "initial")
    read_only(bare_repo, request)
    _assert_one_line_naming(bare_repo, ("init",), bare_repo / "specs")


def test_an_os_error_naming_no_path_is_a_crash_with_its_log(project, monkeypatch):
    """What is not the environment's doing is a bug: exit 70 and the traceback in the crash log
    (before, an OS error ralph did not expect escaped as a traceback with exit 1)."""
    import ralph.usecases.reads

    def broken(*args, **kwargs):
        raise OSError(5, "Input/output error")  # no filename: nothing to name

    monkeypatch.setattr(ralph.usecases.reads, "tasks", broken)
    done = ralph_in_process(project, "task", "list")
    assert done.returncode == 70, done.stderr
    assert done.stderr.startswith("ralph: internal error: OSError: [Errno 5] Input/output error (traceback: ")
    logs = list((Path(os.environ["XDG_STATE_HOME"]) / "ralph").glob("crash-*.log"))
    assert len(logs) == 1 and "OSError" in logs[0].read_text()
