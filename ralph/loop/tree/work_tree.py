"""The work tree a stage acts in: what changed in it since the loop's last step and who changed it,
the loop's commits, what is set aside (patches, drafts), the repositories an agent nested in it,
and the worktrees ralph makes beside it (a verifier's checkout, a build's own worktree), owned by
record (ralph.store.owned). A build in a worktree has a WorkTree of its own (`for_worktree`): its
`root` there, the repository the loop runs in its `home`."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from ralph.errors import GitError, PlanInvalid, disk_full
from ralph.loop.observe.console import Console
from ralph.loop.observe.journal import Journal
from ralph.loop.process.signals import deferred_signals
from ralph.loop.runs.permissions import Snapshot
from ralph.loop.share.coordinator import Coordinator, Solo
from ralph.loop.tree import beside_changes
from ralph.loop.tree.checkouts import Checkout, Checkouts
from ralph.loop.tree.plan_access import PLAN_FILE, PlanAccess
from ralph.plan.document import Record
from ralph.plan.plan import Plan
from ralph.plan.records import TaskView, Verdict
from ralph.secrets import redact
from ralph.store import intent, owned, settle
from ralph.store.git import Repo
from ralph.store.gitlinks import Link
from ralph.store.integrate import Integration, integrate
from ralph.store.intent import CutBy, IntentKind
from ralph.store.lock import RALPH_FILES
from ralph.store.owned import Owned, OwnedKind
from ralph.text import shown_path

BUILD_BRANCH_PREFIX = "ralph/"  # a build in a worktree of its own works on ralph/<task id>


class CheckoutBehind(Exception):  # noqa: N818 (a signal to the parallel builds, not an error)
    """A build's worktree the loop's branch moved past (a neighbour merged) before any agent ran
    in it: made again from the new HEAD rather than built on the old one."""


# Verdicts a missing neighbour's change can cause (its code not there to apply onto, import or pass
# tests with); a violation or a broken plan is the attempt's own doing.
STALE_VERDICTS = frozenset(
    {Verdict.GATE_FAILED, Verdict.NOT_DONE, Verdict.NO_CHANGES, Verdict.HOOK_REFUSED, Verdict.AGENT_ERROR}
)


class Keep(StrEnum):
    """What the work tree does with a build attempt's changes (settle_attempt)."""

    IN_PLACE = "in_place"  # left where they are: the next attempt (or its caller) goes on from them
    COMMIT = "commit"  # the build's files committed, after the plan recorded it
    DRAFT = "draft"  # kept on the task's draft branch (recorded on the task) and as a patch, undone
    DRAFT_UNRECORDED = "draft_unrecorded"  # the same, not recorded on the task
    DRAFT_IF_CHANGED = "draft_if_changed"  # the same, when the run changed any code
    PATCH = "patch"  # kept as a patch beside the run's log, undone


class FailureOnTree(NamedTuple):
    """What the work tree says of a failed build attempt (judge_failure)."""

    stale: bool = False  # waived: others' work, missing from its base, may settle it
    deferred: bool = False  # waived: the agent could not do it on this code, others may move it
    from_head: bool = False  # counted, and its retry starts from the branch as it is


@dataclass
class BuildCheckout:
    """A build's own worktree: its work tree, its branch, the commit it started from and the
    plan.jsonl it started with (the base its plan changes are merged from)."""

    tree: WorkTree
    branch: str
    start: str
    plan_base: bytes


