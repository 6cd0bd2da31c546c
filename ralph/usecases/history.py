"""`ralph log`: the plan's timeline, read from git history.

One `git log -p` gives each commit's removed and added lines of plan.jsonl; the version they are
applied to is kept as records by key, and the pure diff (ralph/plan/history.py) names what
changed. The whole history is always read, so that what a commit did is judged against the plan
as it was (a task deleted after its subtasks were added earlier is "decomposed"); --since only
chooses which commits are shown.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ralph.errors import InvalidInput, Refused
from ralph.plan.document import Record
from ralph.plan.history import Event, Key, add_line, diff, remove_line
from ralph.plan.records import Status
from ralph.plan.scope import coverage
from ralph.store.git import Repo
from ralph.store.gitlog import FileChange, file_history
from ralph.store.reader import PLAN_NAME

# Subjects of the commits ralph makes itself; any other commit of plan.jsonl is a person's edit.
_RALPH_SUBJECTS = ("ralph:", "ralph(")  # state commands; the loop: "ralph(build): ..."
_EARLIER_CHANGES = "ralph: commit earlier uncommitted changes to plan.jsonl"
ATTEMPT_EVENTS = ("built", "attempt failed")  # a build attempt's event; its verdict says why it failed


def timeline(
    root: Path,
    since: str | None = None,
    task_id: str | None = None,
    points: list[dict[str, Any]] | None = None,
) -> list[Event]:
    """Every event of the plan's history, oldest first, each with its commit, author and time.

    `points`, when given, receives the burndown too (see `burndown`), from the same walk."""
    repo = Repo(root)
    shown = _shown_commits(repo, since) if since else None
    events: list[Event] = []
    counts = {"pending": 0, "done": 0, "blocked": 0, "accepted": 0}
    for change, before, state in _walk(repo):
        if points is not None:
            _count(counts, before, state)
            points.append({"commit": change.commit, "time": change.time, **counts})
        if shown is not None and change.commit not in shown:
            continue
        # A merge brings records made on another branch: merged, not edited by whoever merged.
        by_hand = not change.merge and (
            not change.subject.startswith(_RALPH_SUBJECTS) or change.subject == _EARLIER_CHANGES
        )
        for event in diff(before, state, before):
            events.append(
                {
                    "commit": change.commit,
                    "time": change.time,
                    "author": change.author,
                    "subject": change.subject,
                    "by_hand": by_hand,
                    "merged": change.merge,
                    **event,
                }
            )
    if task_id is not None:
        events = [event for event in events if _about(event, task_id)]
        if not events:
            raise Refused(f"task {task_id} does not appear in {PLAN_NAME}'s history")
    return events


def burndown(root: Path) -> list[dict[str, Any]]:
    """After each commit of plan.jsonl: its time and how many tasks were pending, done, accepted."""
    points: list[dict[str, Any]] = []
    timeline(root, points=points)
    return points


def _count(counts: dict[str, int], before: dict[Key, Record | None], state: dict[Key, Record]) -> None:
    for key, old in before.items():
        for record, sign in ((old, -1), (state.get(key), 1)):
            bucket = _bucket(key, record)
            if bucket:
                counts[bucket] += sign


def _bucket(key: Key, record: Record | None) -> str | None:
    if record is None:
        return None
    if key[0] == "accept":
        return "accepted"
    if key[0] == "task":
        return {Status.DONE: "done", Status.BLOCKED: "blocked"}.get(
            record.get("s", Status.PENDING), "pending"
        )
    return None


def _walk(repo: Repo) -> Iterator[tuple[FileChange, dict[Key, Record | None], dict[Key, Record]]]:
    """Each commit of plan.jsonl with the records it touched as they were before it (None: new)
    and the whole plan after it (one mapping, changed in place from commit to commit)."""
    state: dict[Key, Record] = {}
    for change in file_history(repo, PLAN_NAME):
        before: dict[Key, Record | None] = {}
        for text in change.removed:
            key, old = remove_line(state, text)
            if key is not None:
                before.setdefault(key, old)
        for text in change.added:
            key, old = add_line(state, text)
            if key is not None:
                before.setdefault(key, old)
        yield change, before, state


def _about(event: Event, task_id: str) -> bool:
    return event.get("id") == task_id or task_id in event.get("into", ()) or event.get("parent") == task_id


def _shown_commits(repo: Repo, since: str) -> set[str]:
    """The commits --since keeps: after a revision, or from a date on (anything git's dates read)."""
    commit = repo.commit_of(since)
    if commit is not None:
        return set(repo.commits(f"{commit}..HEAD"))
    # git reads any text as a date, and one it cannot read as "now": refuse that instead of
    # printing an empty log.
    import time

    read = repo.git("rev-parse", f"--since={since}").strip().removeprefix("--max-age=")
    if not read.isdigit() or (int(read) >= int(time.time()) - 1 and since.strip().lower() != "now"):
        raise InvalidInput(
            f"--since {since}: neither a revision nor a date git can read (try 2026-01-31 or '2 weeks ago')"
        )
    return set(repo.commits(f"--since={since}", "HEAD"))


def story(events: list[Event], task_id: str) -> dict[str, Any]:
    """One task's whole story, summed up: its attempts (each with its verdict, tokens, cost and
    failure), its build commit and files, and where it ended."""
    own = [event for event in events if event.get("id") == task_id]
    attempts = [
        {
            key: event[key]
            for key in (
                "attempt",
                "model",
                "verdict",
                "commit",
                "time",
                "tokens",
                "cost_usd",
                "cost_unknown",
                "gate_failure",
                "files",
                "scope",
            )
            if key in event
        }
        | {"passed": event["event"] == "built"}
        for event in own
        if event["event"] in ATTEMPT_EVENTS
    ]
    builds = [event for event in own if event["event"] == "build commit"]
    ends = {
        "accepted",
        "deleted",
        "decomposed",
        "done",
        "rejected",
        "killed",
        "reopened",
        "blocked",
        "created",
    }
    last = next((event["event"] for event in reversed(own) if event["event"] in ends), None)
    name = next((event["name"] for event in reversed(own) if event.get("name")), None)
    children = next((event["into"] for event in reversed(own) if event["event"] == "decomposed"), None)
    summary = {
        "event": "story",
        "id": task_id,
        "name": name,
        "now": "pending" if last in ("created", "reopened", "rejected", "killed") else last,
        "attempts": attempts,
        "rejections": sum(1 for event in own if event["event"] == "rejected"),
        "failed_attempts": sum(1 for attempt in attempts if not attempt["passed"]),
        "gate_failures": sum(1 for attempt in attempts if attempt.get("verdict") == "gate_failed"),
        "tokens": sum(attempt.get("tokens", 0) for attempt in attempts),
        "cost_usd": round(sum(attempt.get("cost_usd", 0) for attempt in attempts), 6),
        "cost_unknown": any(attempt.get("cost_unknown") for attempt in attempts) or None,
        "build_commit": builds[-1]["build_commit"] if builds else None,
        "files": builds[-1].get("files")
        if builds
        else next((attempt["files"] for attempt in reversed(attempts) if attempt.get("files")), None),
        "into": children,
        "coverage": _coverage(task_id, attempts),
    }
    return {key: value for key, value in summary.items() if value is not None}


def _coverage(task_id: str, attempts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The task's scope beside the files of its last build that passed the gate (None: no scope,
    or no such build)."""
    built = next((attempt for attempt in reversed(attempts) if attempt["passed"]), None)
    found = built and coverage(task_id, built.get("scope"), built.get("files"))
    return {key: value for key, value in found.to_json().items() if key != "task"} if found else None
