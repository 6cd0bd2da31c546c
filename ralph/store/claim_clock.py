"""How old a claim on the shared remote is. The rule is ralph.plan.reading.claim_age_s; this
module gathers its two inputs for one clone:

- when the remote's history says the claim was made: the committer time of the commit that wrote
  it into plan.jsonl. Every runner reads the same time there, and ralph stamps its own commits
  with a time that never goes back along the history (ralph.store.git.objects, commit_dates). The
  commit is found with `git log -S` on the claim's claimed_at across the remote-tracking branch
  and HEAD, merges left out: a claim another runner's merge commit carried into its line was not
  made there (a first-parent walk would take that merge for the claim, and every runner that
  merged before pushing would make a dead runner's claim look new again).
- when this clone first saw the claim, on its own clock.

Both are kept per claim (its item, runner and claimed_at: a renewed claim is a new one) in
.git/ralph/claims-seen.json, so that history is searched once per claim, not in every round, and a
restarted runner remembers what it saw."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ralph.errors import GitError, RalphError
from ralph.plan.document import Record
from ralph.plan.reading import claim_age_s, claimable_id
from ralph.store.git import Repo
from ralph.store.reader import PLAN_NAME

SIGHTINGS_FILE = "claims-seen.json"
SIGHTINGS_KEPT = timedelta(days=7)  # a sighting older than any TTL in use is forgotten


@dataclass(frozen=True)
class ClaimAge:
    """A claim's age by the rule, and what it was judged from."""

    age_s: float | None  # None: the claim's time does not parse (it counts as expired)
    committed_at: str | None  # its commit's time on the remote's history (None: no such commit known)
    seen_at: str | None  # when this clone first saw it (None: not before this look)