class WorkTree:
    def __init__(
        self,
        plan: PlanAccess,
        journal: Journal,
        console: Console,
        user_dirty: frozenset[str] = frozenset(),
        coordinator: Coordinator | None = None,
    ):
        self.root = self.home = plan.root
        self.repo, self.plan = plan.repo, plan
        self.home_repo = plan.repo  # the repository the loop runs in, shared with builds' work trees
        self.journal, self.console = journal, console
        # Paths no agent run is known to have changed: dirty before the loop started, or changed
        # meanwhile by someone else (a person, a hook). Never committed, set aside or reverted.
        self.user_dirty = user_dirty
        self.beside_seen = 0  # the changes a person made beside the run committed so far (ledger bytes)
        self.building: set[str] = set()  # what the current build's earlier attempts left changed
        # A build in a worktree: the commit it started from, and whether other builds run beside it.
        self.base: str | None = None
        self.neighbours_running: Callable[[], bool] = lambda: False
        self.renew_if_behind = False  # a fresh worktree behind HEAD at its first attempt is made again
        self.agents_elsewhere = False  # parallel builds under way: no agent works in this tree
        self._stale_waived: set[tuple[str, str]] = set()  # (task, code_tree): each waived once, shared
        self.deferred: dict[str, str] = {}  # serial builds deferred: task -> the code they could not build on
        # Who takes which item: this run alone, or runners sharing a git remote (construct sets it).
        self.coordinator: Coordinator = coordinator or Solo()
        # git adds and removes worktrees one at a time: one being added while another is read
        # half-made fails ("failed to read .git/worktrees/<name>/commondir").
        self._worktrees = threading.Lock()
        self._count = threading.Lock()
        self._nested: list[str] | None = None  # nested_repos, once asked

    def for_worktree(self, path: Path) -> WorkTree:
        """The work tree of a build in the worktree at `path`: its changes, commits and plan
        there; the waivers, the locks and the coordinator shared."""
        import copy

        child = copy.copy(self)
        child._nested = None  # its own, asked of its own checkout
        child.repo = Repo(path)
        child.root, child.plan = path, self.plan.at(path, child.repo)
        child.user_dirty, child.building = frozenset(), set()
        return child

    def rel(self, log: Path) -> Path:
        """A log's path relative to the repository the loop runs in."""
        return log.relative_to(self.home) if log.is_absolute() else log

    @property
    def in_worktree(self) -> bool:
        return self.root != self.home

    def behind(self) -> bool:
        """A build in a worktree whose base the loop's branch has moved past with code (a neighbour
        merged): commits that change plan.jsonl alone (a claim, a verdict) leave it where it was."""
        if not self.in_worktree or self.base is None:
            return False
        head = self.home_repo.head()
        return head is not None and self.home_repo.objects.code_differs(self.base, head)

    def retry_from_head(self, verdict: Verdict) -> bool:
        """Whether a counted failure's retry starts afresh from HEAD (its code kept as a draft)
        rather than in place: a build in a worktree that is behind, failed in a way a neighbour's
        change can settle. Other failures (a nested repository, a violation) are fixed in place."""
        return verdict in STALE_VERDICTS and self.behind()

    def may_be_stale(self, task_id: str) -> bool:
        """A build in a worktree behind HEAD or beside running builds, or in a runner's work tree
        that lacks what other runners published, not yet waived on its base's code."""
        if not self.in_worktree:
            return self._lacks_published(task_id)
        if self.base is None or self._waived(task_id, self.base):
            return False
        return self.behind() or self.neighbours_running()

    def _waived(self, task_id: str, base: str) -> bool:
        return (task_id, self.home_repo.objects.code_tree(base)) in self._stale_waived

    def _waive(self, task_id: str, base: str) -> bool:
        """Waive the task's failure on `base`'s code, once: False when it was waived there already.
        Keyed by the code, not the commit: the branch moves with every claim and verdict, and a
        waiver each of those re-armed would let a failing build run again forever uncounted."""
        key = (task_id, self.home_repo.objects.code_tree(base))
        with self._count:
            if key in self._stale_waived:
                return False
            self._stale_waived.add(key)
        return True

    def _lacks_published(self, task_id: str, waive: bool = False) -> bool:
        """A build in this work tree while other runners published code it lacks (checked on the
        remote: a fetch) or build theirs, the first time for the task on this code (the code moves
        only when this runner catches up with a build, so the waits end). `waive`: count this as
        that first time."""
        head = self.repo.head()
        if head is None or self._waived(task_id, head):
            return False
        if not (self.coordinator.others_published() or self.coordinator.others_building()):
            return False
        return self._waive(task_id, head) if waive else True

    def stale_base(self, task_id: str, verdict: Verdict) -> bool:
        """Whether this failed attempt is waived as StaleBase: a verdict a neighbour's missing
        change can cause, on a base whose code the branch has moved past or beside running
        neighbours, and the first such failure of the task on this code (each code once: the code
        moves only by merges, so a task is waived at most once per merge and the waits end). A
        failure waived beside running neighbours is judged once they are done (ParallelBuilds):
        counted after all when none of them changed the code."""
        if verdict not in STALE_VERDICTS:
            return False
        if not self.in_worktree:  # a runner sharing a remote: what others published may settle it
            return self._lacks_published(task_id, waive=True)
        if self.base is None:
            return False
        if not (self.behind() or self.neighbours_running()):
            return False
        return self._waive(task_id, self.base)

    def may_defer(self, task_id: str) -> bool:
        """Whether a build the agent could not do on this code (Verdict.AGENT_ERROR) while other
        tasks are ready goes uncounted, to be built again once the code has moved (their merges,
        wait_for_code): the first time on this code only. False when it was deferred on this code
        already."""
        head = self.home_repo.head()
        return head is not None and self._waive(task_id, head)

    def wait_for_code(self, task_id: str) -> None:
        """The task goes after the other ready tasks until the code moves: built again on the same
        code, the agent would most likely say the same."""
        head = self.home_repo.head()
        if head is not None:
            with self._count:
                self.deferred[task_id] = self.home_repo.objects.code_tree(head)
        self.coordinator.hold(task_id)  # runners: not claimed again until code is published

    def waiting_for_code(self) -> set[str]:
        """The deferred tasks whose code has not moved since: not built again yet."""
        if not self.deferred:  # the usual case: no git asked on every look at the ready tasks
            return set()
        head = self.home_repo.head()
        now = self.home_repo.objects.code_tree(head) if head else ""
        with self._count:  # in place: a build's work tree shares it
            for task in [task for task, code in self.deferred.items() if code != now]:
                del self.deferred[task]
            return set(self.deferred)

    def snapshot(self) -> Snapshot:
        from ralph.store import beside
        from ralph.store.gitlinks import read_links

        at = beside.size(self.repo)  # first: a change written down meanwhile is after it
        head, branch, changed = self.repo.changes.work_state()
        nested = self.nested_repos()
        links = read_links(self.root, [*self.repo.changes.gitlinks(), *nested])
        dirty = frozenset(changed - self.user_dirty)
        return Snapshot(head, branch, dirty, at, frozenset(changed), links, frozenset(nested))

    def nested_repos(self) -> list[str]:
        """The git repositories in this work tree that are no submodule (a person's clone inside
        it, an embedded repository), as they were when first asked: watched like submodules' links
        (ralph.store.gitlinks). One an agent makes is no person's: ralph unnests it (unnest)."""
        if self._nested is None:
            from ralph.loop.process.sandbox import UNSCANNED_FOLDERS
            from ralph.loop.runs.agent_process import LOG_DIR

            logs = f"{LOG_DIR.as_posix()}/"  # what ralph keeps beside its logs is not the person's
            found = self.repo.changes.nested_repos(UNSCANNED_FOLDERS)
            self._nested = [path for path in found if not f"{path}/".startswith(logs)]
        return self._nested

    def restore_links(self, before: frozenset[Link], log_path: Path) -> None:
        """Each submodule's `.git` link (and the config it leads to) put back as `before` has it;
        what an agent put in its place moves beside the log, as <log>.submodules/<path>/.git."""

        from ralph.store.gitlinks import changed_links, read_link, through_a_link

        was = {link.path: link for link in before}
        for path in changed_links(before, frozenset(read_link(self.root, path) for path in was)):
            link, dot_git = was[path], self.root / path / ".git"
            kept = self.home / log_path.with_suffix(".submodules") / path / ".git"
            while (planted := through_a_link(self.root, path)) is not None:  # the link, not where it leads
                _keep(planted, kept.with_name(f"{planted.name}.link"))
            if os.path.lexists(dot_git) and read_link(self.root, path)[:4] != link[:4]:
                _keep(dot_git, kept)
                self.journal.event("submodule_link_kept", folder=path, kept=str(self.rel(kept)))
            if link.kind == "file":
                dot_git.parent.mkdir(parents=True, exist_ok=True)
                dot_git.write_bytes(link.content)
            if link.config is not None:
                _put_back_config(self.root / path, link)

    def commit_beside(self, earlier_runs: bool = False) -> None:
        """Commit what a person changed with ralph's commands beside the run (ralph.store.beside)
        since last asked, under their messages; `earlier_runs`: what they changed beside a run
        that ended before committing it too (at the start of a run, which then starts the
        ledger afresh)."""
        from ralph.store import beside

        persons = beside_changes.since(self.repo, self.beside_seen, any_run=earlier_runs)
        self.commit_persons_changes(persons)
        if earlier_runs:
            beside.forget(self.repo)
            self.beside_seen = 0

    def commit_persons_changes(
        self, persons: beside_changes.PersonsChanges, onto: Plan | None = None
    ) -> None:
        """A person's changes made beside the run, in a commit of their own under their messages,
        before anything of the run's: the plan `onto` (HEAD's), with only their records changed."""
        from ralph.plan.loader import load
        from ralph.store.lock import plan_lock

        self.beside_seen = max(self.beside_seen, persons.end)
        if not persons.keys:
            return
        with plan_lock(self.root):  # HEAD moves: never under a build's merge (ralph.store.integrate)
            if onto is None:
                onto = Plan(load(self.repo.objects.file_at_head(PLAN_FILE) or b"", PLAN_FILE))
            theirs = beside_changes.with_persons_changes(onto, self.plan.read(), persons)
            commit, _ = self.repo.index.commit_file(PLAN_FILE, theirs.doc.to_bytes(), persons.message())
        self.journal.event("persons_changes", keys=sorted(persons.keys), commit=commit)
        subject = persons.message().splitlines()[0]
        self.console.event(f"committed a change made beside the run: {subject}")

    @contextmanager
    def build_recorded(self, task_id: str, record: Record) -> Iterator[None]:
        """A build in this work tree, recorded from its first run to its end (ralph.store.intent,
        BUILD): a kill in between is undone by the next start, its work kept on the task's draft,
        never taken for built. A build in a worktree needs none: the worktree is recorded."""
        if self.in_worktree:
            yield
            return
        dirty = sorted(self.user_dirty)  # the person's own changed files: never the build's
        pending = intent.begin(
            self.repo,
            IntentKind.BUILD,
            self.root,
            task=task_id,
            head=self.repo.head(),
            record=record,  # the task as it was: what an undo puts back
            user_dirty=dirty,
        )
        try:
            yield
        except BaseException as exc:
            if disk_full(exc):  # cut off, as by a kill: the next start undoes it (its work on the draft)
                with contextlib.suppress(OSError):  # said where there is room for it (doctor names it)
                    intent.update(self.repo, pending, cut_by=str(CutBy.DISK_FULL))
                raise
            intent.finish(self.repo, pending)  # set aside, or stopped: settled by this process
            raise
        intent.finish(self.repo, pending)  # built and committed, or its attempts recorded

    def reset_plan(self, keep_as: Path) -> None:
        """plan.jsonl back as last committed, the run's uncommitted version kept at `keep_as`;
        what a person changed beside the run with ralph's commands is committed first, under
        their messages: theirs, never reset with the run's."""
        with contextlib.suppress(PlanInvalid):  # a plan the run left broken: nothing to read theirs from
            self.commit_beside()
        self.plan.keep_uncommitted(keep_as)

    def keep_replaced_plan(self, log: Path, old: Plan) -> None:
        """plan.jsonl as a run left it, beside its log, before the plan as it was goes back: a hand
        edit made meanwhile (nobody can tell whose) is never lost."""
        kept = self.plan.keep_beside_log(log, unless=old.doc.to_bytes())
        if kept is not None:
            self.journal.event("plan_kept", path=str(self.rel(kept)))

    def changed_paths(self) -> set[str]:
        """What the loop's agents changed since the last commit (never the user's dirty paths)."""
        return {
            path for path in self.repo.changes.paths() - self.user_dirty if not RALPH_FILES.fullmatch(path)
        }

    def commit(self, message: str, paths: set[str] | None = None, task: str | None = None) -> str | None:
        """Commit what the loop's agents are known to have changed: `paths` (a build's files, as
        measured around its runs), else plan.jsonl alone, which is all the other stages change;
        any other change is left unstaged with a warning. The spending goes into the loop's own
        plan first; a build in a worktree leaves that to its merge, instead of waiting here for
        the plan lock that other builds' merges hold. `task`: the commit is that task's build,
        recorded on it here (in the loop's own work tree; a worktree's is recorded by its merge).

        Recorded first (ralph.store.intent, COMMIT): a kill between staging and committing is
        committed by the next start, never left staged with the plan saying the task is built."""
        if not self.in_worktree:
            self.plan.save_spending()
        if paths is None:
            self.leave_foreign_changes("beside the loop's commit")
        paths = {PLAN_FILE} if paths is None else paths
        if PLAN_FILE in paths:  # the agents may have written it by hand: nothing secret is committed
            self.plan.redact()
        message = redact(message)  # it can quote a name or an issue
        # A worktree's commit is not recorded: the worktree and its branch are (ralph.store.owned),
        # and clean-up keeps what an interrupted commit there left as a patch.
        pending = None
        if not self.in_worktree:
            head, paths_listed = self.repo.head(), sorted(paths)
            pending = intent.begin(
                self.repo,
                IntentKind.COMMIT,
                self.root,
                head=head,
                paths=paths_listed,
                message=message,
                task=task,
            )
        commit, files = self.repo.index.commit_paths(paths, message)
        if pending is not None:
            if commit and task:
                settle.record_build_commit(self.root, task, commit)
            intent.finish(self.repo, pending)
        self.building = set()
        if commit:
            shown = [shown_path(path) for path in files]
            self.journal.event("commit", commit=commit, message=message.splitlines()[0], files=shown)
        return commit

    def leave_foreign_changes(self, when: str, among: Iterable[str] | None = None) -> bool:
        """Changes no agent run is known to have made (`among` them, else every one in the work
        tree): left as they are, unstaged, with a warning, and never touched by the loop again.
        Returns whether there were any."""
        found = (self.changed_paths() if among is None else set(among)) - {PLAN_FILE}
        found = {path for path in found if not RALPH_FILES.fullmatch(path)} - self.user_dirty
        if not found:
            return False
        self.user_dirty = frozenset(self.user_dirty | found)
        shown = ", ".join(sorted(found)[:5]) + (f" (+{len(found) - 5} more)" if len(found) > 5 else "")
        self.journal.event("left_unstaged", files=sorted(found), when=when)
        self.console.event(f"warning: {shown} changed {when}, not by an agent ralph ran: left unstaged")
        return True

    def set_aside(self, log_path: Path, also: Iterable[str] = ()) -> Path | None:
        """Save the agents' uncommitted changes to code as a patch beside the log, then undo them.
        A git repository an agent made inside the work tree goes in as plain files (unnest).
        `also`: files of theirs git does not list (hidden by an ignore rule they wrote). Returns
        the patch (absolute), or None when there was nothing to undo."""
        self.building = set()
        paths = (self.changed_paths() | set(also)) - {PLAN_FILE}
        if self.unnest(paths, log_path):
            paths = (self.changed_paths() | set(also)) - {PLAN_FILE}
        if not paths:
            return None
        patch = self.home / log_path.with_suffix(".patch")
        self.repo.changes.save_patch(paths, patch)
        self.repo.changes.revert(paths)
        self.journal.event("changes_set_aside", patch=str(self.rel(patch)), files=sorted(paths))
        return patch

    def keep_draft(self, task_id: str, since: str | None = None) -> str | None:
        """The agents' uncommitted changes to code (and, `since` a commit, those committed since),
        committed onto HEAD (onto `since`) on the task's draft branch (ralph.store.drafts) without
        touching the work tree or the index, for a person or the task's next build; pushed too
        when runners share a remote. The branch, or None."""
        from ralph.store import drafts

        paths = self.changed_paths() - {PLAN_FILE}
        base = self.repo.head()
        if since is not None:
            paths |= set(self.repo.paths("diff", "--name-only", "-z", since, "HEAD")) - {PLAN_FILE}
            base = since
        if not paths or base is None:
            return None
        try:
            branch = drafts.keep(self.repo, task_id, base, paths, f"ralph: draft of {task_id}")
        except GitError as exc:  # the patch beside the log still keeps the work
            self.journal.event("draft_failed", item=task_id, error=str(exc))
            return None
        if branch is None:
            return None
        self.journal.event("draft_kept", item=task_id, branch=branch, files=sorted(paths))
        self.console.event(f"{task_id}: its unfinished work is kept on branch {branch}")
        self.coordinator.draft_kept(branch)
        return branch

    def draft_ref(self, branch: str) -> str | None:
        """Where a build here can read the draft `branch` a task names: the branch, or another
        runner's draft fetched from the remote they share; None when it is neither (a person
        deleted it, the push or the fetch failed)."""
        if self.repo.commit_of(f"refs/heads/{branch}"):
            return branch
        return self.coordinator.fetch_draft(branch)

    def set_aside_as_draft(self, task_id: str, log_path: Path, record: bool = True) -> str | None:
        """set_aside, the work kept on the task's draft branch first; with `record`, the branch is
        written on the task (for the loop's next commit to carry). The branch, or None."""
        branch = self.keep_draft(task_id)
        self.set_aside(log_path)
        if branch and record:
            self.plan.record_draft(task_id, branch)
        return branch

    def drop_drafts(self, accepted: Iterable[Record]) -> None:
        """The tasks are accepted: ralph's drafts of them go (by record, never a person's branch),
        and a parent's draft they were offered once no task is offered it any more."""
        from ralph.store import drafts

        for task in accepted:
            self._drop_draft(drafts.delete(self.repo, task["id"]), task["id"])
            inherited = task.get("draft")  # an ancestor's, split however many times since
            if inherited and inherited not in self._offered_drafts():
                record = drafts.named(self.repo, inherited)
                if record and record.task and record.task != task["id"]:
                    self._drop_draft(drafts.delete(self.repo, record.task), record.task)

    def _offered_drafts(self) -> set[str]:
        return {task["draft"] for task in self.plan.read().tasks() if task.get("draft")}

    def _drop_draft(self, deleted: Owned | None, task_id: str) -> None:
        if deleted:
            self.journal.event("draft_deleted", item=task_id, branch=deleted.name)
            self.coordinator.draft_dropped(deleted.name, deleted.start or "")

    def drop_accepted_drafts(self) -> None:
        """ralph's drafts of tasks accepted since they were made (by a person, another runner)."""
        from ralph.store import drafts

        kept = drafts.drafts(self.repo)
        if kept:  # the plan is read only when there is a draft (most runs have none)
            accepted = set(self.plan.read().accepted())
            self.drop_drafts({"id": draft.task} for draft in kept if draft.task in accepted)

    def nested_repositories(self, paths: Iterable[str]) -> list[str]:
        """The folders among `paths` (or holding one of them) that are git repositories of their
        own, as an agent's `git init` or `git clone` makes them. Never through a symlink (its
        .git is somewhere else), nor a folder HEAD has: a submodule is a person's, and git keeps
        tracking the files of a folder it tracks whatever is in it."""
        found: set[str] = set()
        for path in paths:
            parts = PurePosixPath(path.rstrip("/")).parts
            for depth in range(1, len(parts) + 1):
                folder = "/".join(parts[:depth])
                if (self.root / folder).is_symlink() or not (self.root / folder).is_dir():
                    break
                if os.path.lexists(self.root / folder / ".git"):
                    found.add(folder)
                    break
        return sorted(found - self.repo.changes.at_head(found))

    def unnest(self, paths: Iterable[str], log_path: Path) -> list[str]:
        """Each nested repository among `paths` becomes plain files of this work tree: its .git
        (its history) moves beside the log, as <log>.nested/<folder>/.git, and a gitlink staged
        for it leaves the index; then those nested in them, in turn. Otherwise git would commit
        it as a bare gitlink (its files in no commit) or refuse to add it. Returns the folders."""
        import shutil

        unnested: list[str] = []
        nested = self.nested_repositories(paths)
        while nested:
            for folder in nested:
                kept = self.home / log_path.with_suffix(".nested") / folder / ".git"
                kept.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(self.root / folder / ".git", kept)
                # Its gitlink (or anything else) staged: unstaged, its files left (HEAD has no folder).
                self.repo.git("rm", "--cached", "-r", "-f", "-q", "--ignore-unmatch", "--", folder)
                self.journal.event("nested_repository_kept", folder=folder, git_dir=str(self.rel(kept)))
            unnested += nested
            inside = self.repo.changes.paths(among=nested)
            self.building |= inside  # the build's files now, not someone else's left unstaged
            nested = self.nested_repositories(inside)
        return unnested

    @contextmanager
    def verifier_checkouts(self) -> Iterator[Checkouts]:
        """The checkouts of HEAD one VERIFY fork/join lends its verifiers (ralph.loop.tree.checkouts),
        every one removed at its end, whatever happened."""
        checkouts = Checkouts(self)
        try:
            yield checkouts
        finally:
            checkouts.close()

    def make_checkout(self, label: str) -> Checkout:
        """A detached worktree of HEAD in a temporary folder of its own, recorded as ralph's
        before it is made: a run that must not share this work tree (a verifier running the
        tests) works there."""
        folder = _new_folder(f"ralph-{label}-")
        path = folder / f"ralph-{label}"  # its name in .git/worktrees
        tree = Owned(OwnedKind.WORKTREE, str(path), folder=str(folder))
        owned.record(self.repo, tree)  # before it is made: a kill in between is cleaned up later
        folder.mkdir(mode=0o700)
        try:
            with self._worktrees:
                head = self.repo.head()
                repo = self.repo.worktrees.add(path, head or "HEAD")
        except BaseException:
            with deferred_signals(), self._worktrees:
                self._remove_recorded(path, folder, tree)
            raise
        return Checkout(repo, head, tree)

    def remove_checkout(self, checkout: Checkout) -> None:
        """A checkout removed, changes and all, and its record with it."""
        folder = Path(checkout.owned.folder or checkout.path.parent)
        with deferred_signals(), self._worktrees:  # a stop signal must not leave a worktree behind
            self._remove_recorded(checkout.path, folder, checkout.owned)

    @contextmanager
    def build_checkout(self, task_id: str) -> Iterator[BuildCheckout]:
        """A worktree on branch `ralph/<task id>` from HEAD (plan.jsonl as HEAD has it), for one
        build at a time with others; removed with its branch afterwards, whatever
        happened (what the caller did not merge is lost, as a run set aside is)."""
        folder = _new_folder(f"ralph-build-{task_id}-")
        path = folder / f"ralph-build-{task_id}"
        tree = Owned(OwnedKind.WORKTREE, str(path), folder=str(folder))
        with self._worktrees:
            head = self.repo.head() or "HEAD"
            branch = self._free_branch(task_id)
            built = Owned(OwnedKind.BRANCH, branch, start=head)
            owned.record(self.repo, tree)  # before they are made: a kill in between is cleaned up later
            owned.record(self.repo, built)
        created = False
        try:
            folder.mkdir(mode=0o700)
            with self._worktrees:
                self.repo.worktrees.add_on_branch(path, branch, head)
            created = True
            # The plan as HEAD has it: the loop's own uncommitted changes (a merged build's commit
            # id, its state) are no business of a builder's, and the merge keeps them. Read from
            # the work tree, it could be a later merge's plan over this HEAD.
            if not (path / PLAN_FILE).exists():  # never committed: the loop's copy, then
                (path / PLAN_FILE).write_bytes(self.plan.raw())
            plan = (path / PLAN_FILE).read_bytes()
            yield BuildCheckout(self.for_worktree(path), branch, head, plan)
        finally:
            with deferred_signals(), self._worktrees:  # a stop signal must not leave a worktree behind
                self._remove_recorded(path, folder, tree)
                if created and not self.registered(path):  # ralph's own, recorded above
                    self._delete_recorded(built)
                elif not created:
                    owned.forget(self.repo, built)

    def _remove_recorded(self, path: Path, folder: Path, tree: Owned) -> None:
        """A worktree ralph made removed, and its record with it; a record stays while git still
        lists the worktree (its removal failed: a full disk), for clean-up to finish."""
        import shutil

        self.repo.worktrees.remove(path)
        shutil.rmtree(folder, ignore_errors=True)
        if not self.registered(path):
            owned.forget(self.repo, tree)

    def _delete_recorded(self, built: Owned) -> None:
        """A build branch ralph made deleted, and its record with it, unless git failed to."""
        try:
            self.repo.git("update-ref", "-d", f"refs/heads/{built.name}")
        except GitError:
            return  # recorded still: clean-up judges it later
        owned.forget(self.repo, built)

    def registered(self, path: Path) -> bool:
        """Whether git still lists the worktree at `path` (its folder under .git/worktrees/ names
        it), read from the files, without running git."""
        import os

        admin = self.repo.common_dir() / "worktrees"
        wanted = os.path.realpath(path / ".git")  # git may name it through a symlinked /tmp
        for gitdir in admin.glob("*/gitdir"):
            with contextlib.suppress(OSError):
                if os.path.realpath(gitdir.read_text(encoding="utf-8").strip()) == wanted:
                    return True
        return False

    def _free_branch(self, task_id: str) -> str:
        """ralph/<task id>, or with -2, -3... when a branch of that name exists already (a person's,
        or one of ralph's kept because it holds unmerged work): never reset, never reused."""
        name, number = f"{BUILD_BRANCH_PREFIX}{task_id}", 1
        while self.repo.worktrees.branch_exists(name) or owned.owns_branch(self.repo, name):
            number += 1
            name = f"{BUILD_BRANCH_PREFIX}{task_id}-{number}"
        return name

    def merge_build(
        self, checkout: BuildCheckout, task_id: str | None = None, built: list[str] | None = None
    ) -> Integration:
        """The build branch's commits onto the loop's branch, a copy of each in order; the copy of
        the last of `built` (the build's own commits) recorded on the task, for the loop's next
        commit, and the branch marked merged. The merge's record (ralph.store.intent) is finished
        only then: a kill before is finished by the next start."""
        tip = checkout.tree.repo.head()
        if tip is None or tip == checkout.start:
            return Integration()
        self.commit_beside()  # a person's commands meanwhile go in as theirs, not as this build's
        with deferred_signals():  # the work tree moves in one step or not at all
            merged = integrate(
                self.repo, checkout.start, tip, checkout.plan_base, task_id, checkout.branch, built
            )
            if merged.intent is not None:
                settle.after_merge(self.repo, self.root, merged.intent.data)
                intent.finish(self.repo, merged.intent)
        return merged

    def save_build_patch(self, task: TaskView, log_path: Path) -> Path | None:
        """The changes of the task's last build commit as a patch beside the log (relative to the
        root), for DECOMPOSE to see what was built of a task set aside after its build was
        committed (VERIFY rejected it, or could not finish checking it). They stay in the code."""
        if not task.commit:
            return None
        patch = self.home / log_path.with_suffix(".patch")
        try:
            text = self.repo.changes.commit_patch(task.commit, exclude=frozenset({PLAN_FILE}))
        except GitError as exc:  # the commit is gone (history rewritten since)
            self.journal.event("build_patch_missing", item=task.id, commit=task.commit, error=str(exc))
            return None
        if not text:
            return None
        patch.write_bytes(text)
        saved = str(self.rel(patch))
        self.journal.event("build_patch_saved", item=task.id, commit=task.commit, patch=saved)
        return patch


