"""Reading a plan: its records by kind, and what they say (tasks, issues, questions, claims,
the loop's state). The transitions are Plan's (ralph.plan.plan), each in the module of its topic."""

from __future__ import annotations

from dataclasses import dataclass

from ralph.durations import parse_duration
from ralph.errors import PlanInvalid, Refused
from ralph.plan import schedule
from ralph.plan.declared import CONFIG_KEYS
from ralph.plan.document import Document, Record, RecordLine
from ralph.plan.integrity import integrity_problems
from ralph.plan.records import (
    Stage,
    TaskView,
    awaits_recheck,
)
from ralph.plan.stages import stage_of


@dataclass(frozen=True)
class SpecView:
    """What a spec check reads of its spec, read once: its record ({} when it has none) and the
    text of each issue an earlier check's cut left for this one (records.awaits_recheck)."""

    spec: str
    record: Record
    recheck: tuple[str, ...]


class PlanReader:
    def __init__(self, doc: Document):
        self.doc = doc
        self._by_kind: dict[str, list[RecordLine]] = {}
        self._by_kind_version = -1

    def of(self, kind: str) -> list[RecordLine]:
        if self._by_kind_version != self.doc.version:  # one pass over the lines per change, not per call
            self._by_kind, self._by_kind_version = {}, self.doc.version  # built aside: threads share it
        lines = self._by_kind.get(kind)
        if lines is None:  # only the lines of the kinds asked for are made (their records decoded)
            lines = self._by_kind[kind] = self.doc.lines_of(kind)
        return list(lines)

    def task_lines(self) -> list[RecordLine]:
        return self.of("task")

    def tasks(self) -> list[Record]:
        return [line.record for line in self.task_lines()]

    def task_views(self, spec: str | None = None) -> list[TaskView]:
        """The tasks as typed views; with `spec`, only that spec's tasks (and those of none)."""
        return [TaskView(task) for task in self.tasks() if spec is None or task.get("spec") in (None, spec)]

    def issues(self, spec: str | None = None) -> list[Record]:
        """The open issues (not questions); with `spec`, only that spec's issues (and those of none)."""
        return [
            line.record
            for line in self.of("issue")
            if not is_question(line.record) and (spec is None or line.record.get("spec") in (None, spec))
        ]

    def questions(self, spec: str | None = None, answered: bool = False) -> list[Record]:
        """The open questions (with `answered`, the answered ones); with `spec`, that spec's."""
        return [
            line.record
            for line in self.of("issue")
            if is_question(line.record)
            and bool(line.record.get("answer")) is answered
            and (spec is None or line.record.get("spec") in (None, spec))
        ]

    def questions_of(self, task_id: str, answered: bool = False) -> list[Record]:
        return [question for question in self.questions(answered=answered) if question.get("task") == task_id]

    def answers_for(self, task_id: str) -> list[Record]:
        """The answered questions a task's prompts carry: those asked about it, those its
        `questions` names (asked about the task it was decomposed from, which is gone), and those
        about its family's failure."""
        task = self.find_task(task_id) or {}
        inherited = set(task.get("questions", []))
        family = task.get("family") or task_id
        return [
            question
            for question in self.questions(answered=True)
            if question.get("task") == task_id
            or question["id"] in inherited
            or question.get("family") == family
        ]

    def resolutions(self, spec: str | None = None) -> dict[str, str]:
        """Issue id -> the note it was resolved with (resolve records); with `spec`, that spec's."""
        return {
            line.record["id"]: line.record["note"]
            for line in self.of("resolve")
            if spec is None or line.record.get("spec") in (None, spec)
        }

    def spec_line(self, spec: str) -> RecordLine | None:
        return next((line for line in self.of("spec") if line.record["path"] == spec), None)

    def spec_view(self, spec: str) -> SpecView:
        line = self.spec_line(spec)
        recheck = tuple(issue["text"] for issue in self.issues(spec) if awaits_recheck(issue))
        return SpecView(spec, line.record if line else {}, recheck)

    def planned(self, spec: str) -> bool:
        """Whether PLAN ran for `spec` (its record says so), or, in a plan written before that was
        recorded, the spec has tasks, open or accepted. Open issues alone never make it planned, nor
        a review's findings (`aspect`: `ralph review` on a branch whose spec was never planned)."""
        line = self.spec_line(spec)
        if line is not None and line.record.get("planned"):
            return True
        specs = self.specs()
        owner_of_unnamed = specs[0] if specs else spec
        return any(
            line.record.get("spec", owner_of_unnamed) == spec and not line.record.get("aspect")
            for kind in ("task", "accept")
            for line in self.of(kind)
        )

    def find_task(self, task_id: str) -> Record | None:
        return next((task for task in self.tasks() if task["id"] == task_id), None)

    def rejections(self, task_id: str) -> int:
        """How many times VERIFY (or the loop) has rejected the task: its reject records."""
        return sum(1 for line in self.of("reject") if line.record["id"] == task_id)

    def specs(self) -> list[str]:
        return [line.record["path"] for line in self.of("spec")]

    def accepted(self) -> frozenset[str]:
        """The ids of the tasks accepted (found once per version of the plan)."""
        return self.doc.accepted_ids()

    def config(self) -> Record:
        found = self.of("config")
        return found[0].record if found else {}

    def state(self) -> Record:
        found = self.of("state")
        return found[0].record if found else {}

    def stage(self) -> Stage:
        return stage_of(self.tasks(), self.issues(), self.questions())

    def iteration(self) -> int:
        iteration: int = self.state().get("iteration", 0)
        return iteration

    def next_task(self) -> Record | None:
        return schedule.next_task(self.tasks(), self.accepted())

    def find_task_line(self, task_id: str) -> RecordLine | None:
        return next((line for line in self.task_lines() if line.record["id"] == task_id), None)

    def task_line(self, task_id: str) -> RecordLine:
        line = self.find_task_line(task_id)
        if line is not None:
            return line
        if task_id in self.accepted():
            raise Refused(f"task {task_id} is already accepted")
        raise Refused(f"no task {task_id}")

    def taken_ids(self) -> set[str]:
        return set(self.doc.ids())  # the caller's own

    def reject_reasons(self, task_id: str) -> list[str]:
        return [line.record["reason"] for line in self.of("reject") if line.record["id"] == task_id]

    def verify_reasons(self, task_id: str) -> list[str]:
        """Why VERIFY (or a person, `task reject`) sent the task back each time, oldest first: not
        the loop's own set-asides, which are recorded the same way with a kill_reason."""
        return [
            line.record["reason"]
            for line in self.of("reject")
            if line.record["id"] == task_id and not line.record.get("kill_reason")
        ]

    def claim_ttl_s(self) -> float:
        """Age in seconds at which a claim may be taken over (config claim_ttl_ms, default 30 min)."""
        value = self.config().get("claim_ttl_ms", DEFAULT_CLAIM_TTL_MS)
        return parse_duration(value) if isinstance(value, str) else value / 1000  # "30m" or ms

    def claims(self) -> list[Record]:
        """The claimed tasks, issues and spec records, in file order; `id` is a spec's path."""
        return [
            {**line.record, "id": claimable_id(line.record)}
            for line in self.doc.lines_of(*CLAIMABLE)
            if line.record.get("claimed_by")
        ]

    def find_claimable(self, item_id: str) -> Record | None:
        """The task, issue or spec record (by path) `item_id` names, or None."""
        line = self.find_claimable_line(item_id)
        return line.record if line else None

    def find_claimable_line(self, item_id: str) -> RecordLine | None:
        for index, head in enumerate(self.doc.heads()):
            if head and head[0] in CLAIMABLE and (head[0] == "spec" or head[1] == item_id):
                line = self.doc.record_line(index)
                if claimable_id(line.record) == item_id:
                    return line
        return None

    def claim_line(self, item_id: str) -> RecordLine:
        line = self.find_claimable_line(item_id)
        if line is None and item_id.startswith("t-"):
            return self.task_line(item_id)  # says why: accepted, or no such task
        if line is None:
            raise Refused(f"no task, issue or spec {item_id} to claim")
        return line

    def issue_line(self, issue_id: str) -> RecordLine:
        for line in self.of("issue"):
            if line.record["id"] == issue_id:
                if is_question(line.record):
                    raise Refused(f"{issue_id} is a question, not an issue: answer it with `ralph answer`")
                return line
        raise Refused(f"no open issue {issue_id}")

    def check_integrity(self) -> None:
        """Refuse to leave the plan in a state its own loader would reject."""
        problems = integrity_problems(self.doc)
        if problems:
            raise PlanInvalid(problems)


