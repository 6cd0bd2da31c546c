"""The shared git remote of runners on several machines: fetch, push without force, and what a
refused push means. The push is the compare-and-swap: git accepts it only when the remote branch
is still where ours started from, so a push another runner beat is refused as a non-fast-forward
(or, when two pushes meet at the remote, as a ref that moved under it); that is a lost race for the
caller to replay, not an error. Anything else (the remote cannot be reached, permissions, a hook)
is retried a bounded number of times with exponential backoff, then raised as one line.

Claims of single items (ralph.usecases.claims) are refs beside the branch: `refs/ralph/claims/<item>`,
each pointing at a commit of its own (no files; its message says who claimed the item, and when),
pushed as a create-only compare-and-swap (`--force-with-lease=<ref>:` with nothing expected):
two runners claiming one item race on that ref alone, never with the branch or with claims of other
items. A stale claim is taken over with the lease on the commit it replaces; a claim goes when the
push that publishes its item's outcome deletes it, in the same atomic push.

After a lost race, a runner publishes in turn: it first creates the ref `refs/ralph/turn/<branch>`
(create-only, as a claim), and its winning push deletes it in the same atomic push. Sixteen
runners publishing at once otherwise each fetched, merged and pushed for every push one of them
won: the rounds lost cost more CPU than the rounds won, and slowed those. The turn is advice, not
a lock the branch needs: a push without it wins as before, and a turn held past TURN_STALE_S (its
runner killed mid-round) is taken over under a lease on it.

Every call runs the git binary through `Repo`; nothing here ever passes --force or rewrites a
commit, and a claim ref is only ever replaced or deleted under a lease on the value read."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from time import monotonic  # a module global: the tests move this clock
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


CLAIMS = "refs/ralph/claims/"  # on the remote: one ref per claimed item
TURNS = "refs/ralph/turn/"  # on the remote: `<branch>`, the runner publishing on it now
# A turn this old (by this runner's clock, since it first saw that turn commit) is its holder's no
# more: a round takes under a second on a local remote, a few on a hosted one.
TURN_STALE_S = 30.0
CLAIM_TRAILER = "Ralph-Claim"  # the claim commit's message: {"item", "by", "at", "host"} as JSON
_COMMIT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # what a held claim's `held_at` must be


@dataclass(frozen=True)
class ClaimRef:
    """A claim on the remote as a ref: its item, its runner, when the runner says it claimed it
    (its clock), the claim commit and that commit's committer time (UTC, ISO 8601)."""

    item: str
    runner: str
    claimed_at: str
    commit: str
    committed_at: str
    host: str | None = None  # the host its runner ran on (None: a claim of a ralph before hosts)
    # A held claim: its build was given back while other runners built tasks it most likely needs
    # (their changes not yet published). Nobody builds it until code is published after `held_at`
    # (the remote head then) and none of `waits_for` is still being built (ralph.usecases.claim_refs).
    held_at: str | None = None
    waits_for: frozenset[str] = frozenset()

    @property
    def held(self) -> bool:
        return self.held_at is not None

    def record(self) -> dict[str, str]:
        """As the plan writes a claim: what claim ages are judged from (ralph.plan.reading)."""
        return {"t": "claim", "id": self.item, "claimed_by": self.runner, "claimed_at": self.claimed_at}


def configured(repo: Repo, name: str) -> bool:
    """A remote of that name is set in this clone's config (`git remote` lists it): read locally,
    no network."""
    return name in repo.git("remote").splitlines()


