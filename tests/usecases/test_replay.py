"""Runners that share one remote never wedge on their own commands (issue 22): a push that loses
the race catches up with the remote's head by ralph's rules (a decomposition beats a computed
priority, a dependency on a decomposed task moves to its subtasks, what was published first wins a
record both changed), with real git: one bare repository, two clones."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, event, example, given, settings
from hypothesis import strategies as st

from ralph.errors import CodeConflict, InvalidInput, Refused
from ralph.plan.loader import load, parse
from ralph.plan.plan import Plan
from ralph.store.git import Repo
from ralph.store.reader import read_plan
from ralph.store.remote import Remote
from ralph.store.transaction import transaction
from ralph.usecases import claims, questions, tasks
from tests.support.gitrepo import Shared, git
from tests.support.plans import task_in

A, B, C = ({"id": f"t-{n * 6}", "name": n.upper()} for n in "abc")


def remote_of(clone: Path) -> Remote:
    return Remote(Repo(clone), retries=0, backoff_s=0.01, sleep=lambda _: None)


def on_origin(shared: Shared) -> Plan:
    return Plan(load(shared.plan_on_origin()))


def decompose(clone: Path, task_id: str, parts: list[dict]) -> list[str]:
    """What DECOMPOSE does: the agent adds subtasks naming the task as parent, the loop records
    the decomposition (the task goes; its dependents depend on the subtasks)."""
    added = tasks.add(clone, [{**part, "parent": task_id} for part in parts])
    with transaction(clone) as change:
        change.plan.record_decomposition(task_id, [task["id"] for task in added])
        change.message = f"ralph(decompose): {task_id}"
    return [task["id"] for task in added]


def push(clone: Path, runner: str) -> None:
    """Publish the clone's commits (the loop's release at a run's end does this)."""
    claims.release_all(clone, runner, remote_of(clone))


def three_tasks_two_clones(repo: Path, base: Path) -> Shared:
    tasks.add(repo, [dict(A), dict(B), dict(C)])
    shared = Shared(repo, base)
    for name in RUNNERS:
        shared.clone(name)
    return shared


@pytest.fixture
def two(shared_copy):
    """origin with tasks A, B and C, and two clones of it (made once, copied for each test)."""
    shared = shared_copy("replay-two", three_tasks_two_clones)
    return shared, shared.base / "one", shared.base / "two"


# `make test` has it in plan/test_replay.py:
# test_a_decomposition_replayed_on_a_plan_another_runner_prioritized_goes_through
# (a push that lost the race replayed over git: the priority test below)
@pytest.mark.slow
def test_a_decomposition_published_after_a_computed_priority_of_the_same_task_goes_through(two):
    # The bench's wedge: runner two's automatic `task prioritize` reached the remote first.
    shared, one, other = two
    parts = decompose(one, B["id"], [{"name": "B1"}, {"name": "B2"}])
    tasks.prioritize(other)
    push(other, "two")
    push(one, "one")  # exit 11 "cannot merge origin/main" before
    origin = on_origin(shared)
    assert origin.find_task(B["id"]) is None
    assert [task["id"] for task in origin.tasks()] == [A["id"], C["id"], *parts]
    assert task_in(origin, A["id"])["auto_priority"] is True
    assert git(one, "rev-parse", "HEAD") == git(shared.origin, "rev-parse", "main")


def test_a_priority_published_after_a_decomposition_of_the_same_task_is_dropped(two):
    shared, one, other = two
    parts = decompose(one, B["id"], [{"name": "B1"}, {"name": "B2"}])
    push(one, "one")
    tasks.prioritize(other)
    push(other, "two")
    origin = on_origin(shared)
    assert origin.find_task(B["id"]) is None and all(task_in(origin, part) for part in parts)


# `make test` has it in plan/test_replay.py:
# test_a_subtask_depending_on_a_task_another_runner_decomposed_depends_on_its_subtasks
@pytest.mark.slow
def test_a_new_task_depending_on_a_task_another_runner_decomposed_depends_on_its_subtasks(two):
    shared, one, other = two
    parts = decompose(other, B["id"], [{"name": "B1"}, {"name": "B2"}])
    push(other, "two")
    [subtask] = decompose(one, C["id"], [{"name": "C1", "deps": [B["id"]]}])
    push(one, "one")
    origin = on_origin(shared)
    assert task_in(origin, subtask)["deps"] == parts


def test_a_record_both_runners_changed_by_hand_takes_the_version_published_first(two):
    shared, one, other = two
    for clone, notes in ((other, "theirs"), (one, "ours")):
        with transaction(clone) as change:
            line = change.plan.task_line(A["id"])
            line.record["notes"] = notes
            change.plan.doc.rewrite(line)
            change.message = f"notes: {notes}"
    push(other, "two")
    push(one, "one")
    assert task_in(on_origin(shared), A["id"])["notes"] == "theirs"
    said = replay_said(shared)
    assert len(said) == 1 and said[0].startswith("merged the plan change of ")  # no op: by record
    assert git(one, "status", "--porcelain") == ""


