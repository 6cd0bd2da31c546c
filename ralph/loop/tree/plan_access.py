"""The plan as a stage sees it: read, changed under the lock (for the work tree's next commit to
carry, or committed at once), and put back when a run's changes are not kept. One per work tree:
a build in a worktree of its own changes its copy there (`at`); the loop's state record and its
spending always go to the repository the loop runs in (`home`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ralph.plan.document import Record
from ralph.plan.plan import Plan
from ralph.plan.records import TaskView
from ralph.store import intent, reader, transaction
from ralph.store.git import Repo
from ralph.store.intent import IntentKind

if TYPE_CHECKING:
    from ralph.loop.observe.journal import Journal
    from ralph.loop.runs.agent_process import AgentResult
    from ralph.loop.runs.cost import Spending

PLAN_FILE = reader.PLAN_NAME


class PlanAccess:
    def __init__(self, root: Path, spec: str, journal: Journal, spending: Spending, repo: Repo | None = None):
        self.root, self.home, self.spec = root, root, spec
        self.repo = repo or Repo(root)
        self.journal, self.spending = journal, spending
        self._clean_lines: set[bytes] = set()  # plan lines already redacted (transaction.redact_plan)

    def at(self, path: Path, repo: Repo) -> PlanAccess:
        """The plan of the worktree at `path`; the state record and spending stay the home's."""
        import copy

        other = copy.copy(self)  # the journal, spending and redacted lines are shared
        other.root, other.repo = path, repo
        return other

    def read(self) -> Plan:
        """The plan as it is now, to read only (shared with other readers of the same bytes)."""
        return reader.read_plan(self.root)

    def scratch(self) -> Plan:
        """The plan as it is now, a copy of the caller's own: to work out what a change would do
        without writing it."""
        return reader.scratch_plan(self.root)

    def after(self, result: AgentResult) -> Plan:
        """The plan as `result`'s run left it: read once after the run, then passed on."""
        if result.plan is None:
            result.plan = self.read()
        return result.plan

    def tasks(self, plan: Plan | None = None) -> list[TaskView]:
        """This spec's tasks (and those of no spec)."""
        return (plan or self.read()).task_views(self.spec)

    def issues(self, plan: Plan | None = None) -> list[Record]:
        return (plan or self.read()).issues(self.spec)

    def raw(self) -> bytes:
        """plan.jsonl's bytes as they are now (what a run's changes are undone to)."""
        return (self.root / PLAN_FILE).read_bytes()

    @contextmanager
    def change(self, commit: bool = False) -> Iterator[transaction.Change]:
        """Change the plan under the lock. With `commit` the change is committed (together with
        anything the loop wrote before it) with the message set on the change; without, it is only
        written, for the loop's next commit to carry."""
        if commit:
            self.redact()  # what the agents wrote goes in too
        with transaction.transaction(
            self.root, commit=None if commit else False, fold_earlier=True, repo=self.repo
        ) as change:
            yield change

    @contextmanager
    def planning(self, before: bytes) -> Iterator[Callable[[str], None]]:
        """PLAN's run, recorded before its agent starts (ralph.store.intent, PLAN) with the plan
        as it was (`before`): a kill while the agent runs is undone by the next start; once the
        caller says its output is whole (the function yielded, with the commit's message), a kill
        is finished (its tasks committed). The record goes when this ends, whatever happened."""
        repo = self.repo
        saved = repo.git("hash-object", "-w", "--stdin", stdin=before).strip()  # what an undo puts back
        pending = intent.begin(repo, IntentKind.PLAN, self.root, spec=self.spec, before=saved, phase="agent")

        def whole(message: str) -> None:
            intent.update(repo, pending, phase="planned", message=message)

        try:
            yield whole
        finally:  # whatever this process lived to see through (an interrupt sets the run aside itself)
            intent.finish(repo, pending)

    def redact(self) -> None:
        """Secrets out of what the agents wrote to plan.jsonl by hand, before it is committed."""
        transaction.redact_plan(self.root, self._clean_lines)

    def set_state(self, plan: Plan | None = None, **fields: object) -> None:
        """Set the loop state's fields; `plan`: the plan as just read, when it is the home's."""
        state = (plan or reader.read_plan(self.home)).state()  # no lock to wait for when nothing changes
        if state and all(state.get(key) == value for key, value in fields.items()):
            return
        with transaction.transaction(self.home, commit=False, fold_earlier=True) as change:
            change.plan.update_state(**fields)

    def save_spending(self, into: Plan | None = None) -> None:
        """Add what the runs since the last commit spent to the state record's per-stage totals,
        so `ralph status` and `ralph report` show it from the plan that git keeps. `into`: the
        loop's own plan, being changed by the caller (one write instead of two)."""
        unsaved = self.spending.take_unsaved()
        if unsaved and into is not None:
            into.add_spending(unsaved)
        elif unsaved:  # the loop's state record: in the repository, never a build's worktree copy
            with transaction.transaction(self.home, commit=False, fold_earlier=True) as change:
                change.plan.add_spending(unsaved)

    def prioritize(self, commit: bool | None = None) -> Record:
        """Priorities for the spec's tasks that have none; False: for the loop's next commit to carry."""
        from ralph.usecases import tasks

        return tasks.prioritize(self.root, self.spec, commit, fold_earlier=True)

    def record_draft(self, task_id: str, branch: str, commit: bool = False) -> None:
        """Write the draft's branch on the task (gone from the plan: nothing to write)."""
        with self.change(commit=commit) as change:
            if change.plan.find_task(task_id) is not None:
                change.plan.record_draft(task_id, branch)
            change.message = f"ralph: {task_id} draft kept on {branch}"

    def restore(self, data: bytes) -> None:
        """plan.jsonl put back to `data` (a run's changes undone)."""
        transaction.restore_plan(self.root, data)

    def restore_committed(self) -> bytes:
        """plan.jsonl put back as HEAD has it (empty when HEAD has none); returns what was put."""
        data = self.repo.objects.file_at_head(PLAN_FILE) or b""
        transaction.restore_plan(self.root, data)
        return data

    def undo_since(self, before: bytes, result: AgentResult, item: str) -> None:
        """A run stopped half way changes nothing: what it did to plan.jsonl since `before` is
        kept beside its log (as <log>.plan.jsonl) and undone. What a person changed meanwhile
        with ralph's commands stays (`result.with_persons`): it was never the run's."""
        if result.with_persons is not None:
            before = result.with_persons.doc.to_bytes()
        kept = self.keep_beside_log(result.log_path, unless=before)
        if kept is None:
            return
        transaction.restore_plan(self.root, before)
        self.journal.event("plan_changes_set_aside", item=item, plan=str(kept.relative_to(self.home)))

    def keep_beside_log(self, log_path: Path, unless: bytes) -> Path | None:
        """plan.jsonl as it is now, kept beside a run's log (as <log>.plan.jsonl) before another
        version replaces it, unless it is `unless` (nothing to keep); where it was kept."""
        current = self.raw()
        if current == unless:
            return None
        kept = self.home / log_path.with_suffix(".plan.jsonl")
        kept.write_bytes(current)
        return kept

    def keep_uncommitted(self, keep_as: Path) -> None:
        """Put plan.jsonl back as HEAD has it, keeping the uncommitted version at `keep_as`."""
        head_plan = self.repo.objects.file_at_head(PLAN_FILE)
        current = self.raw()
        if head_plan is not None and current != head_plan:
            keep_as.write_bytes(current)
            transaction.restore_plan(self.root, head_plan)