@dataclass(frozen=True)
class TurnRef:
    """The turn to publish as the remote has it (ralph.usecases.sync): the runner and host its
    commit names, the commit, and that commit's committer time (UTC, ISO 8601)."""

    runner: str | None  # None: a commit ralph did not make
    host: str | None
    commit: str
    committed_at: str


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
        self.won = self.lost = 0  # pushes of the shared branch the remote took, and lost races
        self.claims_won = self.claims_lost = 0  # the same for claim refs
        self.fetches = 0  # fetches made (each a round trip: about a second on a hosted remote)
        self.with_claims = False  # every fetch brings the claim refs too (runners that claim by ref)
        # What this clone last fetched or pushed, read once per change rather than once per look:
        # a runner among sixteen looked at the remote's head, plan and claims hundreds of times
        # per task, each look a git process (the claims are kept only here, and by ralph alone).
        self._head: tuple[str | None] | None = None  # (the remote head,), None: not read yet
        self._head_file: tuple[str, str, bytes | None] | None = None  # (head, path, its bytes)
        self._claims: dict[str, ClaimRef] | None = None
        self._empty_tree: str | None = None
        self.turn: str | None = None  # this runner's turn commit while it holds the turn
        self._wanted_turn: str | None = None  # the turn commit this runner is trying to push
        self._other_turn: tuple[str, float] | None = None  # another's turn commit, first seen then

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

    @property
    def claims_ref(self) -> str:
        """Where this clone keeps the remote's claim refs as last fetched."""
        return f"refs/ralph/remote-claims/{self.name}/"

    def fetch(self, claims: bool | None = None) -> str | None:
        """Bring the remote branch's commits here; its head, or None when it has no such branch yet.
        ralph never force-pushes, so the branch only moves forward: a head that does not descend
        from the one seen before is a person's rewrite (a force-push, history cleaned of a secret),
        and one gone is a person's deletion. RemoteRejected for either: a runner must not merge
        its old commits back onto it, nor make the branch again."""
        refspecs = [f"+refs/heads/{self.branch}:{self.tracking_ref}"]
        if (
            self.with_claims if claims is None else claims
        ):  # the claim refs too, in the same fetch; those gone on the remote go here too
            refspecs = ["--prune", *refspecs, f"+{CLAIMS}*:{self.claims_ref}*"]
        # No auto-maintenance: waiting runners fetch every few seconds, and each fetch started a
        # `git maintenance run --auto` (ralph's commits still start it, as a person's do).
        fetch = ("fetch", "--quiet", "--no-tags", "--no-auto-maintenance", self.name, *refspecs)
        self.fetches += 1
        for attempt in range(self.retries + 1):
            code, _, err = self.repo.attempt(*fetch)
            self._claims = None  # the claim refs as fetched, read again when asked
            if code == 0:
                head, seen = self._read_heads(self.with_claims if claims is None else claims)
                self._check_forward(head, seen)
                return head
            if "couldn't find remote ref" in err.lower():
                self._check_forward(None, self.repo.commit_of(self.seen_ref))
                self._head = (None,)
                return None  # an empty remote: the first push makes the branch
            self._wait_or_raise(attempt, "fetch from", err)
        raise AssertionError("unreachable")  # _wait_or_raise raises on the last attempt

    def head(self) -> str | None:
        """The remote branch's head as this clone last fetched or pushed it (None: no branch)."""
        if self._head is None:
            self._head = (self.repo.commit_of(self.tracking_ref),)
        return self._head[0]

    def file_at_head(self, relpath: str) -> bytes | None:
        """The file `relpath` in the remote head as last fetched (None: not there, or no branch)."""
        head = self.head()
        if head is None:
            return None
        if self._head_file is None or self._head_file[:2] != (head, relpath):
            self._head_file = (head, relpath, self.repo.objects.file_at(head, relpath))
        return self._head_file[2]

    def _read_heads(self, claims: bool) -> tuple[str | None, str | None]:
        """The remote-tracking head and ralph's seen head (and with `claims`, the claim refs as
        just fetched), in one look; the head's committer time goes to the repository's cache (a
        merge made on it is dated from it)."""
        patterns = [self.tracking_ref, self.seen_ref, *([self.claims_ref] if claims else [])]
        found: dict[str, str] = {}
        refs = self._each_ref(*patterns)
        for ref, commit, time_s, _ in refs:
            found[ref] = commit
            if ref == self.tracking_ref and time_s.isdigit():
                self.repo.objects.remember_commit_time(commit, int(time_s))
        if claims:
            self._claims = self._claims_among(refs)
        head = found.get(self.tracking_ref)
        self._head = (head,)
        return head, found.get(self.seen_ref)

    def _each_ref(self, *patterns: str) -> list[tuple[str, str, str, str]]:
        """The refs `patterns` name: name, commit, committer time (unix) and message of each."""
        sep = "%1f"
        out = self.repo.git(
            "for-each-ref",
            f"--format=%(refname){sep}%(objectname){sep}%(committerdate:unix){sep}%(contents)%1e",
            *patterns,
        )
        found = []
        for entry in out.split("\x1e"):
            fields = entry.strip("\n").split("\x1f")
            if len(fields) == 4:
                found.append((fields[0], fields[1], fields[2], fields[3]))
        return found

    def _check_forward(self, head: str | None, seen: str | None) -> None:
        if head is not None and head == seen:
            return  # nothing new since this clone last looked
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

    def _pushed(self, commit: str, dropped: dict[str, str], marked: dict[str, tuple[str, str]]) -> None:
        """The remote took `commit` (deleted the `dropped` claims, moved the `marked` ones): the
        tracking ref, the seen head and the claims kept here as a fetch would leave them, in one
        ref transaction."""
        lines = [f"update {self.tracking_ref} {commit}", f"update {self.seen_ref} {commit}"]
        lines += [f"update {self.claims_ref}{item} {new}" for item, (_, new) in marked.items()]
        self._update_refs(lines + self._deletions(dropped))
        self._head = (commit,)

    def push(
        self,
        commit: str,
        drop: dict[str, str] | None = None,
        keep: dict[str, str] | None = None,
        mark: dict[str, tuple[str, str]] | None = None,
    ) -> bool:
        """Push `commit` as the remote branch, fast-forward only; with `drop` (item -> its claim
        commit), delete those claim refs in the same atomic push, each only while it is that
        commit; with `keep`, push only while those claim refs are still those commits (pushed
        as they are: a claim another runner took over meanwhile turns the push away); with `mark`
        (item -> (its claim commit, the new one)), move those claim refs, each under a lease on
        the commit it was. True: it is the remote's head now (and the claims are as asked);
        False: another runner moved the branch first, or a claim is no longer that commit (fetch,
        replay, push again)."""
        drop, mark = drop or {}, mark or {}
        keep = {item: c for item, c in (keep or {}).items() if item not in drop and item not in mark}
        expected = [*drop.items(), *keep.items(), *((item, was) for item, (was, _) in mark.items())]
        leases = [f"--force-with-lease={CLAIMS}{item}:{c}" for item, c in expected]
        targets = [
            f"{commit}:refs/heads/{self.branch}",
            *(f":{CLAIMS}{item}" for item in drop),
            *(f"{c}:{CLAIMS}{item}" for item, c in keep.items()),
            *(f"{new}:{CLAIMS}{item}" for item, (_, new) in mark.items()),
        ]
        if self.turn:  # the turn ends with the push it was for
            leases.append(f"--force-with-lease={self.turn_ref}:{self.turn}")
            targets.append(f":{self.turn_ref}")
        atomic = ["--atomic", *leases] if leases else []
        if not self._try_push(*atomic, self.name, *targets):
            self.lost += 1
            return False
        self._pushed(commit, drop, mark)
        self.won += 1
        self.turn = None
        return True

    def _try_push(self, *args: str) -> bool:
        """`git push --porcelain --quiet ARGS`, retried while the remote cannot be reached: True
        when the remote took it, False when it lost a race (a ref moved, or a lease failed); an
        unreachable or refusing remote raises after the retries."""
        for attempt in range(self.retries + 1):
            code, out, err = self.repo.attempt("push", "--porcelain", "--quiet", *args)
            if code == 0:
                return True
            verdict = classify_push(out, err)
            if verdict == "race":
                return False
            self._wait_or_raise(attempt, "push to", f"{out}\n{err}", refused=verdict == "refused")
        raise AssertionError("unreachable")

    def _empty(self) -> str:
        """The empty tree, which a claim's and a turn's commits hold: made once."""
        if self._empty_tree is None:
            self._empty_tree = self.repo.git("mktree", stdin=b"").strip()
        return self._empty_tree

    # --- the turn to publish ------------------------------------------------------------------
    @property
    def turn_ref(self) -> str:
        return f"{TURNS}{self.branch}"

    def take_turn(self, runner: str, host: str | None = None) -> bool:
        """Take the turn to publish on the branch: create the turn ref (nothing may be there), or
        replace a turn that went stale. True: this runner holds it (`turn`); False: another does."""
        if self.turn is not None:
            return True
        if self._wanted_turn is None:  # one commit per turn taken: a commit seen again is not stale
            said = json.dumps({"turn": self.branch, "by": runner, **({"host": host} if host else {})})
            message = f"ralph: {runner}'s turn to publish on {self.branch}\n\n{said}\n"
            self._wanted_turn = self.repo.objects.commit_tree(self._empty(), None, message)
        if not self._push_turn(self._wanted_turn, None):
            stale = self._stale_turn()
            if stale is None or not self._push_turn(self._wanted_turn, stale):
                return False
        self.turn, self._wanted_turn, self._other_turn = self._wanted_turn, None, None
        return True

    def _push_turn(self, commit: str, replaces: str | None) -> bool:
        lease = f"--force-with-lease={self.turn_ref}:{replaces or ''}"
        return self._try_push(lease, self.name, f"{commit}:{self.turn_ref}")

    def _stale_turn(self) -> str | None:
        """Another runner's turn commit once this runner has seen that same commit hold the turn
        for TURN_STALE_S (looked at again no more often than every half of that); else None."""
        now = monotonic()
        if self._other_turn is not None and now - self._other_turn[1] < TURN_STALE_S / 2:
            return None
        holder = self.turn_holder()
        if holder is None:  # the remote did not say: judged at the next look
            return None
        if self._other_turn is None or self._other_turn[0] != holder:
            self._other_turn = (holder, now) if holder else None
            return None
        return holder if now - self._other_turn[1] >= TURN_STALE_S else None

    def turn_holder(self) -> str | None:
        """The turn commit on the remote now ("": nobody's turn; None: the remote did not say), asked
        of the remote."""
        code, out, _ = self.repo.attempt("ls-remote", self.name, self.turn_ref)
        if code != 0:
            return None
        fields = out.split()
        return fields[0] if fields else ""

    def turn_now(self) -> TurnRef | None:
        """Who has the turn to publish on the remote now, for a person to read (None: nobody, or
        the remote did not say); its commit fetched without a ref made here."""
        holder = self.turn_holder()
        if not holder:
            return None
        fetch = ("fetch", "--quiet", "--no-tags", "--no-auto-maintenance", "--no-write-fetch-head")
        code, _, _ = self.repo.attempt(*fetch, self.name, self.turn_ref)
        if code == 0:
            code, out, _ = self.repo.attempt("log", "-1", "--format=%ct%x00%B", holder)
        if code != 0:  # the turn ended, or changed hands, since the look: nobody's that one now
            return None
        time_s, _, message = out.partition("\0")
        said = _turn_said(message)
        committed = datetime.fromtimestamp(int(time_s), UTC).isoformat(timespec="seconds")
        by, host = said.get("by"), said.get("host")
        return TurnRef(
            by if isinstance(by, str) else None, host if isinstance(host, str) else None, holder, committed
        )

    def still_my_turn(self) -> bool:
        """Whether the remote still has this runner's turn (another may have taken a stale one
        over): a push of ours lost with it held. Forgets a turn that is gone (a remote that did not
        say leaves it held: the next push finds out)."""
        if self.turn is not None and self.turn_holder() not in (self.turn, None):
            self.turn = None
        return self.turn is not None

    def end_turn(self) -> None:
        """Give the turn back (the rounds ended without a push of the branch: nothing to publish,
        or an error), under a lease on it; once, and never an error (it goes stale otherwise)."""
        if self.turn is None:
            return
        lease = f"--force-with-lease={self.turn_ref}:{self.turn}"
        self.repo.attempt("push", "--porcelain", "--quiet", lease, self.name, f":{self.turn_ref}")
        self.turn = None

    # --- claim refs ----------------------------------------------------------------------------
    def claim_refs(self) -> dict[str, ClaimRef]:
        """The claim refs on the remote as this clone last fetched them (fetch(claims=True)), by item."""
        if self._claims is None:
            self._claims = self._read_claim_refs()
        return dict(self._claims)

    def _read_claim_refs(self) -> dict[str, ClaimRef]:
        return self._claims_among(self._each_ref(self.claims_ref))

    def _claims_among(self, refs: list[tuple[str, str, str, str]]) -> dict[str, ClaimRef]:
        found: dict[str, ClaimRef] = {}
        for ref, commit, time_s, message in refs:
            if not ref.startswith(self.claims_ref):
                continue
            said = _claim_said(message)
            item = ref.removeprefix(self.claims_ref)
            if said is None or said.get("item") != item or not time_s.isdigit():
                continue  # not a claim ralph made: no runner's, and none to judge
            committed = datetime.fromtimestamp(int(time_s), UTC).isoformat(timespec="seconds")
            host = said.get("host")
            held_at, waits_for = _hold_said(said)
            found[item] = ClaimRef(
                item,
                str(said.get("by")),
                str(said.get("at")),
                commit,
                committed,
                host if isinstance(host, str) else None,
                held_at,
                waits_for,
            )
        return found

    def make_claim(
        self,
        item: str,
        runner: str,
        at: str,
        replaces: ClaimRef | None = None,
        host: str | None = None,
        hold: tuple[str, frozenset[str]] | None = None,
    ) -> str:
        """A claim commit (object store only): no files; its parent the claim it replaces. `host`:
        where its runner runs (runners of one name on two hosts are two runners). `hold`: the
        claim is held (ClaimRef.held_at, waits_for), not built."""
        tree = self._empty()
        fields: dict[str, object] = {"item": item, "by": runner, "at": at, **({"host": host} if host else {})}
        if hold is not None:
            fields |= {"held_at": hold[0], "waits_for": sorted(hold[1])}
        said = json.dumps(fields, sort_keys=True)
        message = f"ralph: {_claim_title(item, replaces, hold)} ({runner})\n\n{CLAIM_TRAILER}: {said}\n"
        return self.repo.objects.commit_tree(tree, replaces.commit if replaces else None, message)

    def push_claim(
        self, item: str, commit: str, replaces: str | None = None, branch_at: str | None = None
    ) -> bool:
        """Push the claim `commit` as the item's claim ref: created (nothing may be there), or, with
        `replaces`, only while the ref is that commit (a stale claim taken over). With `branch_at`,
        only while the branch is still at that commit too, in one atomic push (the branch pushed
        as it is): won, nothing was published since. True: the claim is this runner's; False:
        another runner's push on that ref (or on the branch) came first."""
        ref = f"{CLAIMS}{item}"
        options = [f"--force-with-lease={ref}:{replaces or ''}"]
        targets = [f"{commit}:{ref}"]
        if branch_at is not None:
            branch = f"refs/heads/{self.branch}"
            options += ["--atomic", f"--force-with-lease={branch}:{branch_at}"]
            targets.append(f"{branch_at}:{branch}")
        if not self._try_push(*options, self.name, *targets):
            self.claims_lost += 1
            return False
        self.repo.attempt("update-ref", f"{self.claims_ref}{item}", commit)
        self._claims = None
        self.claims_won += 1
        return True

    def drop_claims(self, drop: dict[str, str]) -> bool:
        """Delete the claim refs `drop` names (item -> claim commit), each only while it is that
        commit, in one atomic push. True: gone; False: one was taken over meanwhile (none went)."""
        if not drop:
            return True
        leases = [f"--force-with-lease={CLAIMS}{item}:{commit}" for item, commit in drop.items()]
        targets = [f":{CLAIMS}{item}" for item in drop]
        if not self._try_push("--atomic", *leases, self.name, *targets):
            return False
        self._forget_claims(drop)
        return True

    def _forget_claims(self, drop: dict[str, str]) -> None:
        self._update_refs(self._deletions(drop))

    def _deletions(self, drop: dict[str, str]) -> list[str]:
        return [f"delete {self.claims_ref}{item}" for item in drop]

    def _update_refs(self, lines: list[str]) -> None:
        """Change refs kept here in one ref transaction; the claims read again when next asked."""
        if lines:
            self.repo.git("update-ref", "--stdin", stdin=("\n".join(lines) + "\n").encode())
        self._claims = None

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