def test_a_build_of_a_task_another_runner_decomposed_meanwhile_is_dropped_and_the_merge_says_why(two):
    shared, one, other = two
    parts = decompose(other, B["id"], [{"name": "B1"}, {"name": "B2"}])
    push(other, "two")
    tasks.done(one, B["id"])
    tasks.done(one, A["id"])
    push(one, "one")
    origin = on_origin(shared)
    assert origin.find_task(B["id"]) is None and task_in(origin, A["id"])["s"] == "d"
    assert replay_said(shared) == [
        f"dropped done: {B['id']} was decomposed into {', '.join(parts)}",
        "applied done",
    ]


def test_a_message_whose_operations_do_not_make_its_commits_change_is_merged_by_record(two):
    shared, one, other = two
    plan = one / "plan.jsonl"
    plan.write_bytes(plan.read_bytes().replace(b'"name": "C"', b'"name": "C by hand"'))
    git(one, "commit", "-qam", f'notes\n\nRalph-Op: {{"op":"done","args":["{A["id"]}",null]}}')
    hand = git(one, "rev-parse", "HEAD").strip()
    tasks.prioritize(other)
    push(other, "two")
    push(one, "one")
    origin = on_origin(shared)
    assert task_in(origin, C["id"])["name"] == "C by hand"
    assert task_in(origin, A["id"])["s"] == "p"  # the trailer's `done` was not made
    assert replay_said(shared) == [
        f"merged the plan change of {hand[:12]}: its operations do not make it: merged by record"
    ]


def test_the_loops_commit_of_plan_and_code_is_replayed_and_a_second_build_yields_to_the_first(two):
    shared, one, other = two
    tasks.done(other, A["id"])
    push(other, "two")
    tasks.done(one, A["id"], commit=False)  # as the loop's agent does, RALPH_COMMIT=0
    (one / "app.txt").write_text("built\n")
    Repo(one).index.commit_paths({"plan.jsonl", "app.txt"}, "ralph(build): A")  # as the loop commits
    push(one, "one")
    [said] = replay_said(shared)
    assert said.startswith("dropped done: ")  # done already: the build published first stands
    # The code merges: a loop yields before this when its task was taken over (its claim ref moved).
    assert git(shared.origin, "show", "main:app.txt") == "built\n"


def test_each_of_ralphs_commands_records_the_operation_it_made_in_its_commit(two):
    _, one, _ = two
    tasks.done(one, A["id"])
    assert git(one, "log", "-1", "--format=%B").strip().splitlines()[-1] == (
        f'Ralph-Op: {{"op":"done","args":["{A["id"]}",null]}}'
    )


def replay_said(shared: Shared) -> list[str]:
    """What the runners' catch-up merges on the remote say of the operations they replayed."""
    said = []
    for body in git(shared.origin, "log", "--format=%B%x00", "main").split("\0"):
        if "Ralph-Replayed: " in body:
            said += [line for line in body.strip().splitlines()[2:] if line and not line.startswith("Ralph-")]
    return said


# --- any sequence of ralph's commands on two runners ----------------------------------------------

COMMANDS = st.lists(
    st.tuples(
        st.integers(0, 1),  # which runner
        st.sampled_from(["decompose", "prioritize", "claim", "takeover", "done", "reject", "ask", "push"]),
        st.integers(0, 5),  # which task (of those the command may take)
    ),
    min_size=1,
    max_size=12,
)
RUNNERS = ("one", "two")


def act(clone: Path, runner: str, command: str, pick: int) -> str:
    """One of ralph's commands on the clone, as the loop or an agent runs it; returns what it did
    ('skipped' when its precondition does not hold on this clone's plan)."""
    plan = read_plan(clone)
    pending = [task["id"] for task in plan.tasks() if task.get("s", "p") == "p"]
    done = [task["id"] for task in plan.tasks() if task.get("s") == "d"]
    try:
        if command == "decompose" and pending:
            decompose(clone, pending[pick % len(pending)], [{"name": "part 1"}, {"name": "part 2"}])
        elif command == "prioritize" and pending:
            tasks.prioritize(clone)
        elif command in ("claim", "takeover"):
            ttl = 0.0 if command == "takeover" else None  # every claim is stale to a takeover
            claims.claim_next(clone, None, runner, remote_of(clone), ttl)
        elif command == "done" and pending:
            tasks.done(clone, pending[pick % len(pending)])
        elif command == "reject" and done:
            tasks.reject(clone, done[pick % len(done)], "not yet")
        elif command == "ask" and pending:
            questions.ask(clone, "which way?", pending[pick % len(pending)], runner)
        elif command == "push":
            push(clone, runner)
        else:
            return "skipped"
    except (Refused, InvalidInput):  # refused by the clone's plan, as the command line would be
        return "refused"
    return command


