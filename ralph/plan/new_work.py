"""New work an agent run added, bounded by ralph: after a run of INVESTIGATE, VERIFY or the spec
check, ralph (not the agent) compares the plan before and after. A new task named like an open task
(or like an earlier new one) is refused; new tasks and issues beyond the run's limit are removed;
what was cut goes into one issue kept open for a person, which names each item and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from ralph.plan import questions
from ralph.plan.document import Record, RecordLine
from ralph.plan.reading import PlanReader

# The cut issue's listing stays well inside intake.MAX_TEXT, whatever a run added.
LISTED_CUTS = 50
LISTED_CHARS = 200


class CutReason(StrEnum):
    DUPLICATE = "duplicate"  # named like an open task (or an earlier new one), case and spaces aside
    OVER_LIMIT = "over_limit"  # beyond the run's max_new_items


@dataclass
class Cut:
    record: Record
    reason: CutReason
    same_as: str | None = None  # the task a duplicate repeats


@dataclass
class Bounded:
    """What a run added, as ralph took it: the ids kept, what was cut, and the issue naming it."""

    kept: list[str] = field(default_factory=list)
    cut: list[Cut] = field(default_factory=list)
    issue: str | None = None

    def taken(self) -> list[str]:
        """The ids the plan took: those kept, and the issue naming what was cut."""
        return self.kept + ([self.issue] if self.issue else [])

    def summary(self) -> str:
        """For a commit subject: 'added t-a, i-b; cut 3 into i-c', or '' when nothing was added."""
        parts = [f"added {', '.join(self.kept)}"] if self.kept else []
        if self.cut:
            parts.append(f"cut {len(self.cut)} into {self.issue}")
        return "; ".join(parts)


def normalized(name: object) -> str:
    return " ".join(str(name).split()).casefold()


def new_items(before: PlanReader, after: PlanReader) -> list[Record]:
    """The tasks and issues (not questions) in `after` whose ids `before` does not hold, in file order."""
    known = before.taken_ids()
    return [
        line.record
        for line in after.doc.lines_of("task", "issue")
        if line.record["id"] not in known and line.record.get("kind") != "question"
    ]


def bound_new_work(
    plan: PlanReader, before: PlanReader, limit: int, run: str, recheck: bool = False
) -> Bounded:
    """Bound what one run added to `plan` since `before` (see `bound`)."""
    return bound(plan, [record["id"] for record in new_items(before, plan)], limit, run, recheck)


def bound(plan: PlanReader, added: list[str], limit: int, run: str, recheck: bool = False) -> Bounded:
    """Bound the tasks and issues `added` (their ids, in the order the run added them) to `plan`:
    duplicates of open tasks by name are refused, items past `limit` removed (with the new tasks'
    dependencies on them), and one issue kept open for a person lists them. `run` names the run
    in that issue ("VERIFY of t-x"). `recheck` (the spec check's run): the issue awaits the next
    spec check instead (`awaits_recheck`), which finds again what is still missing."""
    bounded = Bounded()
    new = set(added)
    records = {line.record["id"]: line.record for line in _lines_with_ids(plan, new)}
    names = {normalized(task["name"]): task["id"] for task in plan.tasks() if task["id"] not in new}
    for item in added:
        record = records[item]
        cut = _cut(record, names, len(bounded.kept), limit)
        if cut is None:
            bounded.kept.append(item)
            if record["t"] == "task":
                names.setdefault(normalized(record.get("name")), item)
        else:
            bounded.cut.append(cut)
    if not bounded.cut:
        return bounded
    _remove(plan, bounded.cut)
    text = _cut_text(bounded.cut, run, limit)
    issue = questions.add_issue(plan, text)
    reason = "ralph cut new work one run added: a person decides what of it to add"
    if recheck:
        reason = (
            "ralph cut new work the spec check added: the next spec check, once the rest is accepted,"
            " adds what of it is still missing"
        )
    questions.keep_issue_open(plan, issue["id"], reason)
    if recheck:
        line = plan.issue_line(issue["id"])
        line.record["recheck"] = True
        plan.doc.rewrite(line)
    bounded.issue = issue["id"]
    return bounded


def take_added(plan: PlanReader, added: list[Record], limit: int | None, run: str) -> Record:
    """Take into `plan` the tasks and issues one run added elsewhere (records, with their ids; in
    its own copy of the plan, a verifier's), bounded by `limit` (None: every one; see `bound`).
    What was taken: the tasks and issues kept, those dropped (an id the plan holds already: two
    runs drew one random id, the first kept), and what was cut into which issue."""
    taken: Record = {"tasks": [], "issues": []}
    present, kept = plan.taken_ids() if added else set(), []  # most runs add nothing
    for record in added:
        if record["id"] in present:
            taken.setdefault("dropped", []).append(record["id"])
            continue
        plan.doc.append(dict(record))
        present.add(record["id"])
        kept.append(record["id"])
    bounded = bound(plan, kept, limit if limit is not None else len(kept), run)
    for item in bounded.kept:
        taken["tasks" if item.startswith("t-") else "issues"].append(item)
    if bounded.cut:
        taken["cut"] = [cut.record["id"] for cut in bounded.cut]
        taken["cut_issue"] = bounded.issue
    return taken


def _cut(record: Record, names: dict[str, str], kept: int, limit: int) -> Cut | None:
    if record["t"] == "task":
        same = names.get(normalized(record.get("name")))
        if same is not None:
            return Cut(record, CutReason.DUPLICATE, same)
    if kept >= limit:
        return Cut(record, CutReason.OVER_LIMIT)
    return None


def _remove(plan: PlanReader, cuts: list[Cut]) -> None:
    """The cut records go; a kept task's dependency on a cut duplicate points at the task it
    repeats, on an item cut over the limit it is dropped (the issue names it)."""
    gone = {cut.record["id"]: cut.same_as for cut in cuts}
    for line in _lines_with_ids(plan, set(gone)):
        plan.doc.remove(line)
    for line in plan.of("task"):
        deps = line.record.get("deps")
        if not deps or not set(deps) & set(gone):
            continue
        repointed = [gone.get(dep, dep) for dep in deps]
        line.record["deps"] = list(dict.fromkeys(dep for dep in repointed if dep is not None))
        if not line.record["deps"]:
            del line.record["deps"]
        plan.doc.rewrite(line)


def _cut_text(cuts: list[Cut], run: str, limit: int) -> str:
    lines = [
        f"{run} added more new work than ralph takes from one run: it takes at most {limit} new tasks"
        " and issues (config max_new_items) and refuses a task named like an open one. Not added:"
    ]
    for cut in cuts[:LISTED_CUTS]:
        record = cut.record
        what = record.get("name") if record["t"] == "task" else record.get("text")
        why = f"duplicate of {cut.same_as}" if cut.reason is CutReason.DUPLICATE else "over the limit"
        lines.append(f"- {record['t']} {record['id']} ({why}): {' '.join(str(what).split())[:LISTED_CHARS]}")
    if len(cuts) > LISTED_CUTS:
        lines.append(f"- and {len(cuts) - LISTED_CUTS} more")
    return "\n".join(lines)


def _lines_with_ids(plan: PlanReader, ids: set[str]) -> list[RecordLine]:
    """The lines of the records whose id is one of `ids`, in file order (only those are made)."""
    if not ids:  # most runs add nothing: no pass over the plan's heads
        return []
    doc = plan.doc
    return [doc.record_line(index) for index in doc.with_ids(ids)]
