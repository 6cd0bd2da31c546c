"""The shared git remote of runners on several machines: fetch, push without force, and what a
refused push means. The push is the compare-and-swap: git accepts it only when the remote branch
is still where ours started from, so a push another runner beat is refused as a non-fast-forward
(or, when two pushes meet at the remote, as a ref that moved under it); that is a lost race for the
caller to replay, not an error. Anything else (the remote cannot be reached, permissions, a hook)
is retried a bounded number of times with exponential backoff, then raised as one line.

Every call runs the git binary through `Repo`; nothing here ever passes --force or rewrites a
commit."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ralph.errors import RemoteOffline, RemoteRejected
from ralph.store.git import Repo

if TYPE_CHECKING:
    from ralph.store.claim_clock import ClaimClock

# A rejection that only means the remote branch moved since we looked: fetch and try again.
_RACE_WORDS = (
    "non-fast-forward",
    "fetch first",
    "stale info",
    "cannot lock ref",
    "failed to update ref",
    "incorrect old value",
    "failed to lock",
    "reference already exists",
)
# A refusal by the remote itself: it was reached, and said no.
_REFUSAL_WORDS = (
    "permission denied",
    "insufficient permission",
    "unable to create temporary object directory",
    "read-only file system",
    "hook declined",
    "protected branch",
    "authentication failed",
    "403",
)


def configured(repo: Repo, name: str) -> bool:
    """A remote of that name is set in this clone's config (`git remote` lists it): read locally,
    no network."""
    return name in repo.git("remote").splitlines()


class Remote:
    """One remote branch runners share: `name` (e.g. origin) and `branch` (default: the branch
    checked out here)."""

    def __init__(
        self,
        repo: Repo,
        name: str = "origin",
        branch: str | None = None,
        retries: int = 3,
        backoff_s: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.repo, self.name = repo, name
        self.branch = branch or repo.branch() or "main"
        self.retries, self.backoff_s, self.sleep = retries, backoff_s, sleep
        self._claim_clock: ClaimClock | None = None

    @property
    def claim_clock(self) -> ClaimClock:
        """How old the claims on this remote are, as this clone judges them (see ClaimClock)."""
        if self._claim_clock is None:
            from ralph.store.claim_clock import SIGHTINGS_FILE, ClaimClock

            path = self.repo.common_dir() / "ralph" / SIGHTINGS_FILE
            self._claim_clock = ClaimClock(self.repo, (self.tracking_ref, "HEAD"), path)
        return self._claim_clock

    @property
    def tracking_ref(self) -> str:
        return f"refs/remotes/{self.name}/{self.branch}"

    @property
    def seen_ref(self) -> str:
        """ralph's own record of the remote branch's head as this clone last fetched or pushed it
        (the remote-tracking ref is git's: a person's `git fetch` moves it too)."""
        return f"refs/ralph/seen/{self.name}/{self.branch}"

    def fetch(self) -> str | None:
        """Bring the remote branch's commits here; its head, or None when it has no such branch yet.
        ralph never force-pushes, so the branch only moves forward: a head that does not descend
        from the one seen before is a person's rewrite (a force-push, history cleaned of a secret),
        and one gone is a person's deletion. RemoteRejected for either: a runner must not merge
        its old commits back onto it, nor make the branch again."""
        refspec = f"+refs/heads/{self.branch}:{self.tracking_ref}"
        for attempt in range(self.retries + 1):
            code, _, err = self.repo.attempt("fetch", "--quiet", "--no-tags", self.name, refspec)
            if code == 0:
                head = self.repo.commit_of(self.tracking_ref)
                self._check_forward(head)
                return head
            if "couldn't find remote ref" in err.lower():
                self._check_forward(None)
                return None  # an empty remote: the first push makes the branch
            self._wait_or_raise(attempt, "fetch from", err)
        raise AssertionError("unreachable")  # _wait_or_raise raises on the last attempt

    def _check_forward(self, head: str | None) -> None:
        seen = self.repo.commit_of(self.seen_ref)
        where = f"{self.name}'s {self.branch}"
        if seen and head is None:
            raise RemoteRejected(
                f"{where} is gone (deleted since this clone last saw it): ralph does not make it again;"
                " push it back, or run with another --remote"
            )
        rewritten = seen and head and head != seen and not self._descends(seen, head)
        if rewritten and head and not self._descends("HEAD", head):
            # This clone still holds commits the rewrite dropped: merged, they would come back.
            raise RemoteRejected(
                f"{where} was rewritten (force-pushed) since this clone last saw it; ralph never pushes"
                f" over a rewrite: bring this clone in line (git reset --keep {self.name}/{self.branch},"
                " after keeping what you need) and run again"
            )
        if head:
            self._saw(head)

    def _descends(self, ancestor: str, head: str) -> bool:
        return self.repo.attempt("merge-base", "--is-ancestor", ancestor, head)[0] == 0

    def _saw(self, head: str) -> None:
        self.repo.attempt("update-ref", self.seen_ref, head)

    def push(self, commit: str) -> bool:
        """Push `commit` as the remote branch, fast-forward only. True: it is the remote's head now;
        False: another runner moved the branch first (fetch, replay, push again)."""
        target = f"{commit}:refs/heads/{self.branch}"
        for attempt in range(self.retries + 1):
            code, out, err = self.repo.attempt("push", "--porcelain", "--quiet", self.name, target)
            if code == 0:
                self.repo.attempt("update-ref", self.tracking_ref, commit)  # as a fetch would see it
                self._saw(commit)
                return True
            verdict = classify_push(out, err)
            if verdict == "race":
                return False
            self._wait_or_raise(attempt, "push to", f"{out}\n{err}", refused=verdict == "refused")
        raise AssertionError("unreachable")

    def push_branch(self, branch: str) -> bool:
        """Push the local branch `branch` as the remote's branch of that name, fast-forward only,
        once (a draft: losing it to an unreachable remote loses nothing kept here). Whether the
        remote took it."""
        ref = f"refs/heads/{branch}"
        code, _, _ = self.repo.attempt("push", "--porcelain", "--quiet", self.name, f"{ref}:{ref}")
        return code == 0

    def fetch_branch(self, branch: str) -> str | None:
        """The remote's branch `branch` fetched into its remote-tracking ref, once (a draft a
        runner pushed: none here is no failure of the run). The ref's short name
        (`<remote>/<branch>`), or None when the remote has no such branch or cannot be reached."""
        refspec = f"+refs/heads/{branch}:refs/remotes/{self.name}/{branch}"
        code, _, _ = self.repo.attempt("fetch", "--quiet", "--no-tags", self.name, refspec)
        return f"{self.name}/{branch}" if code == 0 else None

    def delete_branch(self, branch: str, expected: str) -> bool:
        """Delete the remote's branch `branch` only while it points at `expected` (a lease: a
        commit someone pushed on it since keeps it; a branch never pushed is not there), once.
        Whether the remote deleted it."""
        ref = f"refs/heads/{branch}"
        lease = f"--force-with-lease={ref}:{expected}"
        code, _, _ = self.repo.attempt("push", "--porcelain", "--quiet", lease, self.name, f":{ref}")
        return code == 0

    def _wait_or_raise(self, attempt: int, what: str, output: str, refused: bool = False) -> None:
        if attempt < self.retries:
            self.sleep(self.backoff_s * 2**attempt)
            return
        refused = refused or any(word in output.lower() for word in _REFUSAL_WORDS)
        reason = _reason(output)
        tries = f"{self.retries + 1} attempt{'s' if self.retries else ''}"
        if refused:
            raise RemoteRejected(f"{what} {self.name} refused ({tries}): {reason}")
        raise RemoteOffline(f"cannot {what.split()[0]} {self.name} ({tries}): {reason}")


def classify_push(out: str, err: str) -> str:
    """What a failed `git push --porcelain` said: 'race' (the remote branch moved), 'refused' (the
    remote said no: a hook, permissions) or 'unreachable'."""
    status = [line for line in out.splitlines() if line.startswith("!")]
    text = (out + "\n" + err).lower()
    if any(word in text for word in _RACE_WORDS):
        return "race"
    if status or any(word in text for word in _REFUSAL_WORDS):
        return "refused"
    return "unreachable"


def _reason(output: str) -> str:
    """What git said, in one line: the push's status and the remote's own words, or git's first
    complaint (the later lines of a failed fetch are advice about access rights)."""
    raw = [line for line in output.splitlines() if line.strip()]
    said = [
        " ".join(line.split("\t")[2:]) if line.startswith("!") else " ".join(line.split())
        for line in raw
        if line.startswith(("!", "remote:")) and "remote: error:" not in line
    ]
    if said:
        return "; ".join(said)[:300]
    lines = [" ".join(line.split()) for line in raw]
    complaints = [line for line in lines if line.lower().startswith(("fatal", "error", "ssh:"))]
    return (complaints or lines or ["no message"])[0][:300]