def run_commands(template: Shared, commands: list[tuple[int, str, int]]) -> None:
    with tempfile.TemporaryDirectory(prefix="ralph-replay-prop-") as folder:
        shared = Shared.copy_of(template, Path(folder))  # each example on fresh copies
        clones = [shared.base / name for name in RUNNERS]
        for which, command, pick in commands:
            event(act(clones[which], RUNNERS[which], command, pick))
        for clone, runner in zip(clones, RUNNERS, strict=True):  # no RemoteError, no CodeConflict
            push(clone, runner)
        push(clones[0], RUNNERS[0])  # the first caught up with what the second pushed
        assert parse(shared.plan_on_origin())[1] == []  # `ralph check` passes it
        assert git(clones[0], "rev-parse", "HEAD") == git(shared.origin, "rev-parse", "main")
        assert not on_origin(shared).claims()  # every claim was given back
        for clone in clones:
            assert git(clone, "status", "--porcelain") == ""
        merges = git(shared.origin, "log", "--merges", "--format=%B%x00", "main").split("\0")
        assert all("Ralph-Replayed: " in body for body in merges if body.strip())  # caught up by replay
        said = replay_said(shared)
        assert not [line for line in said if line.startswith("merged")]  # each commit's ops, no record merge
        for line in said:
            event(line.split(":")[0])


FUNCTION_FIXTURES = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def seeded_two_clones(repo: Path, base: Path) -> Shared:
    tasks.add(repo, [dict(A), dict(B), dict({**C, "deps": [B["id"]]})])
    shared = Shared(repo, base)
    for name in RUNNERS:
        shared.clone(name)
    return shared


@pytest.fixture
def seeded(_shared_templates) -> Shared:
    """origin with A, B and C (C depending on B) and a clone for each runner, made once per test
    process: each example runs on copies of its own."""
    return _shared_templates("replay-seeded", seeded_two_clones)


# `make test` runs the bench's wedge alone: the sequences hypothesis makes up (two, the same each
# run, cost twice the wedge) run in the slow run below, 80 new ones each time.
@settings(FUNCTION_FIXTURES, phases=[Phase.explicit])
@given(commands=COMMANDS)
# The bench's wedge: one runner's DECOMPOSE of a task another runner's `task prioritize` changed.
@example(commands=[(1, "prioritize", 0), (1, "push", 0), (0, "decompose", 1), (0, "push", 0)])
def test_no_sequence_of_ralphs_commands_on_two_runners_ends_in_a_conflict(seeded, commands):
    run_commands(seeded, commands)


@pytest.mark.slow
@settings(FUNCTION_FIXTURES, max_examples=80)
@given(commands=COMMANDS)
def test_no_sequence_of_ralphs_commands_on_two_runners_ends_in_a_conflict_long_run(seeded, commands):
    run_commands(seeded, commands)


def test_claims_go_back_even_when_the_runners_own_commits_cannot_be_published(two):
    shared, one, other = two
    claims.claim_next(one, None, "one", remote_of(one))
    for clone, text in ((other, "theirs\n"), (one, "ours\n")):  # one file, changed on both
        (clone / "app.txt").write_text(text)
        git(clone, "add", "app.txt")
        git(clone, "commit", "-qm", f"app: {text.strip()}")
    claims.claim_next(other, None, "two", remote_of(other))  # pushes their app.txt too
    assert [t["claimed_by"] for t in on_origin(shared).claims()] == ["one", "two"]
    with pytest.raises(CodeConflict):
        push(one, "one")
    assert [t["claimed_by"] for t in on_origin(shared).claims()] == ["two"]
    assert (one / "app.txt").read_text() == "ours\n"  # nothing of the runner's own was touched


def test_a_commits_operations_are_checked_once_however_many_rounds_it_waits(two, monkeypatch):
    """A runner losing races replays its unpublished commits in every round: whether a commit's
    recorded operations make its change is asked of each commit once."""
    from ralph.usecases import sync

    shared, one, other = two
    tasks.done(one, A["id"])
    tasks.prioritize(other)
    push(other, "two")
    repo = Repo(one)
    remote = remote_of(one)
    remote_head = remote.fetch()
    assert remote_head is not None
    checked: list[bytes] = []
    real = sync._reproduces

    def counted(before: bytes, after: bytes, ops: list) -> bool:
        checked.append(after)
        return real(before, after, ops)

    monkeypatch.setattr(sync, "_reproduces", counted)
    rounds = [sync._replayed(repo, repo.head() or "", remote_head) for _ in range(3)]
    assert len(checked) == 1  # the one unpublished commit, checked in the first round alone
    assert rounds[0] == rounds[1] == rounds[2]
    assert task_in(Plan(load(rounds[0][0])), A["id"])["s"] == "d"  # replayed on the remote's plan
