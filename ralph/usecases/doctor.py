"""`ralph doctor`: what a killed ralph leaves behind, found and (with `fix`) repaired.

- a lock that is not a regular file (a link, a folder: an agent's doing; ralph makes its locks as
  regular files, and every command that takes one fails on anything else); fixing moves it under
  build/ralph-logs/doctor/ (a link is only removed where it cannot be moved) and puts an empty lock
  file back.
- a stale lock: the plan lock (plan.jsonl.lock) or a construct lock (ralph-construct.lock in a
  work tree's git directory) whose file names a holder that no longer holds it: a process killed
  while it held it (see ralph.store.lock). It blocks nothing; fixing empties the file.
- leftover temp files beside plan.jsonl (`.plan.jsonl.<pid>.tmp`), from a writer killed between
  writing and renaming; fixing removes them under the plan lock, where no writer is at work.
- a missing merge driver registration: .gitattributes names `merge=ralph` but this clone's git
  config lacks merge.ralph.driver; fixing sets it, as `ralph init` does (config only, no commit).
- worktrees left by a killed `ralph construct`: the worktrees ralph recorded making
  (ralph.store.owned; never one that merely looks like its names); fixing saves their uncommitted
  changes as a patch under build/ralph-logs/doctor/, then removes them. Their commits stay on
  their branch.
- build branches ralph recorded making, checked out in no worktree: one merged into HEAD is
  deleted; one with commits HEAD lacks is work: fixing keeps it, and only `force` deletes it,
  printing the commit that `git branch NAME COMMIT` restores. A person's `ralph/...` branch is not
  ralph's to judge.
- records of things a killed run was making that never came to be (or are gone): fixing forgets
  them.
- changes of several steps a killed run (or a full disk) cut in half (ralph.store.intent: a
  build's merge, the loop's commit of a build, PLAN's output): fixing finishes or undoes each, as
  its kind says, and says which. They go first: a finished merge marks its branch merged.
- stale claims on the shared remote (as last fetched; `ralph construct --remote`): a runner that
  died or is stuck holds them, and the others wait until they take its work over; kept.

Nothing is committed. While a construct run is active (its lock held by a live process), its
worktrees and branches are its own: they are not examined, and `fix` refuses, changing nothing."""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralph.errors import RalphError, Refused
from ralph.store import intent, lock, owned, settle
from ralph.store.files import free_name
from ralph.store.git import Repo
from ralph.store.intent import CutBy, Intent, Settled
from ralph.store.reader import PLAN_NAME
from ralph.usecases import leftovers, mergedriver
from ralph.usecases.findings import PATCHES, Finding, FindingKind

TEMP_FILE = re.compile(re.escape(f".{PLAN_NAME}.") + r"(\d+)\.tmp")


@dataclass
class Diagnosis:
    findings: list[Finding]
    running: str | None  # the active construct run ("pid N, since T"), if any

    @property
    def healthy(self) -> bool:
        return all(finding.fixed for finding in self.findings)

    def as_json(self) -> dict[str, Any]:
        return {
            "healthy": self.healthy,
            "construct_running": self.running,
            "findings": [
                {key: getattr(finding, key) for key in ("kind", "subject", "problem", "fix", "fixed")}
                for finding in self.findings
            ],
        }


def doctor(root: Path, fix: bool = False, force: bool = False) -> Diagnosis:
    repo = Repo(root)
    running = _running_construct(repo)
    if fix and running:
        raise Refused(
            f"a ralph construct run is active in this repository ({running}): nothing was changed;"
            " run 'ralph doctor --fix' after it ends"
        )
    findings = [
        *_interrupted(repo),
        *_locks(repo),
        *_temp_files(root),
        *_merge_driver(root),
        *_stale_claims(root),
    ]
    if fix:  # settled first: a merge finished marks its build's branch merged
        _repair(repo, findings, force)
    if running is None:
        findings += leftovers.worktree_findings(repo)
        if fix:  # the worktrees go first: a branch they had checked out is then free to judge
            _repair(repo, findings, force)
        findings += leftovers.branch_findings(repo, force)
    if fix:
        _repair(repo, findings, force)
    return Diagnosis(findings, running)


