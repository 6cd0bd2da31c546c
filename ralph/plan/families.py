"""A failure's identity across runs and across a task's family.

A task and every subtask DECOMPOSE makes from it, and theirs, are one family (`family`: the task
the first decomposition split). They share one failure memory: each subtask carries the failures
recorded on its ancestors (`ancestor_failures`), and a build or a rejection of it that fails the
same way (the same fingerprint) is the family's failure again, which another split will not cure:
one question for a person holds the whole family instead."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ralph.plan.document import Record
from ralph.plan.records import Verdict, is_pending

# What differs between two runs of the same failure: where and when it ran, and the numbers; task
# and issue ids. Compiled on the first fingerprint: every state command imports this module and
# never needs them.
_VARYING = (
    r"\(full output: [^)]*\)",  # the log's name: a timestamp and a counter
    r"(?:/tmp|/var/folders|/private/var/folders)/[^\s:'\"),]*",  # temporary paths
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
    r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b",  # a time of day
    r"\b\d+(?:\.\d+)?\s?(?:ms|s|secs?|seconds?|m|mins?|minutes?|h)\b",  # a duration
    r"\b[ti]-[0-9a-z][0-9a-z_-]{0,39}\b",  # a task's or an issue's id
    r"(?i)\b(?:0x)?(?=[0-9a-f]*\d)[0-9a-f]{6,}\b",  # a hash, an address
    r"\d+",
)
SHORTEST_OWN_NAME = 3  # a shorter file name (`a`, `io`) would take out words that are not it


def fingerprint(verdict: str, text: str, own: Iterable[str] = ()) -> str:
    """A failure's identity across runs: its verdict and its text with temporary paths, times,
    durations, task and issue ids, hex ids and numbers taken out, and the names of the task's own
    files (`own`: paths as the build changed them; each path, its file name and that name without
    its suffix), hashed (16 hex digits). A subtask's build prints its parent's lines with its own
    file names: taken out, they are the same failure."""
    normal = text
    for name in own_names(own):
        normal = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", "#", normal)
    for varying in _VARYING:
        normal = re.sub(varying, "#", normal)  # re's own cache keeps them compiled
    normal = " ".join(normal.split())
    import hashlib  # here: the state commands import this module and never fingerprint

    return hashlib.sha256(f"{verdict}\0{normal}".encode()).hexdigest()[:16]


def own_names(paths: Iterable[str]) -> list[str]:
    """The names a task's files go by in a tool's output: each path, its file name and its stem,
    longest first (a path is taken out before its file name), none shorter than SHORTEST_OWN_NAME."""
    names: set[str] = set()
    for path in paths:
        file_name = path.rsplit("/", 1)[-1]
        names.update((path, file_name, file_name.split(".", 1)[0]))
    return sorted((name for name in names if len(name) >= SHORTEST_OWN_NAME), key=lambda n: (-len(n), n))


def family_of(task: Record) -> str:
    """The family a task belongs to: the task its first decomposition split, or itself."""
    return str(task.get("family") or task["id"])


def in_family(task: Record, family: str) -> bool:
    return family_of(task) == family


def inherited_failures(task: Record, verify_reasons: list[str]) -> list[Record]:
    """What a task's subtasks remember of the failures in their family, oldest first: its
    ancestors' (its `ancestor_failures`), then its own last build failure and each distinct
    rejection VERIFY gave it (`verify_reasons`, oldest first), each with its fingerprint."""
    failures = [dict(failure) for failure in task.get("ancestor_failures") or []]
    known = {failure["fingerprint"] for failure in failures}

    def remember(print_: str, text: str) -> None:
        if print_ not in known:
            known.add(print_)
            failures.append({"task": task["id"], "fingerprint": print_, "failure": text})

    if task.get("fingerprint") and task.get("gate_failure"):
        remember(task["fingerprint"], task["gate_failure"])
    own = [task["id"], *(task.get("files") or [])]
    for reason in verify_reasons:
        remember(fingerprint(Verdict.REJECTED, reason, own), reason)
    return failures


def ancestors_failure(task: Record, print_: str) -> Record | None:
    """The failure of the task's nearest ancestor that had this fingerprint, if any: then the
    failure survived a split."""
    remembered = reversed(task.get("ancestor_failures") or [])
    return next((failure for failure in remembered if failure["fingerprint"] == print_), None)


def note_repeat(
    task: Record, print_: str, previous: str | None, previous_text: str | None, text: str
) -> None:
    """Record on the task whether this failure (`text`, fingerprint `print_`) repeats one: an
    ancestor's (the failure survived a split: `repeated_from` names that ancestor) or its own last
    one (`previous`, with its text); `repeated_failure` keeps the two texts, the earlier first.
    A failure that repeats none clears them."""
    task.pop("repeated_failure", None)
    task.pop("repeated_from", None)
    ancestor = ancestors_failure(task, print_)
    if ancestor is not None:
        task["repeated_failure"] = [ancestor["failure"], text]
        task["repeated_from"] = ancestor["task"]
    elif previous == print_ and previous_text:
        task["repeated_failure"] = [previous_text, text]


def asks_a_person(task: Record) -> bool:
    """Whether another build of the task would only repeat its last failure, so a person is asked
    before it is built again: that failure was an ancestor's (it survived a split), or VERIFY
    rejected it the same way twice in a row."""
    if task.get("repeated_from"):
        return True
    return task.get("verdict") == Verdict.REJECTED and bool(task.get("repeated_failure"))


def members_to_hold(tasks: Iterable[Record], family: str, running: Iterable[str] = ()) -> list[str]:
    """The family's tasks a question about it holds now: pending ones (killed ones too), except
    those being built, here (`running`) or by another runner sharing a remote (claimed): they are
    held once their build is over, not under a build whose outcome would unblock them again."""
    busy = set(running)
    held = (
        task for task in tasks if in_family(task, family) and is_pending(task) and not task.get("claimed_by")
    )
    return [task["id"] for task in held if task["id"] not in busy]
