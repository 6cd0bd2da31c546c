"""Whether a spec's check is due: the spec check (ralph/loop/stages/check.py) records on the spec's
record what a check that found nothing missing read, HEAD and the spec's SHA-256; while the spec is
as it was and nothing but plan.jsonl changed since, the spec is met and `ralph construct` ends
COMPLETE without another run. The loop and the read commands (`ralph query stage`, `query next`,
`status`) ask this one module, so they cannot disagree; it loads no part of the loop."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ralph.errors import GitError
from ralph.plan.document import Record
from ralph.plan.reading import PlanReader
from ralph.store.git import Repo
from ralph.store.reader import PLAN_NAME


def spec_digest(root: Path, spec: str) -> str:
    """The SHA-256 of the spec's text ('' when it cannot be read: such a spec is never 'as it was')."""
    try:
        return hashlib.sha256((root / spec).read_bytes()).hexdigest()
    except OSError:
        return ""


def already_met(repo: Repo, plan: PlanReader, spec: str, digest: str) -> bool:
    """Whether a check that found nothing missing read this spec and, but for plan.jsonl, this code."""
    line = plan.spec_line(spec)
    return met_as_recorded(repo, line.record if line else {}, digest)


def met_as_recorded(repo: Repo, record: Record, digest: str) -> bool:
    """already_met, given the spec's record (its `checked_*` fields) as read."""
    checked = record.get("checked_commit")
    if not checked or not digest or record.get("checked_spec") != digest:
        return False
    try:
        changed = repo.git("diff", "--name-only", "-z", checked, "HEAD", "--").split("\0")
    except GitError:  # the commit is gone (history rewritten): check again
        return False
    return not [path for path in changed if path and path != PLAN_NAME]


def met(root: Path, plan: PlanReader, spec: str) -> bool:
    """already_met for the spec in the repository at `root`, as it is now."""
    return already_met(Repo(root), plan, spec, spec_digest(root, spec))