def _keep(path: Path, kept: Path) -> None:
    """Move what an agent made at `path` to `kept`; what cannot be moved (a FIFO onto another file
    system) is removed: it must not stay where git reads."""
    import shutil

    kept.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.move(path, kept)
    except (OSError, shutil.Error):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _put_back_config(folder: Path, link: Link) -> None:
    """The config of the git directory a submodule's link leads to, as it was (an agent unfenced
    could have changed it; in the sandbox .git is read-only)."""
    from ralph.store.root import git_dir

    config = git_dir(folder) / "config"
    with contextlib.suppress(OSError):
        if config.read_bytes() != link.config:
            config.write_bytes(link.config or b"")


def _new_folder(prefix: str) -> Path:
    """The name of a temporary folder not made yet, as mkdtemp would choose one: the folder is
    recorded as ralph's before it is made (mkdtemp makes it at once, and a kill before the record
    left a folder nobody would remove)."""
    import secrets
    import tempfile

    return Path(tempfile.gettempdir()) / f"{prefix}{secrets.token_hex(6)}"


def judge_failure(tree: WorkTree, task_id: str, verdict: Verdict, others_ready: bool) -> FailureOnTree:
    """What the tree says of a failed attempt, asked once: waived as made on a stale base, else
    deferred (Verdict.AGENT_ERROR with `others_ready`), else counted, retried from HEAD or not.
    A waiver is spent only when it is given (WorkTree.stale_base, WorkTree.may_defer)."""
    if tree.stale_base(task_id, verdict):
        return FailureOnTree(stale=True)
    if verdict is Verdict.AGENT_ERROR and others_ready and tree.may_defer(task_id):
        return FailureOnTree(deferred=True)
    return FailureOnTree(from_head=tree.retry_from_head(verdict))


