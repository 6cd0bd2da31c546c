"""The transaction every plan change goes through: load under the lock, check, write, commit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ralph.errors import GitError, PlanInvalid
from ralph.store import validcache
from ralph.store.transaction import EARLIER_CHANGES_MESSAGE, restore_plan, transaction
from tests.support.gitrepo import git
from tests.support.locks import HOLDER


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def committed_plan(root: Path, commit: str = "HEAD") -> bytes:
    return subprocess.run(
        ["git", "show", f"{commit}:plan.jsonl"], cwd=root, check=True, capture_output=True
    ).stdout


def line(record: dict) -> bytes:
    return json.dumps(record).encode() + b"\n"


def task(task_id: str, **fields) -> bytes:
    return line({"t": "task", "id": task_id, "name": f"Task {task_id}", **fields})


@pytest.fixture
def planned(repo: Path) -> Path:
    """A repository whose committed plan holds two tasks, one of them hand-formatted."""
    (repo / "plan.jsonl").write_bytes(task("t-aaaaaa") + b'{"t":"task",  "id":"t-bbbbbb", "name":"B"}\n')
    git(repo, "commit", "-qam", "two tasks")
    return repo


def test_a_change_commits_plan_jsonl_alone_with_the_message(planned):
    (planned / "README").write_text("the user's unstaged edit\n")
    (planned / "staged.txt").write_text("the user's staged file\n")
    git(planned, "add", "staged.txt")
    status_before = git(planned, "status", "--porcelain")
    before = head(planned)

    with transaction(planned) as change:
        change.plan.add_tasks([{"id": "t-cccccc", "name": "C"}])
        change.message = "ralph: task add t-cccccc\n\ndetails"

    data = (planned / "plan.jsonl").read_bytes()
    assert data == committed_plan(planned)
    assert data.endswith(b'"id": "t-cccccc", "name": "C", "s": "p"}\n')
    assert change.commit == head(planned)
    assert git(planned, "rev-parse", "HEAD^").strip() == before
    assert git(planned, "show", "--name-only", "--format=", "HEAD").split() == ["plan.jsonl"]
    assert git(planned, "log", "-1", "--format=%B").strip() == (
        "ralph: task add t-cccccc\n\ndetails\n\n"  # and the operation, for a runner to replay
        'Ralph-Op: {"op":"add_tasks","args":[[{"id":"t-cccccc","name":"C"}]]}'
    )
    assert git(planned, "status", "--porcelain") == status_before  # plan.jsonl clean, the rest as it was
    assert validcache.known_valid(planned, data)


def test_an_exception_inside_leaves_the_file_and_history_as_they_were(planned):
    before, commit = (planned / "plan.jsonl").read_bytes(), head(planned)
    with pytest.raises(RuntimeError, match="changed my mind"), transaction(planned) as change:
        change.plan.add_tasks([{"name": "Never written"}])
        change.plan.done("t-aaaaaa")
        raise RuntimeError("changed my mind")
    assert (planned / "plan.jsonl").read_bytes() == before
    assert head(planned) == commit
    assert git(planned, "status", "--porcelain") == ""


def test_no_change_writes_and_commits_nothing(planned):
    commit = head(planned)
    with transaction(planned) as change:
        change.plan.tasks()
    assert change.commit is None
    assert head(planned) == commit


def test_commit_false_writes_without_committing(planned):
    commit = head(planned)
    with transaction(planned, commit=False) as change:
        change.plan.done("t-aaaaaa")
    assert change.commit is None
    assert head(planned) == commit
    assert b'"s": "d"' in (planned / "plan.jsonl").read_bytes()
    assert git(planned, "status", "--porcelain") == " M plan.jsonl\n"


@pytest.mark.parametrize("how", ["environment", "config"])
def test_ralph_commit_0_or_the_config_record_skips_the_commit(planned, monkeypatch, how):
    if how == "environment":
        monkeypatch.setenv("RALPH_COMMIT", "0")
    else:
        data = (planned / "plan.jsonl").read_bytes()
        (planned / "plan.jsonl").write_bytes(line({"t": "config", "commit": False}) + data)
        git(planned, "commit", "-qam", "no commits, please")
    commit = head(planned)
    with transaction(planned) as change:
        change.plan.done("t-aaaaaa")
    assert change.commit is None and head(planned) == commit
    assert b'"s": "d"' in (planned / "plan.jsonl").read_bytes()


def test_an_earlier_hand_edit_is_committed_first_on_its_own(planned):
    start = head(planned)
    hand_edited = (planned / "plan.jsonl").read_bytes() + task("t-dddddd")
    (planned / "plan.jsonl").write_bytes(hand_edited)

    with transaction(planned) as change:
        change.plan.done("t-dddddd")
        change.message = "ralph: task done t-dddddd"

    assert git(planned, "log", "--format=%s", f"{start}..HEAD").splitlines() == [
        "ralph: task done t-dddddd",
        EARLIER_CHANGES_MESSAGE,
    ]
    assert committed_plan(planned, "HEAD^") == hand_edited
    assert committed_plan(planned) == (planned / "plan.jsonl").read_bytes()
    assert git(planned, "status", "--porcelain") == ""


def test_fold_earlier_commits_the_hand_edit_with_the_change(planned):
    start = head(planned)
    (planned / "plan.jsonl").write_bytes((planned / "plan.jsonl").read_bytes() + task("t-dddddd"))

    with transaction(planned, fold_earlier=True) as change:
        change.plan.done("t-dddddd")
        change.message = "ralph: everything at once"

    assert git(planned, "log", "--format=%s", f"{start}..HEAD").splitlines() == ["ralph: everything at once"]
    assert committed_plan(planned) == (planned / "plan.jsonl").read_bytes()


def test_a_change_the_loader_would_refuse_raises_and_writes_nothing(planned):
    before, commit = (planned / "plan.jsonl").read_bytes(), head(planned)
    with pytest.raises(PlanInvalid, match="duplicate id t-aaaaaa"), transaction(planned) as change:
        second = change.plan.task_lines()[1]
        second.record["id"] = "t-aaaaaa"  # edited in place: no transition would allow this
        change.plan.doc.rewrite(second)
    assert (planned / "plan.jsonl").read_bytes() == before
    assert head(planned) == commit
    assert [p.name for p in planned.iterdir() if p.name.endswith(".tmp")] == []


def test_a_record_made_invalid_in_place_raises_and_writes_nothing(planned):
    before = (planned / "plan.jsonl").read_bytes()
    with pytest.raises(PlanInvalid, match="plan.jsonl:2"), transaction(planned) as change:
        second = change.plan.task_lines()[1]
        second.record["s"] = "finished"
        change.plan.doc.rewrite(second)
    assert (planned / "plan.jsonl").read_bytes() == before


def test_stale_temp_files_are_removed_under_the_lock(planned):
    stale = planned / ".plan.jsonl.99999.tmp"
    stale.write_bytes(b"left by a killed process")
    with transaction(planned) as change:
        change.plan.done("t-aaaaaa")
    assert not stale.exists()


def test_a_failed_commit_leaves_the_change_written_for_the_next_command_to_commit(planned):
    ref_lock = planned / ".git" / "refs" / "heads" / "main.lock"
    ref_lock.write_text("")  # another git process is updating the branch
    commit = head(planned)
    not_committed = "plan.jsonl is changed but not committed"
    with pytest.raises(GitError, match=not_committed), transaction(planned) as change:
        change.plan.done("t-aaaaaa")
    assert head(planned) == commit
    written = (planned / "plan.jsonl").read_bytes()
    assert b'"s": "d"' in written

    ref_lock.unlink()
    with transaction(planned) as change:
        change.plan.done("t-bbbbbb")
        change.message = "ralph: task done t-bbbbbb"
    assert git(planned, "log", "--format=%s", f"{commit}..HEAD").splitlines() == [
        "ralph: task done t-bbbbbb",
        EARLIER_CHANGES_MESSAGE,
    ]
    assert committed_plan(planned, "HEAD^") == written


def test_restore_plan_puts_the_bytes_back(planned):
    good = (planned / "plan.jsonl").read_bytes()
    (planned / "plan.jsonl").write_bytes(b"{broken by an agent\n")
    restore_plan(planned, good)
    assert (planned / "plan.jsonl").read_bytes() == good
    assert git(planned, "status", "--porcelain") == ""


def test_restore_plan_waits_for_the_lock(planned, monkeypatch):
    from ralph.errors import Busy

    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(planned)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == "locked\n"
        monkeypatch.setenv("RALPH_LOCK_TIMEOUT", "0.2")
        with pytest.raises(Busy):
            restore_plan(planned, b"")
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert (planned / "plan.jsonl").read_bytes() != b""


def test_what_a_change_wrote_is_what_the_next_read_and_change_see(planned):
    # The written plan is handed on to readers of its bytes; the next change loads its own.
    from ralph.store.reader import read_plan

    with transaction(planned) as change:
        change.plan.done("t-aaaaaa")
    read = read_plan(planned)
    assert read.find_task("t-aaaaaa") == {"t": "task", "id": "t-aaaaaa", "name": "Task t-aaaaaa", "s": "d"}
    assert read.doc.to_bytes() == (planned / "plan.jsonl").read_bytes()
    with transaction(planned) as again:
        assert again.plan is not read
        again.plan.done("t-bbbbbb")
    assert read.find_task("t-bbbbbb") == {
        "t": "task",
        "id": "t-bbbbbb",
        "name": "B",
    }  # the plan read before is not changed under it
    assert read_plan(planned).find_task("t-bbbbbb") == {"t": "task", "id": "t-bbbbbb", "name": "B", "s": "d"}


def many_tasks(count: int, first: int = 0) -> bytes:
    return b"".join(task(f"t-m{n:05d}", spec="specs/a.md") for n in range(first, first + count))


def test_a_long_plan_with_nothing_secret_in_it_is_found_clean_at_once(repo: Path, monkeypatch):
    from ralph.store import transaction as module

    (repo / "plan.jsonl").write_bytes(many_tasks(300))
    decoded: list[bytes] = []
    real = module._holds_no_secret

    def counted(raw: bytes, redact_fields) -> bool:
        decoded.append(raw)
        return real(raw, redact_fields)

    monkeypatch.setattr(module, "_holds_no_secret", counted)
    clean: set[bytes] = set()
    module.redact_plan(repo, clean)
    assert len(clean) == 300
    assert decoded == []  # one search over the lines' text: no line decoded, none redacted alone


@pytest.mark.parametrize(
    ("secret", "notes"),
    [
        ("s3cr3t-value-123456", "uses s3cr3t-value-123456 here"),  # a value of the .env file
        ("s3cr3t-value-123456", "login: password=hunter2hunter2"),  # a secret assignment
        ('s3cr3t"quoted"1234', 'uses s3cr3t"quoted"1234 here'),  # escaped in the line's text
    ],
)
def test_a_secret_among_many_clean_lines_is_redacted_and_the_rest_left_alone(repo: Path, secret, notes):
    from ralph.store.transaction import redact_plan

    (repo / ".env").write_text(f"API_TOKEN={secret}\n")
    secret_line = task("t-secret", notes=notes)
    before = many_tasks(200) + secret_line + many_tasks(3, first=200)
    (repo / "plan.jsonl").write_bytes(before)
    clean: set[bytes] = set()
    redact_plan(repo, clean)
    after = (repo / "plan.jsonl").read_bytes()
    written = json.loads(after.splitlines()[200])["notes"]
    assert secret not in written and "hunter2hunter2" not in written and "[redacted]" in written
    assert after.replace(after.splitlines(keepends=True)[200], secret_line) == before  # that line alone
    assert set(after.splitlines(keepends=True)) == clean
