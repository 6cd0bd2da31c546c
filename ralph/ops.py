"""The state commands as plain functions: each takes a repository root and plain values, changes
plan.jsonl in one transaction with one commit, and returns what changed. The CLI prints it."""

from __future__ import annotations

from pathlib import Path

from ralph.store import PLAN_NAME, read_plan, transaction


def _names(records: list[dict], key: str = "name") -> str:
    if len(records) == 1:
        return f"{records[0]['id']} {records[0].get(key, '')}".rstrip()
    return f"{len(records)} ({', '.join(r['id'] for r in records[:8])}{', ...' if len(records) > 8 else ''})"


def task_add(root: Path, items: list, commit: bool | None = None) -> list[dict]:
    with transaction(root, commit) as change:
        added = change.plan.add_tasks(items)
        change.message = f"ralph: task add {_names(added)}"
    return added


def task_done(root: Path, task_id: str | None, commit: bool | None = None) -> dict:
    with transaction(root, commit) as change:
        task = change.plan.done(task_id)
        change.message = f"ralph: task done {_names([task])}"
    return task


def task_accept(root: Path, task_id: str | None, commit: bool | None = None) -> list[dict]:
    with transaction(root, commit) as change:
        accepted = change.plan.accept(task_id)
        change.message = f"ralph: task accept {_names(accepted)}"
    return accepted


def task_reject(
    root: Path,
    task_id: str | None,
    reason: str,
    kill_reason: str | None = None,
    kill_log: str | None = None,
    commit: bool | None = None,
) -> dict:
    with transaction(root, commit) as change:
        task = change.plan.reject(task_id, reason, kill_reason, kill_log)
        change.message = f"ralph: task reject {_names([task])}\n\n{reason}"
    return task


def task_delete(
    root: Path, task_id: str, force: bool = False, commit: bool | None = None
) -> tuple[dict, list[str]]:
    with transaction(root, commit) as change:
        task, rewired = change.plan.delete(task_id, force)
        change.message = f"ralph: task delete {_names([task])}"
    return task, rewired


def task_prioritize(
    root: Path, spec: str | None = None, commit: bool | None = None, fold_earlier: bool = False
) -> dict:
    with transaction(root, commit, fold_earlier) as change:
        counts = change.plan.prioritize(spec)
        change.message = (
            f"ralph: task prioritize ({counts['high']} high, {counts['medium']} medium, {counts['low']} low)"
        )
    return counts


def issue_add(root: Path, text: str, priority: str | None = None, commit: bool | None = None) -> dict:
    with transaction(root, commit) as change:
        issue = change.plan.add_issue(text, priority)
        change.message = f"ralph: issue add {_names([issue], 'text')}"
    return issue


def issue_resolve(root: Path, issue_id: str, note: str | None = None, commit: bool | None = None) -> dict:
    with transaction(root, commit) as change:
        issue = change.plan.resolve_issue(issue_id)
        change.message = f"ralph: issue resolve {_names([issue], 'text')}" + (f"\n\n{note}" if note else "")
    return issue


def status(root: Path) -> dict:
    plan = read_plan(root)
    tasks = plan.tasks()
    next_task = plan.next_task()
    return {
        "stage": plan.stage(),
        "iteration": plan.iteration(),
        "spec": plan.state().get("spec"),
        "pending": sum(1 for t in tasks if t.get("s", "p") == "p"),
        "done": sum(1 for t in tasks if t.get("s") == "d"),
        "accepted": len(plan.accepted()),
        "issues": len(plan.issues()),
        "killed": sum(1 for t in tasks if t.get("kill_reason") and t.get("s", "p") == "p"),
        "next": {"id": next_task["id"], "name": next_task["name"]} if next_task else None,
    }


GITIGNORE_LINES = ("/build/", f"/{PLAN_NAME}.lock", f"/.{PLAN_NAME}.*.tmp")


def init(root: Path, commit: bool = True) -> list[str]:
    """Create plan.jsonl, specs/ and build/ralph-logs/ (ignored by git). Safe to run again.

    Returns what it created. With `commit`, plan.jsonl is committed, and so is .gitignore when
    it had no uncommitted changes of the user's before ralph added its lines."""
    from ralph.gitrepo import Repo, blob_sha

    created = []
    for folder in (root / "specs", root / "build" / "ralph-logs"):
        if not folder.is_dir():
            folder.mkdir(parents=True)
            created.append(str(folder.relative_to(root)) + "/")
    repo = Repo(root) if commit else None
    base = repo.snapshot() if repo else None
    gitignore = root / ".gitignore"
    before = gitignore.read_bytes() if gitignore.exists() else None
    missing = [line for line in GITIGNORE_LINES if line not in (before or b"").decode("utf-8").splitlines()]
    if missing:
        prefix = "" if not before or before.endswith(b"\n") else "\n"
        with open(gitignore, "a", encoding="utf-8") as handle:
            handle.write(prefix + "\n".join(missing) + "\n")
        created.append(".gitignore entries: " + " ".join(missing))
        committed_before = Repo.blob_in(base[1], ".gitignore") if base else None
        if repo and (
            committed_before == blob_sha(before) if before is not None else committed_before is None
        ):
            base = repo.commit_file(
                ".gitignore", gitignore.read_bytes(), "ralph: init: ignore ralph's files", base
            )
            base = (base[0] or repo.head(), base[1])
    plan_file = root / PLAN_NAME
    if not plan_file.exists():
        plan_file.write_bytes(b"")
        created.append(PLAN_NAME)
    if repo and created:
        repo.commit_file(PLAN_NAME, plan_file.read_bytes(), "ralph: init", base)
    return created
