"""The plan: tasks, issues, config and loop state over a plan.jsonl document, and the
transitions the `ralph` commands make. Pure: no files, no git, no printing."""

from __future__ import annotations

from typing import Any

from ralph.durations import parse_duration
from ralph.errors import InvalidInput, PlanInvalid, Refused
from ralph.plan import schedule
from ralph.plan.declared import CONFIG_KEYS
from ralph.plan.document import Document, Record, RecordLine
from ralph.plan.intake import new_id, new_task_record, refuse_cycle, require_text
from ralph.plan.integrity import integrity_problems
from ralph.plan.records import (
    VERIFY_KILL_FIELDS,
    KillReason,
    Stage,
    Status,
    TaskView,
    Verdict,
    blocking_question,
    is_blocked,
    is_done,
    is_pending,
)
from ralph.plan.stages import stage_of
from ralph.plan.validate import record_problems


class Plan:
    def __init__(self, doc: Document):
        self.doc = doc
        self._by_kind: dict[str, list[RecordLine]] = {}
        self._by_kind_version = -1

    # --- reading --------------------------------------------------------------------------
    def _of(self, kind: str) -> list[RecordLine]:
        if self._by_kind_version != self.doc.version:  # one pass over the lines per change, not per call
            self._by_kind = {}
            for line in self.doc.records():
                self._by_kind.setdefault(line.record["t"], []).append(line)
            self._by_kind_version = self.doc.version
        return list(self._by_kind.get(kind, ()))

    def task_lines(self) -> list[RecordLine]:
        return self._of("task")

    def tasks(self) -> list[Record]:
        return [line.record for line in self.task_lines()]

    def task_views(self, spec: str | None = None) -> list[TaskView]:
        """The tasks as typed views; with `spec`, only that spec's tasks (and those of none)."""
        return [TaskView(task) for task in self.tasks() if spec is None or task.get("spec") in (None, spec)]

    def issues(self, spec: str | None = None) -> list[Record]:
        """The open issues (not questions); with `spec`, only that spec's issues (and those of none)."""
        return [
            line.record
            for line in self._of("issue")
            if not is_question(line.record) and (spec is None or line.record.get("spec") in (None, spec))
        ]

    def questions(self, spec: str | None = None, answered: bool = False) -> list[Record]:
        """The open questions (with `answered`, the answered ones); with `spec`, that spec's."""
        return [
            line.record
            for line in self._of("issue")
            if is_question(line.record)
            and bool(line.record.get("answer")) is answered
            and (spec is None or line.record.get("spec") in (None, spec))
        ]

    def questions_of(self, task_id: str, answered: bool = False) -> list[Record]:
        return [question for question in self.questions(answered=answered) if question.get("task") == task_id]

    def answers_for(self, task_id: str) -> list[Record]:
        """The answered questions a task's prompts carry: those asked about it, and those its
        `questions` names (asked about the task it was decomposed from, which is gone)."""
        task = self.find_task(task_id) or {}
        inherited = set(task.get("questions", []))
        return [
            question
            for question in self.questions(answered=True)
            if question.get("task") == task_id or question["id"] in inherited
        ]

    def has_work_for(self, spec: str) -> bool:
        """Whether `spec` has tasks or issues of its own, open or accepted. Records that name no
        spec (written before specs were recorded on them) belong to the plan's first spec."""
        specs = self.specs()
        owner_of_unnamed = specs[0] if specs else spec
        for kind in ("task", "issue", "accept"):
            for line in self._of(kind):
                if line.record.get("spec", owner_of_unnamed) == spec:
                    return True
        return False

    def find_task(self, task_id: str) -> Record | None:
        return next((task for task in self.tasks() if task["id"] == task_id), None)

    def rejections(self, task_id: str) -> int:
        """How many times VERIFY (or the loop) has rejected the task: its reject records."""
        return sum(1 for line in self._of("reject") if line.record["id"] == task_id)

    def specs(self) -> list[str]:
        return [line.record["path"] for line in self._of("spec")]

    def accepted(self) -> set[str]:
        return {line.record["id"] for line in self._of("accept")}

    def config(self) -> Record:
        found = self._of("config")
        return found[0].record if found else {}

    def state(self) -> Record:
        found = self._of("state")
        return found[0].record if found else {}

    def stage(self) -> Stage:
        return stage_of(self.tasks(), self.issues(), self.questions())

    def iteration(self) -> int:
        iteration: int = self.state().get("iteration", 0)
        return iteration

    def next_task(self) -> Record | None:
        return schedule.next_task(self.tasks(), self.accepted())

    def task_line(self, task_id: str) -> RecordLine:
        for line in self.task_lines():
            if line.record["id"] == task_id:
                return line
        if task_id in self.accepted():
            raise Refused(f"task {task_id} is already accepted")
        raise Refused(f"no task {task_id}")

    def _taken_ids(self) -> set[str]:
        return {line.record["id"] for line in self.doc.records() if "id" in line.record}

    # --- tasks ----------------------------------------------------------------------------
    def add_tasks(self, items: list[object], issue_id: str | None = None) -> list[Record]:
        """Append new pending tasks; ids are generated unless given. All or nothing. `issue_id`:
        the issue being investigated, which the tasks come from (and take their priority from)."""
        if not items:
            raise InvalidInput("no task given")
        taken = self._taken_ids()
        known = {task["id"] for task in self.tasks()} | self.accepted()
        default_spec = self.state().get("spec")
        records = []
        for number, item in enumerate(items, start=1):
            label = f"task {number}" if len(items) > 1 else "task"
            record = new_task_record(item, label, taken, default_spec)
            if issue_id and "issue" not in record:
                record["issue"] = issue_id
            self._inherit_priority(record)
            taken.add(record["id"])
            records.append(record)
        batch = {record["id"] for record in records}
        for record in records:
            unknown = [dep for dep in record.get("deps", []) if dep not in known | batch]
            if unknown:
                raise Refused(f"task '{record['name']}' depends on unknown task {', '.join(unknown)}")
            if record["id"] in record.get("deps", []):
                raise InvalidInput(f"task '{record['name']}' depends on itself")
        refuse_cycle(records, batch)  # only new tasks can close a cycle: no old task needs them
        for record in records:
            self.doc.append(record)
        return records  # the store checks the whole change before it writes

    def _inherit_priority(self, record: Record) -> None:
        """A subtask takes its parent's priority, a task made from an issue the issue's, unless given."""
        if record.get("priority"):
            return
        source = self.find_task(record["parent"]) if record.get("parent") else None
        if source is None and record.get("issue"):
            source = next((issue for issue in self.issues() if issue["id"] == record["issue"]), None)
        if source and source.get("priority"):
            record["priority"] = source["priority"]

    def done(self, task_id: str | None) -> Record:
        if task_id is None:
            task = self.next_task()
            if task is None:
                raise Refused("no pending task is ready to be marked done")
            task_id = task["id"]
        line = self.task_line(task_id)
        task = line.record
        if is_done(task):
            raise Refused(f"task {task_id} is already done")
        question = blocking_question(task)
        if question:
            reason = task.get("blocked_reason") or f"waiting for the answer to question {question}"
            raise Refused(f"task {task_id} is {reason[:120]}")
        waiting = schedule.blockers(task, self.tasks(), self.accepted())
        if waiting:
            raise Refused(f"task {task_id} is blocked by {', '.join(waiting)} (not done yet)")
        task["s"] = Status.DONE
        _drop_claim(task)  # built: the commit that says so frees it (VERIFY claims it anew)
        self.doc.rewrite(line)
        return task

    def accept(self, task_id: str | None) -> list[Record]:
        if task_id is None:
            lines = [line for line in self.task_lines() if is_done(line.record)]
            if not lines:
                raise Refused("nothing to accept: no task is done")
        else:
            lines = [self.task_line(task_id)]
            if not is_done(lines[0].record):
                raise Refused(f"task {task_id} is pending; only a done task can be accepted")
        for line in lines:
            self.doc.remove(line)
            tombstone = {"t": "accept", "id": line.record["id"], "name": line.record["name"]}
            for kept in ("spec", "commit"):  # which spec it served, which commit built it
                if line.record.get(kept):
                    tombstone[kept] = line.record[kept]
            self.doc.append(tombstone)
        self._drop_served_answers()
        return [line.record for line in lines]

    def _drop_served_answers(self) -> None:
        """Answered questions no task left asks or inherits have served (git history keeps them)."""
        tasks = self.tasks()
        wanted = {task["id"] for task in tasks} | {q for task in tasks for q in task.get("questions", [])}
        for line in self._of("issue"):
            question = line.record
            served = question.get("task") not in wanted and question["id"] not in wanted
            if is_question(question) and question.get("answer") and served:
                self.doc.remove(line)

    def reject(
        self,
        task_id: str | None,
        reason: str,
        kill_reason: KillReason | None = None,
        kill_log: str | None = None,
    ) -> Record:
        """Send a done task back to pending with the reason; the loop also rejects running
        (pending) tasks it had to kill, with a kill_reason."""
        require_text(reason, "the reason")
        if not reason.strip():
            raise InvalidInput("a rejection needs a reason")
        line = self.task_line(task_id or self._only_done_task())
        task = line.record
        if not is_done(task) and not kill_reason:
            raise Refused(f"task {task['id']} is pending; only a done task can be rejected")
        task["s"] = Status.PENDING
        _drop_claim(task)  # back in the pool for whichever runner comes next
        task["reject_reason"] = reason
        task["verdict"] = Verdict.KILLED if kill_reason else Verdict.REJECTED
        tombstone = {"t": "reject", "id": task["id"], "reason": reason}
        if kill_reason:
            task["kill_reason"] = tombstone["kill_reason"] = str(kill_reason)
            if kill_log:
                task["kill_log"] = kill_log
        self.doc.rewrite(line)
        self.doc.append(tombstone)
        return task

    def _only_done_task(self) -> str:
        done: list[str] = [task["id"] for task in self.tasks() if is_done(task)]
        if not done:
            raise Refused("nothing to reject: no task is done")
        if len(done) > 1:
            raise InvalidInput(f"name the task to reject: {len(done)} tasks are done ({', '.join(done[:5])})")
        return done[0]

    def delete(self, task_id: str, force: bool = False) -> tuple[Record, list[str]]:
        """Remove a task. Tasks that depend on it inherit its children (tasks naming it as parent);
        with no children they are refused, unless `force` drops the dependency."""
        line = self.task_line(task_id)
        children = [task["id"] for task in self.tasks() if task.get("parent") == task_id]
        dependents = [other for other in self.task_lines() if task_id in other.record.get("deps", [])]
        if dependents and not children and not force:
            names = ", ".join(other.record["id"] for other in dependents)
            raise Refused(f"{names} depend(s) on {task_id}; decompose it first or use --force")
        for other in dependents:
            deps = [dep for dep in other.record["deps"] if dep != task_id]
            other.record["deps"] = deps + [
                child for child in children if child not in deps and child != other.record["id"]
            ]
            self.doc.rewrite(other)
        self.doc.remove(line)
        return line.record, [other.record["id"] for other in dependents]

    def prioritize(self, spec: str | None = None) -> Record:
        in_scope = [
            line
            for line in self.task_lines()
            if is_pending(line.record) and (spec is None or line.record.get("spec") in (spec, None))
        ]
        priorities = schedule.compute_priorities([line.record for line in in_scope])
        counts = {"prioritized": len(in_scope), "high": 0, "medium": 0, "low": 0, "changed": 0}
        for line in in_scope:
            task, priority = line.record, priorities[line.record["id"]]
            counts[priority] += 1
            if task.get("priority") != priority:
                task["priority"], task["auto_priority"] = priority, True
                self.doc.rewrite(line)
                counts["changed"] += 1
        return counts

    # --- the construct loop's transitions ----------------------------------------------------
    def add_spec(self, path: str) -> None:
        """Record a spec the plan works towards (once) and make it the loop's current one."""
        if path not in self.specs():
            self.doc.append({"t": "spec", "path": path})
        self.update_state(spec=path)

    def record_plan_kill(
        self, spec: str, kill_reason: KillReason | None, kill_log: str | None = None
    ) -> None:
        """The spec's PLAN run was stopped (its time limit, a full context): its record keeps why
        and the run's log. None clears them (a PLAN run that finished)."""
        for line in self._of("spec"):
            if line.record["path"] == spec:
                record = line.record
                if kill_reason is None:
                    if "kill_reason" not in record and "kill_log" not in record:
                        return
                    record.pop("kill_reason", None)
                    record.pop("kill_log", None)
                else:
                    record["kill_reason"], record["kill_log"] = str(kill_reason), kill_log
                self.doc.rewrite(line)
                return

    def record_build(self, task_id: str, files: list[str], tokens: int, cost_usd: float | None) -> Record:
        """A build attempt passed the gate: count it, note the files it changed and its cost, and
        clear what earlier failures left on the task."""
        line = self.task_line(task_id)
        task = line.record
        task["attempts"] = task.get("attempts", 0) + 1
        task["files"] = sorted(files)
        task["verdict"] = Verdict.BUILT
        _add_usage(task, tokens, cost_usd)
        for stale in ("gate_failure", "merge_conflict", "kill_reason", "kill_log", *VERIFY_KILL_FIELDS):
            task.pop(stale, None)
        self.doc.rewrite(line)
        return task

    def record_build_commit(self, task_id: str, commit: str) -> None:
        """The commit that recorded the task's build (a commit cannot name itself, so this goes in
        with the loop's next commit)."""
        line = self.task_line(task_id)
        line.record["commit"] = commit
        self.doc.rewrite(line)

    def record_build_failure(
        self, task_id: str, verdict: Verdict, failure: str, tokens: int, cost_usd: float | None
    ) -> int:
        """A build attempt failed: back to pending with its verdict and the reason; returns the
        attempts so far."""
        line = self.task_line(task_id)
        task = line.record
        task["s"] = Status.PENDING
        task["attempts"] = task.get("attempts", 0) + 1
        task["verdict"] = verdict
        task["gate_failure"] = failure
        _add_usage(task, tokens, cost_usd)
        self.doc.rewrite(line)
        attempts: int = task["attempts"]
        return attempts

    def record_merge_conflict(
        self, task_id: str, files: list[str], tokens: int = 0, cost_usd: float | None = None
    ) -> int:
        """The task's build passed but its changes do not merge with what was built meanwhile: back
        to pending (an attempt, built again from the new HEAD), with the files that conflicted."""
        line = self.task_line(task_id)
        task = line.record
        task["s"] = Status.PENDING
        task["attempts"] = task.get("attempts", 0) + 1
        task["verdict"] = Verdict.MERGE_CONFLICT
        task["merge_conflict"] = sorted(files)
        task["gate_failure"] = (
            "merge_conflict: the build passed its gate, but its changes conflict with work merged"
            f" meanwhile in {', '.join(sorted(files))}; build it again on the current code"
        )
        _add_usage(task, tokens, cost_usd)
        for stale in ("commit", "files"):
            task.pop(stale, None)
        self.doc.rewrite(line)
        attempts: int = task["attempts"]
        return attempts

    def record_unmerged_build(
        self,
        task_id: str,
        files: list[str],
        built: Record,
        max_attempts: int,
        where: str = "merged",
        kill_log: str | None = None,
    ) -> int:
        """The task's build passed but conflicts in `files` with work `where` (merged, pushed)
        meanwhile: back to pending (record_merge_conflict), with what the build's runs spent beyond
        this plan's record of the task (`built`: the task as the build's own plan left it); set
        aside for DECOMPOSE once its builds have conflicted `max_attempts` times."""
        task = self.task_line(task_id).record
        tokens = built.get("tokens", 0) - task.get("tokens", 0)
        cost = (built.get("cost_usd") or 0) - (task.get("cost_usd") or 0)
        attempts = self.record_merge_conflict(task_id, files, max(tokens, 0), cost or None)
        if attempts >= max_attempts:
            reason = f"its builds kept conflicting with work {where} meanwhile; split it into smaller tasks"
            self.set_aside(task_id, KillReason.DOOM_LOOP, reason, kill_log=kill_log)
        return attempts

    def set_aside(
        self, task_id: str, kill_reason: KillReason, reason: str, kill_log: str | None = None
    ) -> Record:
        """The loop gives up building the task as it is: DECOMPOSE splits it next."""
        return self.reject(task_id, reason, kill_reason=kill_reason, kill_log=kill_log)

    def block(self, task_id: str, reason: str) -> Record:
        """The loop gives up on the task: a person must split or rethink it. Nothing depending on
        it is built meanwhile."""
        line = self.task_line(task_id)
        line.record["s"] = Status.BLOCKED
        line.record["blocked_reason"] = reason
        line.record.pop("blocked_by", None)  # the loop's own block: no answer unblocks it
        _drop_claim(line.record)
        self.doc.rewrite(line)
        return line.record

    def record_decomposition(self, task_id: str, children: list[str], depth_of_task: int = 0) -> None:
        """DECOMPOSE replaced the task by `children`: they are one level deeper than it (its depth
        is passed in when the agent already removed it); the task goes."""
        parent = self.find_task(task_id)
        depth = (parent or {}).get("depth", depth_of_task) + 1
        # The answers given for the task hold for its parts: the subtasks name those questions.
        answers = [question["id"] for question in self.answers_for(task_id)]
        for child in children:
            line = self.task_line(child)
            line.record["depth"] = depth
            known = line.record.get("questions", [])
            if answers:
                line.record["questions"] = known + [q for q in answers if q not in known]
            self.doc.rewrite(line)
        if parent is not None:  # the agent may have removed it itself
            self.delete(task_id)

    def record_decompose_failure(self, task_id: str) -> int:
        """DECOMPOSE made too few or too many subtasks (and they were undone); returns how often."""
        line = self.task_line(task_id)
        line.record["decompose_failures"] = line.record.get("decompose_failures", 0) + 1
        self.doc.rewrite(line)
        failures: int = line.record["decompose_failures"]
        return failures

    def reject_reasons(self, task_id: str) -> list[str]:
        return [line.record["reason"] for line in self._of("reject") if line.record["id"] == task_id]

    def record_verify_kill(self, task_id: str, kill_reason: KillReason, kill_log: str) -> int:
        """A VERIFY run of the done task was stopped (its time limit, a full context): it stays
        done, with why and the run's log, for the next VERIFY to know; returns how many of its
        VERIFY runs were stopped so far (the loop sets it aside at max_attempts)."""
        line = self.task_line(task_id)
        task = line.record
        task["verify_kills"] = task.get("verify_kills", 0) + 1
        task["verify_kill_reason"], task["verify_kill_log"] = str(kill_reason), kill_log
        self.doc.rewrite(line)
        kills: int = task["verify_kills"]
        return kills

    def take_verification(self, task_id: str, base: Plan, theirs: Plan) -> Record:
        """Take in what one verifier gave in its own copy of the plan (`theirs`, which started as
        `base`): its verdict on its task, and the tasks and issues it added. Its permissions are
        checked before; nothing else of its copy is taken. Returns what was taken."""
        taken: dict[str, Any] = {"verdict": None, "tasks": [], "issues": []}
        if task_id in theirs.accepted() - base.accepted():
            self.accept(task_id)
            taken["verdict"] = "accepted"
        else:
            reasons = theirs.reject_reasons(task_id)[len(base.reject_reasons(task_id)) :]
            if reasons:
                self.reject(task_id, reasons[-1])
                taken["verdict"], taken["reason"] = "rejected", reasons[-1]
        known, present = base._taken_ids(), self._taken_ids()
        for line in theirs.doc.records():
            record = line.record
            if record["t"] in ("task", "issue") and record["id"] not in known:
                if record["id"] in present:  # two verifiers drew one random id: keep the first
                    taken.setdefault("dropped", []).append(record["id"])
                    continue
                self.doc.append(dict(record))
                present.add(record["id"])
                taken[f"{record['t']}s"].append(record["id"])
        return taken

    # --- claims: runners sharing one git remote --------------------------------------------
    def claim_ttl_s(self) -> float:
        """Age in seconds at which a claim may be taken over (config claim_ttl_ms, default 30 min)."""
        value = self.config().get("claim_ttl_ms", DEFAULT_CLAIM_TTL_MS)
        return parse_duration(value) if isinstance(value, str) else value / 1000  # "30m" or ms

    def claim(self, task_id: str, runner: str, now: str, ttl_s: float | None = None) -> Record:
        """`runner` claims the task at `now` (UTC, ISO 8601): it builds it (a pending task),
        verifies it (a done one) or decomposes it (a killed one), no other runner does. An issue
        (to investigate it) or a spec record (to plan it) is claimed the same way. Claiming one's
        own item again renews the claim. Another runner's claim is refused unless it is older
        than the claim TTL: then it is taken over, and a takeover record keeps the claim it
        replaced."""
        require_text(runner, "the runner")
        if not runner.strip():
            raise InvalidInput("a claim needs a runner name")
        line = self._claim_line(task_id)
        task = line.record
        if task["t"] == "task" and is_blocked(task):  # pending: to build it; done: to verify it
            raise Refused(f"task {task_id} is blocked; only a pending or done task is claimed")
        holder = task.get("claimed_by")
        if holder and holder != runner:
            ttl = self.claim_ttl_s() if ttl_s is None else ttl_s
            age = claim_age_s(task, now)
            if age is not None and age < ttl:
                raise Refused(f"task {task_id} is claimed by {holder} since {task.get('claimed_at', '?')}")
            takeover = {"t": "takeover", "id": task_id, "by": runner, "at": now, "was_claimed_by": holder}
            if task.get("claimed_at"):
                takeover["was_claimed_at"] = task["claimed_at"]
            self.doc.append(takeover)
        task["claimed_by"], task["claimed_at"] = runner, now
        self.doc.rewrite(line)
        return task

    def release(self, task_id: str, runner: str) -> Record | None:
        """Drop `runner`'s claim on the task. None when there is nothing to release (the task is
        gone, accepted, or not claimed); another runner's claim is refused."""
        line = self._find_claimable(task_id)
        if line is None or not line.record.get("claimed_by"):
            return None
        task = line.record
        if task["claimed_by"] != runner:
            raise Refused(f"{task_id} is claimed by {task['claimed_by']}, not by {runner}")
        _drop_claim(task)
        self.doc.rewrite(line)
        return task

    def claims(self) -> list[Record]:
        """The claimed tasks, issues and spec records, in file order; `id` is a spec's path."""
        return [
            {**line.record, "id": claimable_id(line.record)}
            for line in self.doc.lines
            if line.record and line.record.get("t") in CLAIMABLE and line.record.get("claimed_by")
        ]

    def find_claimable(self, item_id: str) -> Record | None:
        """The task, issue or spec record (by path) `item_id` names, or None."""
        line = self._find_claimable(item_id)
        return line.record if line else None

    def _find_claimable(self, item_id: str) -> RecordLine | None:
        for line in self.doc.records():
            if line.record.get("t") in CLAIMABLE and claimable_id(line.record) == item_id:
                return line
        return None

    def _claim_line(self, item_id: str) -> RecordLine:
        line = self._find_claimable(item_id)
        if line is None and item_id.startswith("t-"):
            return self.task_line(item_id)  # says why: accepted, or no such task
        if line is None:
            raise Refused(f"no task, issue or spec {item_id} to claim")
        return line

    # --- issues ---------------------------------------------------------------------------
    def add_issue(self, text: str, priority: str | None = None) -> Record:
        require_text(text, "the issue")
        record = {"t": "issue", "id": new_id("i", self._taken_ids()), "text": text.strip()}
        if priority:
            record["priority"] = priority
        if self.state().get("spec"):
            record["spec"] = self.state()["spec"]
        problems = record_problems(record)
        if problems:
            raise InvalidInput("; ".join(problems))
        self.doc.append(record)
        return record

    def keep_issue_open(self, issue_id: str, reason: str) -> Record:
        """INVESTIGATE leaves the issue open on purpose (a person must decide): not investigated
        again, and not resolved by ralph when tasks were made from it. The loop does the same
        with an issue whose INVESTIGATE runs kept being stopped."""
        require_text(reason, "the reason")
        if not reason.strip():
            raise InvalidInput("say why the issue stays open")
        line = self._issue_line(issue_id)
        line.record["keep_open"] = reason.strip()
        self.doc.rewrite(line)
        return line.record

    def record_investigation_kill(self, issue_id: str, kill_reason: KillReason, kill_log: str) -> int:
        """An INVESTIGATE run of the issue was stopped (its time limit, a full context): the issue
        records why and the run's log; returns how many of its runs were stopped so far."""
        line = self._issue_line(issue_id)
        issue = line.record
        issue["kills"] = issue.get("kills", 0) + 1
        issue["kill_reason"], issue["kill_log"] = str(kill_reason), kill_log
        self.doc.rewrite(line)
        kills: int = issue["kills"]
        return kills

    def _issue_line(self, issue_id: str) -> RecordLine:
        for line in self._of("issue"):
            if line.record["id"] == issue_id:
                if is_question(line.record):
                    raise Refused(f"{issue_id} is a question, not an issue: answer it with `ralph answer`")
                return line
        raise Refused(f"no open issue {issue_id}")

    # --- questions ------------------------------------------------------------------------
    def ask(self, task_id: str, text: str, asked_at: str, asked_by: str | None = None) -> Record:
        """Record a question for a person about a task, and block the task (and so everything that
        depends on it) until it is answered."""
        require_text(text, "the question")
        if not text.strip():
            raise InvalidInput("the question is empty")
        line = self.task_line(task_id)
        task = line.record
        if is_done(task):
            raise Refused(f"task {task_id} is done; reject it first, or ask about a pending task")
        record = {
            "t": "issue",
            "id": new_id("i", self._taken_ids()),
            "kind": "question",
            "text": text.strip(),
            "task": task_id,
            "asked_at": asked_at,
        }
        if asked_by:
            record["asked_by"] = asked_by
        spec = task.get("spec") or self.state().get("spec")
        if spec:
            record["spec"] = spec
        problems = record_problems(record)
        if problems:
            raise InvalidInput("; ".join(problems))
        if not is_blocked(task) or blocking_question(task):
            task["s"] = Status.BLOCKED
            task["blocked_by"] = record["id"]
            task["blocked_reason"] = _question_reason(record)
            self.doc.rewrite(line)
        self.doc.append(record)
        return record

    def answer(self, question_id: str, text: str, answered_at: str) -> tuple[Record, Record | None]:
        """Record a person's answer. The task goes back to pending once none of its questions is
        open (a task the loop blocked for another reason stays blocked). Returns the question and
        the task (None when the task is gone)."""
        require_text(text, "the answer")
        if not text.strip():
            raise InvalidInput("the answer is empty")
        line = next((line for line in self._of("issue") if line.record["id"] == question_id), None)
        if line is None or not is_question(line.record):
            raise Refused(f"no question {question_id}" + (": it is an issue" if line else ""))
        question = line.record
        if question.get("answer"):
            raise Refused(f"question {question_id} is already answered")
        question["answer"], question["answered_at"] = text.strip(), answered_at
        self.doc.rewrite(line)
        task = self.find_task(question.get("task", ""))
        if task is not None and blocking_question(task):
            still_open = self.questions_of(task["id"])
            task_line = self.task_line(task["id"])
            if still_open:
                task["blocked_by"] = still_open[0]["id"]
                task["blocked_reason"] = _question_reason(still_open[0])
            else:
                task["s"] = Status.PENDING
                task.pop("blocked_by", None)
                task.pop("blocked_reason", None)
            self.doc.rewrite(task_line)
        return question, task

    def resolve_issue(self, issue_id: str) -> Record:
        line = self._issue_line(issue_id)
        self.doc.remove(line)
        return line.record

    # --- config ---------------------------------------------------------------------------
    def set_config(self, key: str, value: object) -> Record:
        """Set one key of the config record (added when there is none); other keys keep theirs."""
        found = self._of("config")
        if not found:
            return self.doc.append({"t": "config", key: value}).record
        line = found[0]
        if line.record.get(key, object()) != value:
            line.record[key] = value
            self.doc.rewrite(line)
        return line.record

    def unset_config(self, key: str) -> Record:
        """Remove one key from the config record; a record left with no key goes."""
        found = self._of("config")
        if not found or key not in found[0].record:
            raise Refused(f"config key {key} is not set in plan.jsonl")
        line = found[0]
        del line.record[key]
        if set(line.record) == {"t"}:
            self.doc.remove(line)
        else:
            self.doc.rewrite(line)
        return line.record

    # --- loop state -----------------------------------------------------------------------
    def update_state(self, **fields: object) -> Record:
        found = self._of("state")
        if found:
            line = found[0]
            if all(line.record.get(key) == value for key, value in fields.items()):
                return line.record
            line.record.update(fields)
            self.doc.rewrite(line)
            return line.record
        return self.doc.append({"t": "state", **fields}).record

    def add_spending(self, by_stage: dict[str, dict[str, Any]]) -> Record:
        """Add runs' spending ({stage: {runs, tokens, cost_usd, unknown_runs}}) to the state
        record's totals: what every run so far spent, per stage."""
        spent = {stage: dict(row) for stage, row in self.state().get("spent", {}).items()}
        for stage, row in by_stage.items():
            total = spent.setdefault(stage, {"runs": 0, "tokens": 0, "cost_usd": 0.0, "unknown_runs": 0})
            for key in ("runs", "tokens", "unknown_runs"):
                total[key] = total.get(key, 0) + row.get(key, 0)
            total["cost_usd"] = round(total.get("cost_usd", 0.0) + row.get("cost_usd", 0.0), 6)
        return self.update_state(spent=spent)

    def check_integrity(self) -> None:
        """Refuse to leave the plan in a state its own loader would reject."""
        problems = integrity_problems(self.doc)
        if problems:
            raise PlanInvalid(problems)