class Commit(NamedTuple):
    """What the work tree commits as a build attempt settles (WorkTree.commit's arguments)."""

    message: str
    paths: frozenset[str] | None = None  # None: plan.jsonl alone
    task: str | None = None  # the commit is that task's build, recorded on it


class Settled(NamedTuple):
    """What settling a build attempt left: the draft branch its changes went on, and the commit."""

    draft: str | None = None
    commit: str | None = None


def settle_attempt(
    tree: WorkTree,
    task_id: str,
    keep: Keep,
    log: Path,
    *,
    hold: bool = False,
    wait: bool = False,
    reset_plan: bool = False,
    commit: Commit | None = None,
) -> Settled:
    """What the work tree does as a build attempt ends (ralph.loop.stages.build_outcome), in this
    order: the task held back (`hold`: from this runner's claims until others publish; `wait`:
    until the code moves), its changes kept as `keep` says, beside `log`, with `reset_plan`
    plan.jsonl back as committed, the run's copy beside the log, and `commit` made (the agent's
    question, or the build with the plan that records it)."""
    if hold:
        tree.coordinator.hold(task_id)
    if wait:
        tree.wait_for_code(task_id)
    draft = None
    if keep is Keep.PATCH:
        tree.set_aside(log)
    elif keep in (Keep.DRAFT, Keep.DRAFT_UNRECORDED) or (
        keep is Keep.DRAFT_IF_CHANGED and tree.changed_paths() - {PLAN_FILE}
    ):
        draft = tree.set_aside_as_draft(task_id, log, record=keep is Keep.DRAFT)
    if reset_plan:
        tree.reset_plan(tree.home / log.with_suffix(".plan.jsonl"))
    if commit is None:
        return Settled(draft)
    paths = None if commit.paths is None else set(commit.paths)
    return Settled(draft, tree.commit(commit.message, paths, commit.task))