def finish_interrupted(root: Path) -> list[str]:
    """What a construct run does first: every change of several steps a killed run of this work
    tree left half done is finished or undone. Returns one line per change, saying which."""
    repo = Repo(root)
    return [outcome.line() for outcome in settle.settle_all(repo, root)]


def clean_after_killed_run(root: Path, own_lock: Path) -> list[str]:
    """What a construct run does as it starts, holding its construct lock (`own_lock`): the
    worktrees and ralph/* branches a killed run left are removed, each one's changes or unmerged
    commits saved as a patch under build/ralph-logs/doctor/ first. Nothing is touched while a run
    in another worktree of the repository is active. Returns one line per thing cleaned."""
    repo = Repo(root)
    others = [path for path in _construct_locks(repo) if path.resolve() != own_lock.resolve()]
    if any((state := lock.probe(path)) is not None and state.held for path in others):
        return []
    findings = leftovers.worktree_findings(repo)
    _repair(repo, findings, force=False)
    branches = leftovers.branch_findings(repo, force=False)  # doctor's rule: unmerged work is kept
    _repair(repo, branches, force=False)
    return [finding.line() for finding in findings + branches if finding.fixed or not finding.fixable]


# --- interrupted changes -------------------------------------------------------------------------


def _interrupted(repo: Repo) -> list[Finding]:
    return [
        Finding(
            FindingKind.INTERRUPTED, change.describe(), _cut_short(change), change.settling(), change=change
        )
        for change in intent.interrupted(repo, repo.root)
    ]


def _cut_short(change: Intent) -> str:
    if change.data.get("cut_by") == CutBy.DISK_FULL:
        return "interrupted by a full disk (its ralph run ended DISK_FULL)"
    return "interrupted (its ralph run was killed or failed)"


SETTLED = {
    Settled.FINISHED: "finished it",
    Settled.UNDONE: "undid it",
    Settled.DONE_ALREADY: "found it done, and removed its record",
    Settled.LEFT: "left it",
    Settled.OVERTAKEN: "forgot it",
}


def _settle(repo: Repo, finding: Finding) -> None:
    assert finding.change
    try:
        outcome = settle.settle(repo, finding.change)
    except RalphError as exc:
        finding.fix = f"could not: {exc}"
        return
    if outcome.settled is Settled.LEFT:
        finding.fix = f"left it: {outcome.detail}"
        return
    intent.finish(repo, finding.change)
    finding.fix = SETTLED[outcome.settled] + (f": {outcome.detail}" if outcome.detail else "")
    finding.fixed = True


# --- locks ---------------------------------------------------------------------------------------


def _construct_locks(repo: Repo) -> list[Path]:
    """The construct lock of every work tree of the repository: a run in another worktree of it
    makes worktrees in the same list."""
    common = repo.common_dir()
    return [
        common / lock.CONSTRUCT_LOCK_NAME,
        *sorted(common.glob(f"worktrees/*/{lock.CONSTRUCT_LOCK_NAME}")),
    ]


def _running_construct(repo: Repo) -> str | None:
    for path in _construct_locks(repo):
        state = lock.probe(path)
        if state is not None and state.held:
            return state.holder or "holder unknown"
    return None


def _locks(repo: Repo) -> list[Finding]:
    found = []
    for path in [repo.root / lock.LOCK_NAME, *_construct_locks(repo)]:
        other = lock.not_a_file(path)
        if other is not None:  # ralph makes its locks as regular files: an agent's (or a hand's) doing
            found.append(
                Finding(
                    FindingKind.LOCK_NOT_FILE,
                    _shown(repo.root, path),
                    f"a lock that is not a regular file but {other}: every command that takes it fails",
                    f"moves it to {PATCHES}/ and puts ralph's lock back",
                )
            )
            continue
        state = lock.probe(path)
        if state is not None and state.stale:
            found.append(
                Finding(
                    FindingKind.STALE_LOCK,
                    _shown(repo.root, path),
                    f"stale lock: {state.holder}: ended without letting go (it blocks nothing)",
                    "empties it",
                )
            )
    return found