DEFAULT_CLAIM_TTL_MS = CONFIG_KEYS["claim_ttl_ms"].default
CLAIM_FIELDS = ("claimed_by", "claimed_at")
CLAIMABLE = ("task", "issue", "spec")  # a task to build, verify or decompose; an issue; a spec to plan


def claimable_id(record: Record) -> str:
    """What a claim names: a task's or issue's id, a spec record's path."""
    item: str = record["path"] if record.get("t") == "spec" else record["id"]
    return item


def _drop_claim(task: Record) -> None:
    for key in CLAIM_FIELDS:
        task.pop(key, None)


def claim_age_s(task: Record, now: str) -> float | None:
    """Seconds since the task was claimed, or None when its claimed_at does not parse (such a
    claim counts as expired: a person or a broken runner wrote it)."""
    from datetime import datetime

    try:
        claimed = datetime.fromisoformat(str(task.get("claimed_at")))
        current = datetime.fromisoformat(now)
        return (current - claimed).total_seconds()
    except (TypeError, ValueError):
        return None


def is_question(issue: Record) -> bool:
    return issue.get("kind") == "question"


def _question_reason(question: Record) -> str:
    """blocked_reason's words for people; what blocks the task is its blocked_by field."""
    return f"waiting for the answer to question {question['id']}: {question['text'][:200]}"


def _add_usage(task: Record, tokens: int, cost_usd: float | None) -> None:
    """Sum an attempt's usage onto the task, so `git log -p plan.jsonl` shows what it cost."""
    if tokens:
        task["tokens"] = task.get("tokens", 0) + tokens
        task["attempt_tokens"] = [*task.get("attempt_tokens", []), tokens]
    if cost_usd is None:  # counted, so that no one reads the known part as the whole cost
        task["unknown_cost_runs"] = task.get("unknown_cost_runs", 0) + 1
    else:
        task["cost_usd"] = round(task.get("cost_usd", 0) + cost_usd, 6)
