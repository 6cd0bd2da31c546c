"""The user's work and history come first: a state command never commits where git would lose the
commit, never writes a plan it could not commit, and keeps what HEAD says about plan.jsonl.
Each case runs the real CLI in a real repository: as a process where only a process shows it (another
user's file modes, bytes in argv), else through click's runner in the test's process."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import ralph_in_process
from tests.support.gitrepo import FAKE_GPG, git


def head_state(root: Path) -> tuple[str, bytes, str]:
    return (
        git(root, "rev-parse", "HEAD"),
        (root / "plan.jsonl").read_bytes(),
        git(root, "status", "--porcelain"),
    )


def conflicting_branches(root: Path) -> None:
    """main and `other` both change the same line of `file`."""
    (root / "file").write_text("base\n")
    git(root, "add", "file")
    git(root, "commit", "-qm", "base")
    git(root, "checkout", "-qb", "other")
    (root / "file").write_text("theirs\n")
    git(root, "commit", "-qam", "theirs")
    git(root, "checkout", "-q", "main")
    (root / "file").write_text("ours\n")
    git(root, "commit", "-qam", "ours")


def stop_in(root: Path, operation: str) -> None:
    conflicting_branches(root)
    commands = {
        "merge": ["merge", "other"],
        "rebase": ["rebase", "other"],
        "cherry-pick": ["cherry-pick", "other"],
        "revert": ["revert", "--no-edit", "HEAD"],
    }
    if operation == "revert":  # a revert that conflicts: revert an older change of the same line
        (root / "file").write_text("newer\n")
        git(root, "commit", "-qam", "newer")
        commands["revert"] = ["revert", "--no-edit", "HEAD~1"]
    done = subprocess.run(["git", *commands[operation]], cwd=root, capture_output=True, text=True)
    assert done.returncode != 0, f"the {operation} was expected to stop on a conflict"


@pytest.mark.parametrize("operation", ["merge", "rebase", "cherry-pick", "revert"])
def test_no_commit_while_git_is_stopped_in_an_operation(repo, operation):
    stop_in(repo, operation)
    before = head_state(repo)
    done = ralph_in_process(repo, "task", "add", "--name", "During the operation")
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.splitlines()) == 1 and f"a {operation} is in progress" in done.stderr
    assert head_state(repo) == before  # nothing written, nothing committed, the index as it was
    written = ralph_in_process(repo, "task", "add", "--name", "Written only", "--no-commit")
    assert written.returncode == 0, written.stderr
    assert b"Written only" in (repo / "plan.jsonl").read_bytes()
    assert git(repo, "rev-parse", "HEAD") == before[0]


@pytest.mark.parametrize("command", [("task", "add", "--name", "On no branch"), ("init",)])
def test_no_commit_on_a_detached_head(repo, command):
    """A commit on a detached HEAD belongs to no branch: the next checkout leaves it behind.
    construct refuses one; so does every state command that would commit (--no-commit writes)."""
    git(repo, "checkout", "-q", "--detach")
    if command == ("init",):
        (repo / ".gitattributes").unlink()  # something for init to commit
    before = head_state(repo)
    done = ralph_in_process(repo, *command)
    assert done.returncode == 1, done.stderr
    assert (
        done.stderr
        == "ralph: HEAD is detached: check out a branch for ralph to commit on, or pass --no-commit\n"
    )
    assert head_state(repo) == before
    written = ralph_in_process(repo, *command, "--no-commit")
    assert written.returncode == 0, written.stderr
    assert git(repo, "rev-parse", "HEAD") == before[0]


def test_the_tests_crash_logs_go_to_a_temporary_folder_not_the_developers(tmp_path_factory):
    # tests/conftest.py points XDG_STATE_HOME into the test's temp folders (a crash a test causes
    # on purpose went to ~/.local/state/ralph).
    assert Path(os.environ["XDG_STATE_HOME"]).is_relative_to(tmp_path_factory.getbasetemp())


def test_a_stale_index_lock_changes_nothing_and_says_so(repo):
    (repo / ".git" / "index.lock").write_bytes(b"")
    before = head_state(repo)
    done = ralph_in_process(repo, "task", "add", "--name", "Blocked")
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1
    assert "index.lock" in done.stderr and "Nothing was changed" in done.stderr
    assert head_state(repo) == before
    (repo / ".git" / "index.lock").unlink()
    assert ralph_in_process(repo, "task", "add", "--name", "Now").returncode == 0
    assert git(repo, "status", "--porcelain") == ""  # HEAD and index moved together


def test_without_a_git_identity_the_plan_is_not_written(repo, monkeypatch):
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(key)
    git(repo, "config", "user.useConfigOnly", "true")  # no identity guessed from the host name
    before = head_state(repo)
    done = ralph_in_process(repo, "task", "add", "--name", "Nobody")
    assert done.returncode == 1 and "git needs an identity" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert head_state(repo) == before


def test_an_executable_plan_keeps_its_mode(repo):
    (repo / "plan.jsonl").chmod(0o755)
    git(repo, "add", "plan.jsonl")
    git(repo, "commit", "-qm", "plan is executable")
    assert ralph_in_process(repo, "task", "add", "--name", "Mode").returncode == 0
    assert git(repo, "ls-tree", "HEAD", "plan.jsonl").startswith("100755 ")
    assert git(repo, "status", "--porcelain") == ""
    assert os.stat(repo / "plan.jsonl").st_mode & 0o777 == 0o755


def test_a_linked_plan_is_refused_and_stays_a_link(repo):
    (repo / "data").mkdir()
    (repo / "plan.jsonl").rename(repo / "data" / "plan.jsonl")
    (repo / "plan.jsonl").symlink_to(Path("data") / "plan.jsonl")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "plan lives in data/")
    before = head_state(repo)
    done = ralph_in_process(repo, "task", "add", "--name", "Through the link")
    assert done.returncode == 1 and "symbolic link" in done.stderr and len(done.stderr.splitlines()) == 1
    assert (repo / "plan.jsonl").is_symlink() and head_state(repo) == before


@pytest.mark.parametrize(
    "hand_edit",
    [b'{"t": "task", "id": "t-handed", "name": "typed by hand"}\n',
     b'<<<<<<< HEAD\n{"t": "task", "id": "t-ours00", "name": "a"}\n=======\n>>>>>>> theirs\n'],
    ids=["an uncommitted edit", "conflict markers"],
)  # fmt: skip
def test_init_never_commits_the_users_uncommitted_plan(repo, hand_edit):
    (repo / "plan.jsonl").write_bytes(hand_edit)
    (repo / "specs").rmdir()  # so init has something to create
    committed = git(repo, "show", "HEAD:plan.jsonl")
    assert ralph_in_process(repo, "init").returncode == 0
    assert (repo / "specs").is_dir()
    assert git(repo, "show", "HEAD:plan.jsonl") == committed
    assert (repo / "plan.jsonl").read_bytes() == hand_edit


@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf"])
def test_a_bad_lock_timeout_is_invalid_input(repo, monkeypatch, value):
    monkeypatch.setenv("RALPH_LOCK_TIMEOUT", value)
    before = head_state(repo)
    done = ralph_in_process(repo, "task", "add", "--name", "x")
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"ralph: RALPH_LOCK_TIMEOUT must be a number of seconds >= 0, not '{value}'"
    ]
    assert head_state(repo) == before


def test_a_directory_where_the_lock_goes_is_one_line(repo):
    (repo / "plan.jsonl.lock").mkdir()
    done = ralph_in_process(repo, "task", "add", "--name", "x")
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "cannot take the lock plan.jsonl.lock" in done.stderr and "internal error" not in done.stderr


NOBODY = 65534


class Unprivileged:
    """Runs the real CLI as a user that file modes bind. Root writes into read-only folders, so as
    root the command runs as nobody on a copy of the repository that nobody owns, with its own git
    config, HOME and crash-log folder. `setpriv` drops the privileges where it exists: it still
    reaches an interpreter under a folder only root may enter (pyenv's, in /root), where Popen's
    own user= fails to exec it. Skipped only where neither lets nobody run Python and ralph."""

    def __init__(self, repo: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch):
        import shutil

        self.prefix: list[str] = []
        self.kwargs: dict = {}
        if os.geteuid() == 0:
            shutil.copytree(repo, scratch / "repo", symlinks=True)
            config = scratch / "gitconfig"  # the test's own is in a folder only root may enter
            config.write_text(Path(os.environ["GIT_CONFIG_GLOBAL"]).read_text() + "[safe]\n\tdirectory = *\n")
            monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))  # root's git here accepts nobody's repo
            monkeypatch.setenv("HOME", str(scratch))
            # The tests' shared bytecode cache (PYTHONPYCACHEPREFIX) is root's: nobody's Python
            # took 0.35 s of CPU with it against 0.14 s without it, writing none (measured).
            monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
            monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
            repo = scratch / "repo"
            if shutil.which("setpriv"):
                self.prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
            else:
                self.kwargs = {"user": NOBODY, "group": NOBODY, "extra_groups": []}
            self.kwargs["cwd"] = scratch  # a folder nobody may enter
        self.root, self.crash_logs = repo, scratch / "state"
        self.crash_logs.mkdir()
        monkeypatch.setenv("XDG_STATE_HOME", str(self.crash_logs))
        if os.geteuid() == 0:
            for path in [scratch, *scratch.rglob("*")]:
                os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
            try:
                probe = self.run(sys.executable, "-c", "import os, ralph; assert os.geteuid() != 0")
            except OSError as exc:
                probe = subprocess.CompletedProcess([], 1, "", str(exc))
            if probe.returncode != 0:
                reason = (probe.stderr.strip().splitlines() or ["no reason given"])[-1]
                pytest.skip(f"running as root, and nobody cannot run this Python and ralph: {reason}")

    def run(self, *argv: str) -> subprocess.CompletedProcess:
        command = [*self.prefix, *argv]
        return subprocess.run(command, capture_output=True, text=True, env={**os.environ}, **self.kwargs)

    def __call__(self, *args: str) -> subprocess.CompletedProcess:
        return self.run(sys.executable, "-m", "ralph", "-C", str(self.root), *args)


@pytest.fixture
def unprivileged(repo: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch) -> Iterator[Unprivileged]:
    import tempfile

    # Not under tmp_path: pytest makes that folder private to the user running the tests.
    scratch = Path(tempfile.mkdtemp(prefix="ralph-unprivileged-"))
    try:
        yield Unprivileged(repo, scratch, monkeypatch)
    finally:
        import shutil

        for path in [scratch, *scratch.rglob("*")]:  # writable again, so the folder can go
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(scratch)


@pytest.mark.parametrize("read_only", ["plan.jsonl", "the folder"])
def test_a_read_only_plan_or_folder_is_one_line_and_changes_nothing(unprivileged, read_only):
    root = unprivileged.root
    (root / "plan.jsonl").chmod(0o444) if read_only == "plan.jsonl" else root.chmod(0o555)
    before = head_state(root)
    for args in (("task", "add", "--name", "x"), ("task", "add", "--name", "y", "--no-commit")):
        done = unprivileged(*args)
        assert done.returncode in (1, 2) and len(done.stderr.splitlines()) == 1, done.stderr
        assert "internal error" not in done.stderr and "Traceback" not in done.stderr
        assert head_state(root) == before
    assert not list(unprivileged.crash_logs.rglob("*"))  # no crash log was written
    if read_only == "plan.jsonl":
        assert "plan.jsonl is read-only (mode 444)" in done.stderr
    else:
        assert "cannot take the lock plan.jsonl.lock: Permission denied" in done.stderr


def test_a_repository_the_user_cannot_read_is_one_line_not_a_crash(unprivileged):
    git_dir = unprivileged.root / ".git"
    if os.geteuid() == 0:
        os.chown(git_dir, 0, 0)  # root's again: nobody may not enter it
    git_dir.chmod(0o700)
    try:
        for args in (("task", "add", "--name", "x"), ("status",)):
            done = unprivileged(*args)
            assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
            assert "Permission denied" in done.stderr and "internal error" not in done.stderr
        assert not list(unprivileged.crash_logs.rglob("*"))
    finally:
        git_dir.chmod(0o755)


def test_root_too_leaves_a_read_only_plan_alone(repo):
    # The atomic replace needs only the folder's permission; the plan's mode is the user's word.
    (repo / "plan.jsonl").chmod(0o444)
    before = head_state(repo)
    done = ralph_in_process(repo, "task", "add", "--name", "x")
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "plan.jsonl is read-only" in done.stderr and head_state(repo) == before


# `make test` has it with one process, not three, in
# test_a_text_argument_that_is_not_utf8_is_invalid_input_and_changes_nothing (bytes in argv once; the
# other two commands in process)
@pytest.mark.slow
def test_invalid_utf8_in_text_arguments_is_invalid_input_and_changes_nothing(repo):
    first = ralph_in_process(repo, "task", "add", "--name", "to reject", "--json")
    task_id = first.stdout.split('"id": "')[1].split('"')[0]
    assert ralph_in_process(repo, "task", "done", task_id).returncode == 0
    before = head_state(repo)
    bad = b"caf\xe9"  # Latin-1, not UTF-8
    for args in (
        [b"task", b"reject", task_id.encode(), bad],
        [b"task", b"add", b"--name", bad],
        [b"issue", b"add", bad],
    ):
        done = subprocess.run(
            [sys.executable.encode(), b"-m", b"ralph", b"-C", str(repo).encode(), *args], capture_output=True
        )
        assert done.returncode == 2, (args, done.stderr)
        assert b"is not valid UTF-8 text" in done.stderr and len(done.stderr.splitlines()) == 1
        assert head_state(repo) == before


def test_a_text_argument_that_is_not_utf8_is_invalid_input_and_changes_nothing(repo):
    """Bytes that are not UTF-8 on ralph's command line reach it as lone surrogates (Python's argv
    decoding, which only a process shows: one here) and are refused in one line, with exit 2,
    before anything changes. A reason and an issue run in process, given as argv decoding gives them."""
    task_id = _task_id(ralph_in_process(repo, "task", "add", "--name", "to reject", "--json"))
    assert ralph_in_process(repo, "task", "done", task_id).returncode == 0
    before = head_state(repo)
    bad = b"caf\xe9"  # Latin-1, not UTF-8
    ralph = [os.fsencode(arg) for arg in (sys.executable, "-m", "ralph", "-C", str(repo))]
    done = subprocess.run([*ralph, b"task", b"add", b"--name", bad], capture_output=True)
    assert done.returncode == 2, done.stderr
    assert b"is not valid UTF-8 text" in done.stderr and len(done.stderr.splitlines()) == 1
    assert head_state(repo) == before
    as_decoded = bad.decode("utf-8", "surrogateescape")  # what the process above was given
    for args in (("task", "reject", task_id, as_decoded), ("issue", "add", as_decoded)):
        refused = ralph_in_process(repo, *args)
        assert refused.returncode == 2, (args, refused.stderr)
        assert "is not valid UTF-8 text" in refused.stderr and len(refused.stderr.splitlines()) == 1
        assert head_state(repo) == before, args


def test_a_lone_surrogate_in_task_json_is_refused(repo):
    done = ralph_in_process(repo, "task", "add", r'{"name": "odd \ud800 name"}')
    assert done.returncode == 2 and "is not valid UTF-8 text" in done.stderr
    assert git(repo, "status", "--porcelain") == ""


def test_commits_are_signed_when_the_repository_asks(repo, tmp_path):
    gpg = tmp_path / "fake-gpg"
    gpg.write_text(FAKE_GPG)
    gpg.chmod(0o755)
    git(repo, "config", "commit.gpgsign", "true")
    git(repo, "config", "gpg.program", str(gpg))
    assert ralph_in_process(repo, "task", "add", "--name", "Signed").returncode == 0
    assert "gpgsig -----BEGIN PGP SIGNATURE-----" in git(repo, "cat-file", "commit", "HEAD")


def test_a_signature_that_fails_is_one_line_and_changes_nothing(repo, tmp_path):
    gpg = tmp_path / "broken-gpg"
    gpg.write_text("#!/bin/sh\necho 'gpg: signing failed: No secret key' >&2\nexit 2\n")
    gpg.chmod(0o755)
    git(repo, "config", "commit.gpgsign", "true")
    git(repo, "config", "gpg.program", str(gpg))
    before = head_state(repo)
    done = ralph_in_process(repo, "task", "add", "--name", "Unsigned")
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "gpg failed to sign" in done.stderr
    assert head_state(repo) == before


def _task_id(done: subprocess.CompletedProcess) -> str:
    return done.stdout.split('"id": "')[1].split('"')[0]


def test_an_empty_id_is_invalid_and_a_lone_id_is_not_a_reason(repo):
    first = _task_id(ralph_in_process(repo, "task", "add", "--name", "a", "--json"))
    second = _task_id(ralph_in_process(repo, "task", "add", "--name", "b", "--json"))
    ralph_in_process(repo, "task", "done", first)
    ralph_in_process(repo, "task", "done", second)
    before = head_state(repo)
    for args in (
        ("task", "done", ""),
        ("task", "accept", ""),
        ("task", "reject", "", "why"),
        ("task", "reject", second),
    ):
        done = ralph_in_process(repo, *args)
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, (args, done.stderr)
        assert head_state(repo) == before, args
    assert "give the reason too" in ralph_in_process(repo, "task", "reject", second).stderr


def test_conflicting_filters_and_json_with_name_are_refused(repo):
    assert ralph_in_process(repo, "query", "tasks", "--pending", "--done").returncode == 2
    assert ralph_in_process(repo, "task", "list", "--done", "--blocked").returncode == 2
    before = head_state(repo)
    mixed = ralph_in_process(repo, "task", "add", '{"name": "x"}', "--name", "y")
    assert mixed.returncode == 2 and "not both" in mixed.stderr and head_state(repo) == before


def test_a_lone_surrogate_in_a_hand_edit_is_printed_as_json_escapes(repo):
    (repo / "plan.jsonl").write_text('{"t": "task", "id": "t-aaaaaa", "name": "x", "notes": "\\ud800"}\n')
    for args in (("query", "tasks"), ("task", "list", "--json"), ("task", "show", "t-aaaaaa")):
        done = ralph_in_process(repo, *args)
        assert done.returncode == 0 and '"notes": "\\ud800"' in done.stdout, (args, done.stderr)


def test_the_crash_log_is_private_unpredictable_and_never_crashes(repo, tmp_path, monkeypatch):
    from ralph.usecases import reads
    from tests.support.cli import Ralph

    def broken(*args, **kwargs):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(reads, "status", broken)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    first = Ralph(repo)("status", code=70).stderr
    second = Ralph(repo)("status", code=70).stderr
    paths = [line.split("(traceback: ")[1].rstrip(")\n") for line in (first, second)]
    assert paths[0] != paths[1] and all(Path(p).parent == tmp_path / "state" / "ralph" for p in paths)
    assert all(
        os.stat(p).st_mode & 0o777 == 0o600 and "ZeroDivisionError" in Path(p).read_text() for p in paths
    )
    monkeypatch.setenv("XDG_STATE_HOME", "/proc/not-writable")
    unwritable = Ralph(repo)("status", code=70).stderr
    assert len(unwritable.splitlines()) == 1 and "traceback: not saved" in unwritable


def test_a_text_beyond_the_size_limit_is_invalid_input_and_changes_nothing(repo):
    done_id = "t-aaaaaa"
    (repo / "plan.jsonl").write_text(json.dumps({"t": "task", "id": done_id, "name": "x", "s": "d"}) + "\n")
    git(repo, "commit", "-qam", "a done task")
    before = head_state(repo)
    huge = json.dumps({"name": "n" * 140_000})  # beyond what one argument may hold: on stdin
    refused = [
        ralph_in_process(repo, "task", "add", "--stdin", input=huge),
        ralph_in_process(repo, "task", "add", "--name", "x", "--notes", "y" * 20_001),
        ralph_in_process(repo, "task", "reject", done_id, "r" * 20_001),
        ralph_in_process(repo, "issue", "add", "i" * 20_001),
    ]
    for done in refused:
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr[:300]
        assert "characters long; the limit is 20,000" in done.stderr
    assert head_state(repo) == before
    assert ralph_in_process(repo, "task", "add", "--name", "n" * 20_000).returncode == 0  # at the limit


def test_a_gitignore_that_is_not_utf8_is_kept_byte_for_byte(repo):
    latin1 = b"build/\n# caf\xe9 (Latin-1)\n"
    (repo / ".gitignore").write_bytes(latin1)
    git(repo, "commit", "-qam", "a Latin-1 .gitignore")
    (repo / "specs").rmdir()
    done = ralph_in_process(repo, "init")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    gitignore = (repo / ".gitignore").read_bytes()
    assert gitignore.startswith(latin1) and b"/plan.jsonl.lock\n" in gitignore
    assert git(repo, "status", "--porcelain") == ""  # ralph's lines were committed with it
    assert ralph_in_process(repo, "task", "add", "--name", "after").returncode == 0


def test_a_repeated_dependency_is_stored_once(repo):
    base = _task_id(ralph_in_process(repo, "task", "add", "--name", "base", "--json"))
    added = ralph_in_process(repo, "task", "add", "--name", "on top", "--deps", f"{base},{base}", "--json")
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["deps"] == [base]


READ_ONLY_COMMANDS = [  # one of each kind (the query subcommands share one read path)
    ("status",),
    ("check",),
    ("query", "next"),
    ("task", "list"),
    ("task", "show", "t-aaaaaa"),
    ("issue", "list"),
    ("agents",),
]


def test_the_read_only_commands_run_nothing_from_the_repository(repo, tmp_path):
    # A cloned repository whose config, gate, prompts and hooks all name a program of its own.
    ran = tmp_path / "repository-program-ran"
    program = repo / "program.sh"
    program.write_text(f'#!/bin/sh\necho "$0 $*" >> {shlex.quote(str(ran))}\n')
    program.chmod(0o755)
    config = {"t": "config", "agent": "command", "agent_cmd": [str(program)], "gate": [str(program)]}
    task = {"t": "task", "id": "t-aaaaaa", "name": "x"}
    issue = {"t": "issue", "id": "i-aaaaaa", "text": "y"}
    (repo / "plan.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (config, task, issue)))
    (repo / ".ralph" / "prompts").mkdir(parents=True)
    (repo / ".ralph" / "prompts" / "build.md").write_text("$(./program.sh)\n")
    for hook in ("pre-commit", "post-commit", "post-checkout", "reference-transaction", "post-index-change"):
        (repo / ".git" / "hooks" / hook).symlink_to(program)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a repository with programs of its own", "--no-verify")
    ran.unlink(missing_ok=True)  # the commit above ran its hooks; only ralph's runs count
    for args in READ_ONLY_COMMANDS:
        done = ralph_in_process(repo, *args)
        assert done.returncode == 0, (args, done.stderr)
        assert not ran.exists(), (args, ran.read_text())
