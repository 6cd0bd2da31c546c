"""What one change of the plan did, as events: a pure diff of two versions of plan.jsonl.

A version is a mapping from each record's key to the record (`key_of`): tasks and issues by id,
accept tombstones by task id, specs by path, config and state by type. reject records and lines
ralph does not know are appended facts, not keyed by id: each is keyed by its text and how many
identical ones precede it, so a second identical rejection is a rejection too.

The diff looks only at the records that differ, so a caller that knows which lines a commit
changed (`git log -p`) passes those keys instead of comparing every record of two full versions;
both give the same events. Labels follow the records, not the commit message: a task whose line
goes while an accept tombstone for it arrives is "accepted"; one that goes leaving subtasks that
name it as parent is "decomposed"; one that just goes is "deleted".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ralph.plan.document import Record
from ralph.plan.records import VERDICT_WORDS, Status, Verdict, holds

Key = tuple[Any, ...]  # (kind, id or path), (kind,), or (kind, text, occurrence)
Event = dict[str, Any]

# Task fields whose change is told by an event of its own, not as a plain field change.
_TASK_TOLD = frozenset(
    {
        "s",
        "reject_reason",
        "kill_reason",
        "kill_log",
        "blocked_reason",
        "blocked_by",
        "verdict",
        "attempts",
        "rebuilds",
        "resubmitted",
        "fingerprint",
        "repeated_failure",
        "repeated_from",
        "rejection_fingerprint",
        "ancestor_failures",
        "family",
        "attempt_tokens",
        "model",
        "tokens",
        "cost_usd",
        "unknown_cost_runs",
        "gate_failure",
        "files",
        "commit",
        "depth",
        "claimed_by",
        "claimed_at",
        "claimed_on",
    }
)
_ISSUE_TOLD = frozenset(
    {"keep_open", "kills", "kill_reason", "kill_log", "claimed_by", "claimed_at", "claimed_on"}
)
_CLAIM = ("claimed_by", "claimed_at", "claimed_on")  # runners sharing a git remote: told as claim events


def key_of(record: Record | None, text: str, occurrence: int = 0) -> Key:
    """The key a line's record has in a version. `text` is the line without its line ending;
    `occurrence` counts identical fact lines before this one."""
    if record is None:
        return ("line", text, occurrence)
    kind = record.get("t")
    if kind in ("task", "issue", "accept") and isinstance(record.get("id"), str):
        return (kind, record["id"])
    if kind == "spec" and isinstance(record.get("path"), str):
        return ("spec", record["path"])
    if kind in ("config", "state"):
        return (kind,)
    if kind == "reject":
        return ("reject", text, occurrence)
    return ("line", text, occurrence)


def parse_line(text: str) -> Record | None:
    """The JSON object on a line, or None (blank, not JSON, not an object): lenient, because
    history holds whatever was ever committed, broken hand edits included."""
    if not text.strip():
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) and isinstance(record.get("t"), str) else None


def version(data: bytes) -> dict[Key, Record]:
    """A whole plan.jsonl, as the mapping `diff` compares."""
    records: dict[Key, Record] = {}
    for raw in data.decode("utf-8", "replace").split("\n"):
        add_line(records, raw.rstrip("\r"))
    return records


def add_line(records: dict[Key, Record], text: str) -> tuple[Key | None, Record | None]:
    """Put one line into a version: its key and the record it replaced (None when new). Blank
    lines hold no record and are left out (key None)."""
    if not text.strip():
        return None, None
    record = parse_line(text)
    occurrence = 0
    while (key := key_of(record, text, occurrence)) in records and key[0] in ("reject", "line"):
        occurrence += 1
    replaced = records.get(key)
    records[key] = record if record is not None else {"t": None, "line": text}
    return key, replaced


def remove_line(records: dict[Key, Record], text: str) -> tuple[Key | None, Record | None]:
    """Take one line out of a version (the last of identical fact lines): its key and record."""
    if not text.strip():
        return None, None
    key = key_of(parse_line(text), text)
    if key[0] in ("reject", "line"):
        while key[:2] + (key[2] + 1,) in records:
            key = key[:2] + (key[2] + 1,)
    return key, records.pop(key, None)


def diff(
    before: Mapping[Key, Record | None], after: Mapping[Key, Record], keys: Iterable[Key] | None = None
) -> list[Event]:
    """The events that turn `before` into `after`, in a stable order. `keys`: the keys that may
    differ (default: every key of both), in the order
    their events come within a kind (a version in file order gives the file's order)."""
    keys = [*before, *after] if keys is None else list(keys)
    # Records in the order the keys came (file order), grouped by kind; each key once.
    changed = sorted(
        (key for key in dict.fromkeys(keys) if before.get(key) != after.get(key)),
        key=lambda key: _RANK.get(key[0], 9),
    )
    new_keys = [key for key in changed if before.get(key) is None]
    accepted_now = {key[1] for key in new_keys if key[0] == "accept"}
    rejected_now = {after[key].get("id") for key in new_keys if key[0] == "reject"}
    events: list[Event] = []
    for key in changed:
        old, new = before.get(key), after.get(key)
        kind = key[0]
        if kind == "task":
            events += _task(key[1], old, new, after, accepted_now, rejected_now)
        elif kind == "issue":
            events += _issue(key[1], old, new)
        elif kind == "accept":
            events.append(_accept(key[1], old, new))
        elif kind == "reject":
            events += _reject(old, new)
        elif kind == "spec":
            events += _spec(key[1], old, new)
        elif kind in ("config", "state"):
            events += _settings(kind, old, new)
        elif new is not None and new.get("t") == "takeover" and old is None:
            events += _takeover(new, events)
        elif new is not None and new.get("t") == "resolve" and old is None:
            _resolve(new, events)
        else:
            record = new if new is not None else old
            assert record is not None
            label = "line added" if old is None else "line removed"
            events.append(_event(label, None, line=record.get("line") or json.dumps(record)))
    return events


def _accept(task_id: str, old: Record | None, new: Record | None) -> Event:
    if old is None:
        assert new is not None  # a key that changed is in one version at least
        return _event("accepted", task_id, name=new.get("name"), aspect=new.get("aspect"))
    if new is None:
        return _event("unaccepted", task_id, name=old.get("name"))
    return _event("changed", task_id, fields=_fields(old, new, ("t", "id")))


def _reject(old: Record | None, new: Record | None) -> list[Event]:
    if old is None:
        assert new is not None
        name = "killed" if new.get("kill_reason") else "rejected"
        return [_event(name, new.get("id"), reason=new.get("reason"), kill_reason=new.get("kill_reason"))]
    if new is None:
        return [_event("rejection removed", old.get("id"), reason=old.get("reason"))]
    return []


def _spec(path: str, old: Record | None, new: Record | None) -> list[Event]:
    events = _claim(path, old, new) if old and new else []
    fields = _fields(old or {}, new or {}, ("t", "path", *_CLAIM)) if old and new else None
    if not (old and new) or fields:
        label = "spec added" if old is None else "spec removed" if new is None else "spec changed"
        events.append(_event(label, path, fields=fields))
    return events


def _settings(kind: str, old: Record | None, new: Record | None) -> list[Event]:
    """The config record or the loop's state record changed."""
    # the state's running spending totals are no news: each build attempt tells its own
    fields = _fields(old or {}, new or {}, ("t", "spent") if kind == "state" else ("t",))
    return [_event(f"{kind} changed", None, fields=fields)] if fields or kind == "config" else []


def _task(
    task_id: str,
    old: Record | None,
    new: Record | None,
    after: Mapping[Key, Record],
    accepted: set[str],
    rejected: set[object],
) -> list[Event]:
    if old is None:
        assert new is not None
        return [
            _event(
                "created",
                task_id,
                name=new.get("name"),
                parent=new.get("parent"),
                issue=new.get("issue"),
                aspect=new.get("aspect"),
                type=new.get("type"),
            )
        ]
    if new is None:
        if task_id in accepted:
            return []  # the tombstone's own event says it
        children = [
            record["id"]
            for key, record in after.items()
            if key[0] == "task" and record.get("parent") == task_id
        ]
        if children:
            return [_event("decomposed", task_id, name=old.get("name"), into=children)]
        return [_event("deleted", task_id, name=old.get("name"))]
    events = []
    was, now = old.get("s", Status.PENDING), new.get("s", Status.PENDING)  # as written, even if invalid
    attempts = new.get("attempts", 0)
    if isinstance(attempts, int) and attempts > _int(old.get("attempts")):
        events.append(_attempt(task_id, old, new))
    if new.get("commit") and new.get("commit") != old.get("commit"):
        events.append(_event("build commit", task_id, build_commit=new["commit"], files=new.get("files")))
    if new.get("resubmitted") and new.get("resubmitted") != old.get("resubmitted"):
        events.append(_event("resubmitted", task_id, reason=new["resubmitted"]))  # unchanged, argued
    if now != was:
        if now == Status.DONE:
            events.append(_event("done", task_id, name=new.get("name")))
        elif now == Status.BLOCKED:
            events.append(_event("blocked", task_id, reason=new.get("blocked_reason")))
        elif task_id not in rejected:  # otherwise the reject record's event says it, with the reason
            events.append(_event("reopened", task_id, name=new.get("name")))
    if (
        new.get("kill_reason")
        and new.get("kill_reason") != old.get("kill_reason")
        and task_id not in rejected
    ):
        events.append(_event("killed", task_id, kill_reason=new["kill_reason"], log=new.get("kill_log")))
    events += _claim(task_id, old, new)
    fields = _fields(old, new, _TASK_TOLD | {"t", "id"})
    if fields:
        events.append(_event("changed", task_id, fields=fields))
    return events


def _claim(item_id: str, old: Record, new: Record) -> list[Event]:
    """A claim of a runner sharing a git remote: made, renewed, released or taken over."""
    was, now = old.get("claimed_by"), new.get("claimed_by")
    if all(old.get(key) == new.get(key) for key in _CLAIM):
        return []
    if not now:
        return [_event("released", item_id, runner=was)] if was else []
    if not was:
        return [_event("claimed", item_id, runner=now, at=new.get("claimed_at"))]
    if holds(new, str(was), old.get("claimed_on")):  # the same runner: its name, on its host
        return [_event("claim renewed", item_id, runner=now, at=new.get("claimed_at"))]
    return [_event("taken over", item_id, runner=now, was_claimed_by=was, at=new.get("claimed_at"))]


def _resolve(record: Record, events: list[Event]) -> None:
    """A resolve record's note goes on its issue's "resolved" event (told before it: issues rank
    first), or is told as one when the issue's line went in another commit."""
    item = record.get("id")
    told = next((event for event in events if event["event"] == "resolved" and event["id"] == item), None)
    if told is None:
        events.append(_event("resolved", item, text=record.get("text"), note=record.get("note")))
    else:
        told["note"] = record.get("note")


def _takeover(record: Record, events: list[Event]) -> list[Event]:
    """A takeover record, told once: the claim's own change says it ("taken over from") unless
    one commit holds the takeover and the release after it (a merge of another runner's pushes):
    then the claim seems released by the runner that lost it, and is told as taken over from it
    and released by the runner that took it."""
    item, runner, was = record.get("id"), record.get("by"), record.get("was_claimed_by")
    if any(event["event"] == "taken over" and event["id"] == item for event in events):
        return []
    taken = _event("taken over", item, runner=runner, was_claimed_by=was, at=record.get("at"))
    for index, event in enumerate(events):
        if event["event"] == "released" and event["id"] == item and event.get("runner") == was:
            events[index : index + 1] = [taken, _event("released", item, runner=runner)]
            return []
    return [taken]


# What a failed attempt's recorded failure starts with, for plans written before tasks recorded
# their verdict: each is how ralph has worded that failure since it recorded failures.
_FAILURE_STARTS = (
    ("no_changes", Verdict.NO_CHANGES),
    ("permission_violation", Verdict.PERMISSION_VIOLATION),
    ("scope_violation", Verdict.SCOPE_VIOLATION),
    ("merge_conflict", Verdict.MERGE_CONFLICT),
    ("the agent left plan.jsonl invalid", Verdict.PLAN_INVALID),
    ("the agent ended (", Verdict.NOT_DONE),
    ("the pre-commit hook refused", Verdict.HOOK_REFUSED),
    ("the gate could not start", Verdict.GATE_FAILED),
    ("`", Verdict.GATE_FAILED),  # "`make verify` exited 2:", "`make verify` timed out after 600s"
)
UNKNOWN_FAILURE = "failed"  # a failure worded in no way ralph knows (a hand edit, a cut excerpt)
_WORDS = {str(verdict): words for verdict, words in VERDICT_WORDS.items()}


def verdict_words(verdict: str) -> str:
    """A verdict in words, for people (ralph log, the reports); one this ralph does not know
    (a newer ralph's, a hand edit) as it is spelled."""
    return _WORDS.get(str(verdict)) or str(verdict).replace("_", " ")


def attempt_verdict(task: Record) -> str:
    """What the build attempt a task record tells of came to: its recorded `verdict`, else (a plan
    written before verdicts were recorded, or one commit that also set the task aside) "built"
    when no failure is recorded, or the failure's verdict read from its wording; never "gate
    failed" for a gate that passed or never ran."""
    recorded = task.get("verdict")
    # a rejection or a kill in the same commit judges the task, not the attempt: read the failure
    if isinstance(recorded, str) and recorded and recorded not in (Verdict.REJECTED, Verdict.KILLED):
        return recorded
    failure = task.get("gate_failure")
    if not failure:
        return Verdict.BUILT
    text = str(failure)
    return next((verdict for start, verdict in _FAILURE_STARTS if text.startswith(start)), UNKNOWN_FAILURE)


def _attempt(task_id: str, old: Record, new: Record) -> Event:
    """A build attempt: "built" (through the gate, files recorded) or "attempt failed", with its
    verdict (why) and the failure recorded with it."""
    tokens_list = new.get("attempt_tokens")
    tokens = _int(new.get("tokens")) - _int(old.get("tokens"))
    if isinstance(tokens_list, list) and len(tokens_list) > len(old.get("attempt_tokens") or []):
        tokens = tokens_list[-1]
    cost = new.get("cost_usd") or 0
    cost = round(cost - (old.get("cost_usd") or 0), 6) if isinstance(cost, int | float) else None
    verdict = attempt_verdict(new)
    failed = verdict != Verdict.BUILT
    return _event(
        "attempt failed" if failed else "built",
        task_id,
        verdict=verdict,
        attempt=new.get("attempts"),
        model=new.get("model"),
        tokens=tokens or None,
        cost_usd=cost or None,
        # no cost reported and no price known: unknown, which a missing cost_usd alone cannot say
        cost_unknown=_int(new.get("unknown_cost_runs")) > _int(old.get("unknown_cost_runs")) or None,
        gate_failure=new.get("gate_failure") if failed else None,
        files=None if failed else new.get("files"),
        scope=None if failed else new.get("scope") or None,  # beside its files: the task's coverage
    )


def _issue(issue_id: str, old: Record | None, new: Record | None) -> list[Event]:
    if old is None:
        assert new is not None
        return [_event("added", issue_id, text=new.get("text"), aspect=new.get("aspect"))]
    if new is None:
        return [_event("resolved", issue_id, text=old.get("text"), aspect=old.get("aspect"))]
    events = []
    if new.get("keep_open") and new.get("keep_open") != old.get("keep_open"):
        events.append(_event("kept open", issue_id, reason=new["keep_open"]))
    if _int(new.get("kills")) > _int(old.get("kills")):
        events.append(
            _event("stopped", issue_id, kill_reason=new.get("kill_reason"), log=new.get("kill_log"))
        )
    events += _claim(issue_id, old, new)
    fields = _fields(old, new, _ISSUE_TOLD | {"t", "id"})
    if fields:
        events.append(_event("changed", issue_id, fields=fields))
    return events


def _fields(old: Record, new: Record, skip: Iterable[str]) -> dict[str, list[Any]]:
    """Each field that differs: [before, after] (null where absent)."""
    skip = set(skip)
    names = [name for name in {**old, **new} if name not in skip and old.get(name) != new.get(name)]
    return {name: [old.get(name), new.get(name)] for name in names}


def _event(what: str, item: object, **detail: object) -> Event:
    # History holds whatever was committed: an id that is not a string is shown as its JSON.
    item = item if item is None or isinstance(item, str) else json.dumps(item)
    return {"event": what, "id": item, **{key: value for key, value in detail.items() if value is not None}}


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# Within one commit: issues, then tasks and what happened to them, then facts, then settings.
_RANK = {"issue": 0, "task": 1, "accept": 2, "reject": 3, "spec": 4, "config": 5, "state": 6, "line": 7}