def _turn_said(message: str) -> dict[str, object]:
    """What a turn commit's message records (its last line, as JSON); {} for one ralph did not make."""
    lines = message.strip().splitlines()
    try:
        said = json.loads(lines[-1]) if lines else {}
    except ValueError:
        return {}
    return said if isinstance(said, dict) and "turn" in said else {}


def _claim_title(item: str, replaces: ClaimRef | None, hold: tuple[str, frozenset[str]] | None) -> str:
    if hold is not None:
        return f"hold {item}: it waits for {', '.join(sorted(hold[1])) or 'code'} to be published"
    if replaces is None:
        return f"claim {item}"
    return f"claim {item} again" if replaces.held else f"take {item} over from {replaces.runner}"


def _hold_said(said: dict[str, object]) -> tuple[str | None, frozenset[str]]:
    """A held claim's `held_at` and `waits_for` as its message records them (None: not held).
    `held_at` is a commit id or nothing: it is handed to git, and another runner wrote it."""
    held_at, waits = said.get("held_at"), said.get("waits_for")
    if not isinstance(held_at, str) or not _COMMIT_ID.fullmatch(held_at):
        return None, frozenset()
    return held_at, frozenset(item for item in waits if isinstance(item, str)) if isinstance(
        waits, list
    ) else frozenset()


def _claim_said(message: str) -> dict[str, object] | None:
    """The claim a claim commit's message records (its Ralph-Claim trailer), or None."""
    for line in message.splitlines():
        if line.startswith(f"{CLAIM_TRAILER}: "):
            try:
                said = json.loads(line.removeprefix(f"{CLAIM_TRAILER}: "))
            except ValueError:
                return None
            return said if isinstance(said, dict) else None
    return None


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