def _stale_claims(root: Path) -> list[Finding]:
    """Claims on the shared remote (as last fetched) older than the claim TTL, judged as runners
    judge them (by the remote's commit times and this clone's own sightings): their runner died or
    is stuck, and the other runners wait until they take its work over."""
    from ralph.durations import spoken
    from ralph.usecases.claim_listing import stale_claims

    found = []
    for ref, item, age in stale_claims(root):
        held = f"claimed {spoken(age)} ago" if age is not None else f"claimed_at {item.get('claimed_at')!r}"
        host = f" on {item['claimed_on']}" if item.get("claimed_on") else ""  # namesakes differ
        problem = f"stale claim on {item['id']} by runner {item['claimed_by']}{host} ({held})"
        found.append(
            Finding(FindingKind.STALE_CLAIM, ref, problem, "keeps it: the next runner takes it over", False)
        )
    return found


def _shown(root: Path, path: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


# --- temp files ----------------------------------------------------------------------------------


def _temp_files(root: Path) -> list[Finding]:
    plan_lock = lock.probe(root / lock.LOCK_NAME)
    writing = plan_lock is not None and plan_lock.held
    found = []
    for path in sorted(root.glob(f".{PLAN_NAME}.*.tmp")):
        match = TEMP_FILE.fullmatch(path.name)
        if match is None or (writing and _alive(int(match.group(1)))):
            continue  # not ralph's, or being written now
        found.append(
            Finding(
                FindingKind.TEMP_FILE, path.name, "a leftover temporary file of a killed write", "removes it"
            )
        )
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # no such process, or a number no pid can be
        return False
    except PermissionError:  # another user's process
        return True
    return True


# --- the merge driver ----------------------------------------------------------------------------


def _merge_driver(root: Path) -> list[Finding]:
    if mergedriver.unregistered(root) is None:
        return []
    return [
        Finding(
            FindingKind.MERGE_DRIVER,
            mergedriver.ATTRIBUTES_FILE,
            f"merges {PLAN_NAME} with ralph's merge driver, but this clone's git config lacks"
            f" merge.{mergedriver.DRIVER}.driver",
            "registers it in .git/config, as 'ralph init' does",
        )
    ]


# --- repairs -------------------------------------------------------------------------------------


def _repair(repo: Repo, findings: list[Finding], force: bool) -> None:
    for finding in findings:  # first: removing temp files takes the plan lock
        if finding.kind is FindingKind.LOCK_NOT_FILE and not finding.fixed:
            path = _absolute(repo.root, finding.subject)
            lock.restore(path, free_name(repo.root / PATCHES / path.name))
            finding.fixed = True
    temp_files = [f for f in findings if f.kind is FindingKind.TEMP_FILE and not f.fixed]
    if temp_files:
        _remove_temp_files(repo.root, temp_files)
    for finding in findings:
        if (
            finding.fixed
            or not finding.fixable
            or finding.kind in (FindingKind.TEMP_FILE, FindingKind.LOCK_NOT_FILE)
        ):
            continue
        if finding.kind is FindingKind.INTERRUPTED:
            _settle(repo, finding)
        elif finding.kind is FindingKind.STALE_LOCK:
            finding.fixed = lock.clear(_absolute(repo.root, finding.subject))
        elif finding.kind is FindingKind.MERGE_DRIVER:
            mergedriver.register(repo)
            finding.fixed = True
        elif finding.kind in (FindingKind.WORKTREE, FindingKind.BRANCH):
            leftovers.repair(repo, finding)
        elif finding.kind is FindingKind.RECORD:
            assert finding.record
            owned.forget(repo, finding.record)
            if finding.record.folder:  # the temporary folder it was to be made in, if left empty
                with contextlib.suppress(OSError):
                    Path(finding.record.folder).rmdir()
            finding.fixed = True


def _absolute(root: Path, shown: str) -> Path:
    path = Path(shown)
    return path if path.is_absolute() else root / path


def _remove_temp_files(root: Path, findings: list[Finding]) -> None:
    # Under the plan lock no write is under way: every temp file there is a killed write's.
    with lock.plan_lock(root):
        for finding in findings:
            (root / finding.subject).unlink(missing_ok=True)
            finding.fixed = True
