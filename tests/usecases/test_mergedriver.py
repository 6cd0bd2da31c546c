"""The merge driver with real git: registered by `ralph init`, run by `git merge`, and the warning
a clone without its config gets."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.cli import Ralph, ralph_process
from tests.support.gitrepo import git

WARNING = (
    "ralph: warning: .gitattributes merges plan.jsonl with ralph's merge driver, but this clone's git"
    " config lacks merge.ralph.driver: run 'ralph init'\n"
)


def merge(root: Path, branch: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "merge", "--no-edit", branch], cwd=root, capture_output=True, text=True)


def records(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "plan.jsonl").read_text().splitlines() if line.strip()]


def commit_plan(root: Path, text: str, message: str) -> None:
    (root / "plan.jsonl").write_text(text)
    git(root, "commit", "-qam", message)


def test_two_branches_that_add_and_finish_tasks_merge_clean(ralph, repo):
    ralph("task", "add", '[{"id": "t-one", "name": "One"}, {"id": "t-two", "name": "Two"}]')
    git(repo, "checkout", "-qb", "feature")
    ralph("task", "add", '{"id": "t-feature", "name": "Feature", "deps": ["t-one"]}')
    ralph("task", "done", "t-one")
    git(repo, "checkout", "-q", "main")
    ralph("task", "add", '{"id": "t-main", "name": "Main"}')
    ralph("task", "done", "t-two")
    ralph("task", "accept", "t-two")

    done = merge(repo, "feature")

    assert done.returncode == 0, done.stdout + done.stderr
    assert records(repo) == [
        {"t": "task", "id": "t-one", "name": "One", "s": "d"},
        {"t": "task", "id": "t-main", "name": "Main", "s": "p"},
        {"t": "accept", "id": "t-two", "name": "Two"},
        {"t": "task", "id": "t-feature", "name": "Feature", "s": "p", "deps": ["t-one"]},
    ]
    assert ralph("check").stdout == "plan.jsonl: ok (4 records)\n"
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "log", "-1", "--format=%P").count(" ") == 1  # a merge commit, made by git


def test_a_real_conflict_leaves_the_path_conflicted_for_check_to_name(ralph, repo, tmp_path):
    ralph("task", "add", '[{"id": "t-a", "name": "Login"}, {"id": "t-b", "name": "Logout"}]')
    base = (repo / "plan.jsonl").read_text()
    git(repo, "checkout", "-qb", "feature")
    commit_plan(repo, base.replace('"Login"', '"Login form"'), "rename on feature")
    ralph("task", "done", "t-b")
    git(repo, "checkout", "-q", "main")
    commit_plan(repo, base.replace('"Login"', '"Sign in"'), "rename on main")

    done = merge(repo, "feature")

    assert done.returncode == 1
    assert "CONFLICT (content): Merge conflict in plan.jsonl" in done.stdout
    assert "plan.jsonl:1: merge conflict: task t-a: 'name' changed on both sides" in done.stdout + done.stderr
    assert git(repo, "diff", "--name-only", "--diff-filter=U") == "plan.jsonl\n"
    problems = ralph("check", code=2).stderr.splitlines()
    assert problems[0].startswith(
        "plan.jsonl:1: unresolved git merge conflict marker"
        " (<<<<<<< ours, task t-a: 'name' changed on both sides)"
    )
    assert problems[-1].startswith("plan.jsonl: git lists plan.jsonl as unmerged")
    written = (repo / "plan.jsonl").read_text()
    assert '"name": "Sign in"' in written and '"name": "Login form"' in written  # nothing lost
    assert '{"t": "task", "id": "t-b", "name": "Logout", "s": "d"}' in written  # the rest merged

    # The driver's own exit code, on the three versions git kept in the index.
    versions = []
    for stage in (1, 2, 3):
        path = tmp_path / f"stage{stage}.jsonl"
        path.write_bytes(
            subprocess.run(["git", "show", f":{stage}:plan.jsonl"], cwd=repo, capture_output=True).stdout
        )
        versions.append(str(path))
    driver = ralph_process(repo, "merge-driver", *versions, "plan.jsonl")
    assert driver.returncode == 1
    assert driver.stderr == "plan.jsonl:1: merge conflict: task t-a: 'name' changed on both sides\n"
    assert Path(versions[1]).read_text() == written


def test_a_version_that_cannot_be_read_leaves_ours_untouched(repo, tmp_path):
    ours = b'{"t": "task", "id": "t-a", "name": "Ours"}\r\n'
    files = {"base": b"", "ours": ours, "theirs": b'{"t": "task", "id": "t-b", "name": "B"}\n{"t": "task"}\n'}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    before = (tmp_path / "ours").stat()

    driver = ralph_process(repo, "merge-driver", *(str(tmp_path / name) for name in files), "plan.jsonl")

    assert driver.returncode == 2
    assert driver.stderr.splitlines() == [
        "ralph: plan.jsonl (theirs):2: task is missing field 'id'; task is missing field 'name';"
        " cannot merge it by record"
    ]
    assert (tmp_path / "ours").read_bytes() == ours
    assert (tmp_path / "ours").stat().st_ino == before.st_ino


def test_a_broken_plan_on_one_branch_leaves_git_with_our_version(ralph, repo):
    ralph("task", "add", '{"id": "t-a", "name": "A"}')
    git(repo, "checkout", "-qb", "feature")
    commit_plan(repo, (repo / "plan.jsonl").read_text() + "not json\n", "broken by hand")
    git(repo, "checkout", "-q", "main")
    ralph("task", "done", "t-a")
    ours = (repo / "plan.jsonl").read_bytes()

    done = merge(repo, "feature")

    assert done.returncode == 1
    assert "plan.jsonl (theirs):2: invalid JSON: Expecting value (column 1); cannot merge it by record" in (
        done.stdout + done.stderr
    )
    assert git(repo, "diff", "--name-only", "--diff-filter=U") == "plan.jsonl\n"
    assert (repo / "plan.jsonl").read_bytes() == ours


# --- registration ---------------------------------------------------------------------------------


def state_of(root: Path) -> dict:
    """Everything `ralph init` could change."""
    files = {name: (root / name).read_bytes() for name in (".gitignore", ".gitattributes", "plan.jsonl")}
    return {
        **files,
        "config": (root / ".git" / "config").read_bytes(),
        "head": git(root, "rev-parse", "HEAD"),
        "status": git(root, "status", "--porcelain", "--ignored"),
    }


def test_init_registers_the_driver_and_again_changes_nothing(ralph, repo):
    assert (repo / ".gitattributes").read_text() == "/plan.jsonl merge=ralph\n"
    assert git(repo, "config", "merge.ralph.driver").endswith(" -m ralph merge-driver %O %A %B %P\n")
    assert git(repo, "config", "merge.ralph.name") != ""
    assert git(repo, "ls-files", ".gitattributes") == ".gitattributes\n"  # committed
    ralph("task", "add", '{"name": "Something to keep"}')
    before = state_of(repo)

    assert ralph("init").stdout == f"ralph is already initialized in {repo}\n"

    assert state_of(repo) == before


def test_init_where_ralph_ran_before_the_driver_existed_adds_only_the_driver(ralph, repo):
    git(repo, "rm", "-q", ".gitattributes")
    git(repo, "commit", "-qm", "as an older ralph left it")
    git(repo, "config", "--remove-section", "merge.ralph")
    ralph("task", "add", '{"name": "Something to keep"}')
    (repo / ".gitattributes").write_text("*.png binary")  # the user's, committed, without a final newline
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "the user's attributes")
    plan, head = (repo / "plan.jsonl").read_bytes(), git(repo, "rev-parse", "HEAD").strip()

    out = ralph("init").stdout

    assert out.endswith(
        ": .gitattributes entry: /plan.jsonl merge=ralph, git config merge.ralph.name merge.ralph.driver\n"
    )
    assert (repo / ".gitattributes").read_text() == "*.png binary\n/plan.jsonl merge=ralph\n"
    assert git(repo, "log", "--format=%s", f"{head}..HEAD").splitlines() == [
        "ralph: init: merge plan.jsonl by record (ralph's merge driver)"
    ]
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [".gitattributes"]
    assert (repo / "plan.jsonl").read_bytes() == plan
    before = state_of(repo)
    ralph("init")
    assert state_of(repo) == before


def test_init_keeps_a_merge_the_user_chose_for_the_plan_and_a_driver_already_configured(ralph, repo):
    commit = ["-c", "user.name=u", "-c", "user.email=u@example.invalid"]
    (repo / ".gitattributes").write_text("/plan.jsonl merge=union\n")
    git(repo, *commit, "commit", "-qam", "the user's choice")
    git(repo, "config", "merge.ralph.driver", "my-own-ralph merge-driver %O %A %B %P")
    git(repo, "config", "--unset", "merge.ralph.name")

    assert ralph("init").stdout.endswith(": git config merge.ralph.name\n")

    assert (repo / ".gitattributes").read_text() == "/plan.jsonl merge=union\n"
    assert git(repo, "config", "merge.ralph.driver") == "my-own-ralph merge-driver %O %A %B %P\n"
    assert ralph("status").stderr == ""  # .gitattributes does not name ralph's driver: no warning


def test_a_fresh_clone_warns_in_one_line_until_init_registers_the_driver(repo, tmp_path):
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    ralph = Ralph(clone)

    assert ralph("status").stderr == WARNING
    assert ralph("check").stderr == WARNING
    status = ralph("status", "--json")
    assert json.loads(status.stdout)["stage"] == "PLAN" and status.stderr == WARNING  # nothing planned yet
    head = git(clone, "rev-parse", "HEAD")

    assert "git config merge.ralph.name merge.ralph.driver" in ralph("init").stdout

    assert git(clone, "rev-parse", "HEAD") == head  # nothing to commit: only this clone's config
    assert ralph("status").stderr == ""
    assert ralph("check").stderr == ""


def test_the_driver_merges_only_the_top_level_plan_not_a_fixture_elsewhere(ralph, repo):
    attribute = git(repo, "check-attr", "merge", "--", "plan.jsonl", "tests/data/plan.jsonl").splitlines()
    assert attribute == ["plan.jsonl: merge: ralph", "tests/data/plan.jsonl: merge: unspecified"]


def test_init_anchors_the_line_an_older_ralph_wrote_and_commits_it_alone(ralph, repo):
    (repo / ".gitattributes").write_text("*.png binary\nplan.jsonl merge=ralph\n")
    git(repo, "commit", "-qam", "as an older ralph left it")
    head = git(repo, "rev-parse", "HEAD").strip()

    out = ralph("init").stdout

    assert ".gitattributes entry anchored: plan.jsonl merge=ralph" in out
    assert (repo / ".gitattributes").read_text() == "*.png binary\n/plan.jsonl merge=ralph\n"
    assert git(repo, "log", "--format=%s", f"{head}..HEAD").splitlines() == [
        "ralph: init: merge only the top-level plan.jsonl with ralph's driver"
    ]
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [".gitattributes"]
    before = state_of(repo)
    assert ralph("init").stdout == f"ralph is already initialized in {repo}\n"
    assert state_of(repo) == before