DEFAULT_CLAIM_TTL_MS = CONFIG_KEYS["claim_ttl_ms"].default
CLAIM_FIELDS = ("claimed_by", "claimed_at", "claimed_on")
CLOCKS_DISAGREE_AT_MOST_S = 24 * 3600  # a claim made longer ago than this is old on any runner's clock
CLAIMABLE = ("task", "issue", "spec")  # a task to build, verify or decompose; an issue; a spec to plan


def claimable_id(record: Record) -> str:
    """What a claim names: a task's or issue's id, a spec record's path."""
    item: str = record["path"] if record.get("t") == "spec" else record["id"]
    return item


def drop_claim(task: Record) -> None:
    for key in CLAIM_FIELDS:
        task.pop(key, None)


def claim_age_s(
    task: Record,
    now: str,
    seen_at: str | None = None,
    committed_at: str | None = None,
    witness_at: str | None = None,
) -> float | None:
    """Seconds since the task was claimed, as of `now` (the judging runner's clock), by the rule
    every runner follows: the lesser of two ages, each read on one clock against the other.

    - Since the claim was made: `committed_at`, the committer time of the commit that made the
      claim on the shared remote. Every runner reads the same time there, and ralph stamps its
      commits so that times along the history never go backwards (a runner whose clock is behind
      is pulled forward to the history's time). Without it (the commit is not known), the claim's
      own claimed_at, which the claimer's clock wrote.
    - Since this runner first saw the claim: `seen_at`, on the judge's own clock, which no other
      clock moves: a safe lower bound on the claim's age.

    A takeover thus needs both over the TTL, and no clock hours off lets a live claim be taken
    over: not the claimer's (behind, its commit is pulled to the history's time; ahead, its commit
    looks new), not the judge's while it stays off (it saw the claim on that clock too), nor the
    judge's set right while it watched (the commit kept the history's time). The price: a runner
    that first sees a dead runner's claim late (a fresh clone) waits a TTL from its first look,
    and a claim committed after a runner ahead of the others pushed looks new until the clocks
    catch up with that one. When the first is over a day and a clock other than the judge's
    agrees, it is believed alone: a runner dead for days loses its claims at once while others
    work. That other clock is `witness_at`, the newest time another claim in sight was made
    (ralph.store.claim_clock): a day or more after this claim was. Without one, a judge
    whose clock is a day or more ahead would take every live claim for days old.
    None when the claim's time does not parse: it counts as expired (a person or a broken runner
    wrote it)."""
    from datetime import datetime

    try:
        current = datetime.fromisoformat(now)
        made = committed_at if committed_at is not None else str(task.get("claimed_at"))
        age = (current - datetime.fromisoformat(made)).total_seconds()
        if seen_at is not None and not (
            age >= CLOCKS_DISAGREE_AT_MOST_S and _witnessed_days_later(made, witness_at)
        ):
            age = min(age, (current - datetime.fromisoformat(seen_at)).total_seconds())
        return age
    except (TypeError, ValueError):
        return None


def _witnessed_days_later(made: str, witness_at: str | None) -> bool:
    """Another runner's clock says a day or more has passed since `made`."""
    from datetime import datetime

    if witness_at is None:
        return False
    try:
        later = (datetime.fromisoformat(witness_at) - datetime.fromisoformat(made)).total_seconds()
    except (TypeError, ValueError):  # a time that does not parse witnesses nothing
        return False
    return later >= CLOCKS_DISAGREE_AT_MOST_S


def is_question(issue: Record) -> bool:
    return issue.get("kind") == "question"