class ClaimClock:
    """The ages of the claims on `refs` (the remote-tracking branch and HEAD) as this clone
    judges them; what it learns is kept in `path`."""

    def __init__(self, repo: Repo, refs: Sequence[str], path: Path):
        self.repo, self.refs, self.path = repo, tuple(refs), path
        self._known: dict[str, dict[str, str]] | None = None
        self._not_found: set[str] = set()  # claims no commit on `refs` made, looked for once
        self._newest: list[tuple[datetime, str, str]] | None = None  # see _witness
        self._looked: dict[str, str | None] = {}  # claims in sight in this process: their commits' times

    def age_s(self, item: Record, now: str, remember: bool = True) -> float | None:
        """The claim's age in seconds at `now` (this runner's clock) by the rule; None: expired.
        `remember` False: a claim not seen before is new, and nothing is written down (a look
        that changes nothing, such as `ralph doctor`'s)."""
        return self.judge(item, now, remember).age_s

    def judge(
        self, item: Record, now: str, remember: bool = True, committed_at: str | None = None
    ) -> ClaimAge:
        """`committed_at`: the claim commit's time where it is known without a search (a claim
        ref's own commit, ralph.store.remote.ClaimRef)."""
        known = self._load()
        key = _key(item)
        entry = dict(known.get(key, {}))
        seen = entry.get("seen")
        committed = self.note(item, committed_at)
        if remember and (seen is None or committed != entry.get("committed")):
            entry["seen"] = seen or now
            if committed:
                entry["committed"] = committed
            known[key] = entry
            self._newest = None
            self._save(now)
        age = claim_age_s(item, now, seen or now, committed, self._witness(item))
        return ClaimAge(age, committed, seen)

    def note(self, item: Record, committed_at: str | None = None) -> str | None:
        """A claim in sight: when it was made (its commit's time; None: no commit known), kept in
        this process as a witness for the others' ages (_witness). A look at several claims
        notes them all before judging any."""
        key = _key(item)
        committed = (
            committed_at
            or self._looked.get(key)
            or self._load().get(key, {}).get("committed")
            or self._committed_at(item, key)
        )
        if key not in self._looked or self._looked[key] != committed:
            self._looked[key] = committed
            self._newest = None
        return committed

    def _witness(self, item: Record) -> str | None:
        """The newest time another claim this clone saw was made (its commit's time, or its
        runner's claimed_at): a clock other than the judge's, for claims older than a day
        (ralph.plan.reading.claim_age_s). Another runner's, or the holder's own later claim (two
        claims on one clock a day apart). A runner does not judge its own claims: they are not
        kept."""
        if self._newest is None:  # the two newest claims: one is not the claim judged
            kept = {key: entry.get("committed") for key, entry in self._load().items()}
            made = {key: at or key.split("\t")[-1] for key, at in {**kept, **self._looked}.items()}
            self._newest = sorted(((_utc(at), at, key) for key, at in made.items() if at), reverse=True)[:2]
        key = _key(item)
        return next((at for _, at, other in self._newest if other != key), None)

    def _committed_at(self, item: Record, key: str) -> str | None:
        """The committer time of the commit on `refs` that made the claim (UTC, ISO 8601), or
        None when none did (a claim not committed yet, or a claimed_at that is not text)."""
        stamp = item.get("claimed_at")
        if not isinstance(stamp, str) or key in self._not_found:
            return None
        needle = json.dumps(stamp, ensure_ascii=False)  # as plan.jsonl holds it
        # Newest first, streamed: the search stops at the claim's commit (mostly a recent one)
        # instead of reading the whole history's plans first.
        hits = self.repo.lines(
            "log",
            "--no-merges",
            "--ignore-missing",
            "--format=%H %ct",
            f"-S{needle}",
            *self.refs,
            "--",
            PLAN_NAME,
        )
        try:
            for line in hits:
                commit, _, time_s = line.decode("ascii", "replace").strip().partition(" ")
                after, before = self.repo.objects.files_at([commit, f"{commit}^"], PLAN_NAME)
                if time_s.isdigit() and _holds(after, item, needle) and not _holds(before, item, needle):
                    return datetime.fromtimestamp(int(time_s), UTC).isoformat(timespec="seconds")
        except GitError:  # no such refs yet, or a history git cannot read: claimed_at stands in
            pass
        finally:
            hits.close()
        self._not_found.add(key)
        return None

    def _load(self) -> dict[str, dict[str, str]]:
        if self._known is None:
            try:
                loaded = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError):  # none yet, or unreadable: claims count from now
                loaded = {}
            self._known = {}
            for key, value in loaded.items() if isinstance(loaded, dict) else ():
                if isinstance(value, str):  # written before commit times were kept: a sighting
                    value = {"seen": value}
                if isinstance(value, dict) and isinstance(value.get("seen"), str):
                    self._known[key] = {k: v for k, v in value.items() if isinstance(v, str)}
        return self._known

    def _save(self, now: str) -> None:
        from ralph.store.files import write_atomic

        try:
            oldest = (datetime.fromisoformat(now) - SIGHTINGS_KEPT).isoformat()
        except ValueError:
            oldest = ""
        kept = {key: entry for key, entry in self._load().items() if entry["seen"] >= oldest}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, json.dumps(kept, sort_keys=True).encode())
        except (OSError, RalphError):  # this process still knows; the next start looks afresh
            pass


def _utc(stamp: str) -> datetime:
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _key(item: Record) -> str:
    return "\t".join((claimable_id(item), str(item.get("claimed_by")), str(item.get("claimed_at"))))


def _holds(data: bytes | None, item: Record, needle: str) -> bool:
    """Whether plan.jsonl's bytes hold this claim (its item, runner and claimed_at)."""
    if not data:
        return False
    wanted = needle.encode("utf-8")
    for raw in data.splitlines():
        if wanted not in raw:
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if (
            isinstance(record, dict)
            and record.get("t") == item.get("t")
            and record.get("path" if item.get("t") == "spec" else "id") == claimable_id(item)
            and record.get("claimed_by") == item.get("claimed_by")
            and record.get("claimed_at") == item.get("claimed_at")
        ):
            return True
    return False
