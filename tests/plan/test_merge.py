"""The three-way merge of plan.jsonl by record (ralph.plan.merge): one test per rule, then
properties over plans that the real transitions (ralph.plan.plan.Plan) made on two branches."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ralph.errors import InvalidInput, Refused
from ralph.plan.loader import load, parse
from ralph.plan.merge import merge_bytes
from ralph.plan.plan import Plan


def task(task_id: str, name: str = "", /, **fields: object) -> dict:
    return {"t": "task", "id": f"t-{task_id}", "name": name or task_id.upper(), **fields}


def text(*records: dict | str) -> bytes:
    """A plan.jsonl: records as ralph writes them; a str is a line as it is (a hand edit)."""
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records).encode()


def merge(base, ours, theirs):
    return merge_bytes(base if isinstance(base, bytes) else text(*base), text(*ours), text(*theirs))


def records(data: bytes) -> list[dict]:
    return [line.record for line in load(data).records()]


def clean(base, ours, theirs) -> list[dict]:
    merged = merge(base, ours, theirs)
    assert merged.conflicts == [], merged.data.decode()
    assert parse(merged.data)[1] == []  # a clean merge always passes `ralph check`
    return records(merged.data)


def conflicted(base, ours, theirs) -> tuple[list[str], list[str]]:
    """The conflicts the merge reports, and the problems `ralph check` finds in what it wrote."""
    merged = merge(base, ours, theirs)
    assert merged.conflicts
    return [str(c) for c in merged.conflicts], [str(p) for p in parse(merged.data)[1]]


A, B, C = task("a"), task("b"), task("c")


# --- added ---------------------------------------------------------------------------------------


def test_a_record_added_on_one_side_is_kept_and_theirs_come_after_ours():
    assert clean([A], [A, B], [A, C, task("d")]) == [A, B, C, task("d")]
    assert clean([A], [A], [A, C]) == [A, C]
    assert clean([A], [A, B], [A]) == [A, B]


def test_a_record_added_on_both_sides_alike_is_kept_once_whatever_its_spelling():
    spelled = '{"name": "B",   "id": "t-b", "t": "task"}'
    assert merge([A], [A, spelled], [A, B]).data == text(A, spelled)


def test_a_task_added_on_both_sides_differently_conflicts():
    conflicts, problems = conflicted([A], [A, task("b", "Ours")], [A, task("b", "Theirs")])
    assert conflicts == [
        "plan.jsonl:2: merge conflict: task t-b was added on both sides with different content"
    ]
    assert problems[0].startswith(
        "plan.jsonl:2: unresolved git merge conflict marker (<<<<<<< ours, task t-b"
    )


def test_with_no_common_ancestor_the_base_is_empty():
    assert clean(b"", [A], [B]) == [A, B]


# --- changed on one side ---------------------------------------------------------------------------


def test_a_record_changed_on_one_side_takes_that_sides_version():
    done = task("a", s="d")
    assert clean([A, B], [done, B], [A, B]) == [done, B]
    assert clean([A, B], [A, B], [done, B]) == [done, B]


def test_a_record_deleted_on_one_side_and_unchanged_on_the_other_is_deleted():
    assert clean([A, B, C], [A, C], [A, B, C]) == [A, C]
    assert clean([A, B, C], [A, B, C], [A, C]) == [A, C]
    assert clean([A, B], [A], [A]) == [A]


def test_a_record_deleted_on_one_side_and_changed_on_the_other_conflicts_and_keeps_the_change():
    renamed = task("b", "Renamed")
    conflicts, _ = conflicted([A, B], [A], [A, renamed])
    assert conflicts == [
        "plan.jsonl:2: merge conflict: task t-b was deleted on our side and changed on theirs"
    ]
    conflicts, _ = conflicted([A, B], [A, renamed], [A])
    assert conflicts == [
        "plan.jsonl:2: merge conflict: task t-b was changed on our side and deleted on theirs"
    ]
    written = merge([A, B], [A], [A, renamed]).data.decode().splitlines()
    assert written == [
        json.dumps(A),
        "<<<<<<< ours, task t-b was deleted on our side and changed on theirs",
        "=======",
        json.dumps(renamed),
        ">>>>>>> theirs, task t-b",
    ]


def test_a_task_decomposed_on_one_side_beats_a_computed_priority_or_a_claim_on_the_other():
    # Runner one decomposed t-b (it goes, two subtasks name it as parent); runner two's
    # `task prioritize` gave it a priority, or runner two claimed it: the decomposition wins.
    parts = [task("b1", parent="t-b"), task("b2", parent="t-b")]
    prioritized = task("b", priority="high", auto_priority=True)
    claimed = task("b", claimed_by="two", claimed_at="2026-01-01T00:00:00+00:00")
    for changed in (prioritized, claimed):
        assert clean([A, B], [A, *parts], [A, changed]) == [A, *parts]
        assert clean([A, B], [A, changed], [A, *parts]) == [A, *parts]


def test_a_deleted_task_against_a_priority_a_person_set_still_conflicts():
    conflicts, _ = conflicted([A, B], [A], [A, task("b", priority="high")])
    assert conflicts == [
        "plan.jsonl:2: merge conflict: task t-b was deleted on our side and changed on theirs"
    ]
    conflicts, _ = conflicted([A, B], [A], [A, task("b", priority="high", auto_priority=True, notes="n")])
    assert len(conflicts) == 1


def test_a_priority_computed_on_both_sides_takes_the_higher_and_one_set_by_a_person_conflicts():
    low, high = (task("a", priority=p, auto_priority=True) for p in ("low", "high"))
    assert clean([A], [low], [high]) == [high]
    assert clean([A], [high], [low]) == [high]
    conflicted([A], [task("a", priority="low")], [high])


def test_a_dependency_on_a_task_the_other_side_decomposed_moves_to_its_subtasks():
    parts = [task("b1", parent="t-b"), task("b2", parent="t-b")]
    # Runner two added t-c depending on t-b (and t-a) while runner one decomposed t-b.
    theirs = [A, B, task("c", deps=["t-a", "t-b"])]
    assert clean([A, B], [A, *parts], theirs) == [A, *parts, task("c", deps=["t-a", "t-b1", "t-b2"])]
    assert clean([A, B], theirs, [A, *parts]) == [A, task("c", deps=["t-a", "t-b1", "t-b2"]), *parts]


def test_a_dependency_on_a_decomposed_task_moves_even_when_the_dependent_changed_on_both_sides():
    parts = [task("b1", parent="t-b"), task("b2", parent="t-b")]
    base = [A, B, task("c", deps=["t-b"])]
    ours = [A, *parts, task("c", deps=["t-b1", "t-b2"])]  # ralph's decompose moved it here
    theirs = [A, B, task("c", deps=["t-b"], priority="low", auto_priority=True)]
    assert clean(base, ours, theirs)[-1] == task(
        "c", deps=["t-b1", "t-b2"], priority="low", auto_priority=True
    )


# --- changed on both sides ---------------------------------------------------------------------------


def test_fields_changed_on_different_sides_merge():
    ours = task("a", notes="ours")
    theirs = task("a", priority="high")
    assert clean([A], [ours], [theirs]) == [task("a", notes="ours", priority="high")]


def test_a_field_removed_on_one_side_and_unchanged_on_the_other_is_removed():
    base = task("a", gate_failure="red", notes="n")
    assert clean([base], [task("a", notes="n")], [task("a", gate_failure="red", notes="m")]) == [
        task("a", notes="m")
    ]


@pytest.mark.parametrize(("ours", "theirs", "status"), [("d", "p", "d"), ("p", "d", "d")])
def test_status_moves_forward_only(ours, theirs, status):
    # a blocked task that one side unblocked (pending) and the other built (done); a status only
    # one side changed takes that side's value, like any field (a rejection sends a task back)
    base = task("a", s="b", notes="base")
    merged = clean([base], [task("a", s=ours, notes="ours")], [task("a", s=theirs, notes="base", attempts=2)])
    assert merged == [task("a", s=status, notes="ours", attempts=2)]


def test_status_pending_by_default_and_pending_written_out_are_the_same_status():
    base = task("a", s="d")
    assert clean([base], [task("a")], [task("a", s="p")]) == [task("a", s="p")]
    assert clean([base], [task("a", s="p")], [task("a")]) == [task("a", s="p")]


def test_blocked_against_another_status_conflicts():
    conflicts, _ = conflicted([A], [task("a", s="b")], [task("a", s="d")])
    assert conflicts == ["plan.jsonl:1: merge conflict: task t-a: 's' changed on both sides"]


@pytest.mark.parametrize("field", ["attempts", "tokens"])
def test_task_counters_take_the_larger(field):
    base = task("a", **{field: 1})
    assert clean([base], [task("a", **{field: 3})], [task("a", **{field: 2})]) == [task("a", **{field: 3})]
    assert clean([base], [task("a", **{field: 2})], [task("a", **{field: 3})]) == [task("a", **{field: 3})]
    assert clean([A], [task("a", **{field: 2})], [task("a", **{field: 0})]) == [task("a", **{field: 2})]


def test_the_iteration_counter_takes_the_larger():
    state = {"t": "state", "iteration": 1, "stage": "BUILD"}
    assert clean([state], [{**state, "iteration": 4}], [{**state, "iteration": 3}]) == [
        {**state, "iteration": 4}
    ]


def test_dependencies_take_the_union_in_order_without_what_either_side_removed():
    d, e = task("d"), task("e")
    base = task("x", deps=["t-a", "t-b"])
    ours = task("x", deps=["t-a", "t-c"])  # removed t-b, added t-c
    theirs = task("x", deps=["t-e", "t-b", "t-a", "t-d"])  # added t-e and t-d
    assert clean([A, B, C, d, e, base], [A, B, C, d, e, ours], [A, B, C, d, e, theirs])[-1] == task(
        "x", deps=["t-a", "t-c", "t-e", "t-d"]
    )


def test_any_other_field_changed_on_both_sides_conflicts_and_both_versions_keep_what_merged():
    base = task("a", notes="base")
    ours = task("a", notes="ours", attempts=2)
    theirs = task("a", notes="theirs", s="d")
    merged = merge([base], [ours], [theirs])
    assert [str(c) for c in merged.conflicts] == [
        "plan.jsonl:1: merge conflict: task t-a: 'notes' changed on both sides"
    ]
    lines = merged.data.decode().splitlines()
    assert lines[0] == "<<<<<<< ours, task t-a: 'notes' changed on both sides"
    assert json.loads(lines[1]) == task("a", notes="ours", attempts=2, s="d")
    assert lines[2] == "======="
    assert json.loads(lines[3]) == task("a", notes="theirs", attempts=2, s="d")
    assert lines[4] == ">>>>>>> theirs, task t-a"


def test_values_of_different_json_types_are_different_values():
    base = task("a", **{"x-mine": 1})
    conflicts, _ = conflicted([base], [task("a", **{"x-mine": True})], [task("a", **{"x-mine": 1.0})])
    assert conflicts == ["plan.jsonl:1: merge conflict: task t-a: 'x-mine' changed on both sides"]


# --- accept tombstones, reject records and other facts -----------------------------------------------


def accept(task_id: str) -> dict:
    return {"t": "accept", "id": f"t-{task_id}", "name": task_id.upper()}


def reject(task_id: str, reason: str) -> dict:
    return {"t": "reject", "id": f"t-{task_id}", "reason": reason}


def test_an_accepted_task_stays_accepted_whatever_the_other_side_did_to_it():
    done = task("a", s="d")
    rejected = task("a", s="p", reject_reason="no")
    assert clean([done, B], [B, accept("a")], [rejected, B, reject("a", "no")]) == [
        B,
        accept("a"),
        reject("a", "no"),
    ]
    assert clean([done, B], [rejected, B, reject("a", "no")], [B, accept("a")]) == [
        B,
        reject("a", "no"),
        accept("a"),
    ]
    assert clean([done, B], [B, accept("a")], [B]) == [B, accept("a")]  # deleted there: accepted
    assert clean([done], [accept("a")], [accept("a")]) == [accept("a")]


def test_reject_records_are_the_union_each_once():
    base = [A, reject("a", "first")]
    ours = [A, reject("a", "first"), reject("a", "ours"), reject("a", "both")]
    theirs = [A, reject("a", "first"), reject("a", "both"), reject("a", "theirs")]
    assert clean(base, ours, theirs) == [*ours, reject("a", "theirs")]


def test_a_reject_record_one_side_has_and_the_other_lost_comes_back():
    assert clean([A, reject("a", "why")], [A], [A, reject("a", "why")]) == [A, reject("a", "why")]


def test_a_fact_repeated_on_one_side_keeps_its_copies():
    twice = [A, reject("a", "red"), reject("a", "red")]
    assert clean([A], twice, [A, reject("a", "red")]) == twice


def test_spec_and_unknown_records_are_kept_once_unless_one_side_removed_them():
    spec, note = {"t": "spec", "path": "specs/a.md"}, {"t": "note", "text": "kept as it is"}
    assert clean([], [spec, note], [note, spec]) == [spec, note]
    assert clean([spec, note], [spec], [spec, note]) == [spec]
    assert clean([spec, note], [spec, note], [note]) == [note]


def test_a_spec_merges_by_path_so_a_stopped_plan_mark_is_not_a_second_spec():
    spec = {"t": "spec", "path": "specs/a.md"}
    stopped = {**spec, "kill_reason": "timeout", "kill_log": "build/ralph-logs/plan.log"}
    other = {"t": "spec", "path": "specs/b.md"}
    assert clean([spec], [stopped], [spec, other]) == [stopped, other]
    assert clean([stopped], [stopped], [spec]) == [spec]  # their PLAN run finished: the mark goes
    stopped_again = {**stopped, "kill_reason": "context_limit"}
    conflicts, _ = conflicted([spec], [stopped], [stopped_again])
    assert conflicts and "spec specs/a.md" in conflicts[0]


def test_a_spec_added_on_both_sides_merges_field_by_field_and_keeps_the_claim():
    """Two runners start on one spec that has no record yet: each adds it, and the first may have
    claimed it to plan and pushed before the second merges. That was a conflict, which ended the
    second runner's run at once (REMOTE)."""
    spec = {"t": "spec", "path": "specs/a.md"}
    claimed = {**spec, "claimed_by": "runner-0", "claimed_at": "2026-11-24T09:10:49+00:00"}
    assert clean([], [spec], [claimed]) == [claimed]
    assert clean([], [claimed], [spec]) == [claimed]
    other = {**spec, "claimed_by": "runner-1", "claimed_at": "2026-11-24T09:10:50+00:00"}
    conflicts, _ = conflicted([], [other], [claimed])  # two runners' claims: the later one drops its own
    assert conflicts and "spec specs/a.md" in conflicts[0]


# --- config and state --------------------------------------------------------------------------------


def test_the_config_record_merges_field_by_field():
    base = {"t": "config", "max_attempts": 3}
    ours = {"t": "config", "max_attempts": 3, "gate": ["make", "test"]}
    theirs = {"t": "config", "max_attempts": 5}
    assert clean([base], [ours], [theirs]) == [{"t": "config", "max_attempts": 5, "gate": ["make", "test"]}]
    conflicts, _ = conflicted([base], [{"t": "config", "max_attempts": 4}], [theirs])
    assert conflicts == [
        "plan.jsonl:1: merge conflict: the config record: 'max_attempts' changed on both sides"
    ]


def test_spending_saved_on_both_sides_adds_up_each_sides_runs():
    # two runners sharing a remote each add their own runs to the state record's totals
    row = {"runs": 1, "tokens": 100, "cost_usd": 0.5, "unknown_runs": 0}
    state = {"t": "state", "iteration": 1, "spent": {"BUILD": row}}
    ours = {**state, "spent": {"BUILD": {**row, "runs": 3, "tokens": 300, "cost_usd": 1.5}}}
    verify = {"runs": 1, "tokens": 50, "cost_usd": 0.25, "unknown_runs": 1}
    build = {**row, "runs": 2, "tokens": 200, "cost_usd": 1.0}
    theirs = {**state, "spent": {"BUILD": build, "VERIFY": verify}}
    total = {"runs": 4, "tokens": 400, "cost_usd": 2.0, "unknown_runs": 0}
    assert clean([state], [ours], [theirs]) == [{**state, "spent": {"BUILD": total, "VERIFY": verify}}]


def test_the_same_spending_saved_on_both_sides_still_adds_up_each_sides_runs():
    """Two runners whose runs cost exactly the same (scripted or cached agents): their state
    records are alike, yet each side's runs happened: summed, not taken once."""
    row = {"runs": 1, "tokens": 100, "cost_usd": 0.5, "unknown_runs": 0}
    state = {"t": "state", "iteration": 1, "spent": {"BUILD": row}}
    both = {**state, "spent": {"BUILD": {**row, "runs": 2, "tokens": 200, "cost_usd": 1.0}}}
    total = {"runs": 3, "tokens": 300, "cost_usd": 1.5, "unknown_runs": 0}
    assert clean([state], [both], [both]) == [{**state, "spent": {"BUILD": total}}]
    # alike but for another field: the spending is still summed
    later = {**both, "iteration": 2}
    assert clean([state], [both], [later]) == [{**later, "spent": {"BUILD": total}}]
    assert clean([state], [state], [state]) == [state]  # nobody spent: as it was


def test_a_spec_checked_on_both_sides_is_checked_again_not_a_conflict():
    """Each side's passing spec check read its own code; the merged code is neither: the record
    drops the check, so the next run checks the spec again."""
    spec = {"t": "spec", "path": "specs/a.md", "planned": True}
    ours = {**spec, "checked_commit": "a" * 40, "checked_spec": "d" * 64}
    theirs = {**spec, "checked_commit": "b" * 40, "checked_spec": "e" * 64}
    assert clean([spec], [ours], [theirs]) == [spec]
    assert clean([spec], [ours], [spec]) == [ours]  # checked on one side only: that check stands


def test_a_state_record_added_on_both_sides_merges_field_by_field():
    ours = {"t": "state", "iteration": 2, "spec": "specs/a.md"}
    theirs = {"t": "state", "iteration": 1, "spec": "specs/a.md", "stage": "BUILD"}
    assert clean([], [ours], [theirs]) == [
        {"t": "state", "iteration": 2, "spec": "specs/a.md", "stage": "BUILD"}
    ]


# --- the rules across records ------------------------------------------------------------------------


def test_a_dependency_on_a_task_the_other_side_deleted_is_a_conflict_check_names():
    conflicts, problems = conflicted([A, B], [A], [A, B, task("c", deps=["t-b"])])
    assert conflicts == ["plan.jsonl:2: task t-c depends on unknown task t-b"]
    assert problems == conflicts


def test_a_cycle_made_of_one_dependency_from_each_side_is_a_conflict():
    conflicts, _ = conflicted([A, B], [task("a", deps=["t-b"]), B], [A, task("b", deps=["t-a"])])
    assert conflicts == ["plan.jsonl:1: dependency cycle: t-a -> t-b -> t-a"]


def test_a_dependency_on_a_task_the_other_side_accepted_is_satisfied():
    done = task("a", s="d")
    assert clean([done], [accept("a")], [done, task("b", deps=["t-a"])]) == [
        accept("a"),
        task("b", deps=["t-a"]),
    ]


# --- bytes ---------------------------------------------------------------------------------------------


def test_every_line_the_merge_did_not_change_keeps_its_bytes():
    hand = '  {"name":"A" , "id":"t-a","t":"task",   "x-mine": [1, 2]}'
    ours = text(hand, "", B, "", "")
    merged = merge_bytes(text(hand, "", B), ours, text(hand, "", B, C))
    assert merged.data == text(hand, "", B, C, "", "")  # theirs' new record before ours' trailing blank lines


def test_a_crlf_file_stays_crlf():
    crlf = lambda *rs: text(*rs).replace(b"\n", b"\r\n")  # noqa: E731
    merged = merge_bytes(crlf(A, B), crlf(task("a", s="d"), B), text(A, task("b", notes="n"), C))
    assert merged.data == crlf(task("a", s="d"), task("b", notes="n"), C)


def test_a_last_line_without_a_newline_gets_one_when_a_line_follows_it():
    ours = text(A)[:-1]
    assert merge_bytes(text(A), ours, text(A, B)).data == text(A, B)
    assert merge_bytes(text(A), ours, text(A)).data == ours


def test_the_merge_is_deterministic():
    args = (text(A, B), text(task("a", s="d"), B, C), text(A, task("b", notes="x"), task("d")))
    assert len({merge_bytes(*args).data for _ in range(3)}) == 1


# --- what cannot be merged -------------------------------------------------------------------------------


@pytest.mark.parametrize("side", ["base", "ours", "theirs"])
def test_a_version_with_a_line_that_is_not_a_record_is_refused_by_name_and_line(side):
    versions = {"base": text(A), "ours": text(A), "theirs": text(A)}
    versions[side] = text(A, '{"t": "task", "id": "t-b", "name": }')
    with pytest.raises(InvalidInput) as caught:
        merge_bytes(versions["base"], versions["ours"], versions["theirs"])
    assert str(caught.value).startswith(f"plan.jsonl ({side}):2: invalid JSON: Expecting value")
    assert "\n" not in str(caught.value)


def test_a_version_with_conflict_markers_or_a_duplicate_id_is_refused():
    with pytest.raises(InvalidInput, match=r"^plan.jsonl \(ours\):1: unresolved git merge conflict marker"):
        merge_bytes(b"", b"<<<<<<< HEAD\n", b"")
    with pytest.raises(
        InvalidInput, match=r"^plan.jsonl \(theirs\):2: a second record for t-a \(the first is on line 1\)"
    ):
        merge_bytes(b"", b"", text(A, task("a", "Again")))


# --- properties ------------------------------------------------------------------------------------------

# Operations on a plan, made with the real transitions. Ids are drawn from a small pool shared by the
# two sides, so that the sides touch the same tasks (and sometimes add the same id).
OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["add", "add", "done", "accept", "reject", "delete", "rename", "attempt", "dep"]),
        st.integers(0, 7),
        st.integers(0, 7),
    ),
    max_size=10,
)


def apply(data: bytes, operations: list[tuple[str, int, int]], side: str) -> bytes:
    plan = Plan(load(data))
    for op, i, j in operations:
        tasks = [t["id"] for t in plan.tasks()]
        target = tasks[i % len(tasks)] if tasks else None
        try:
            if op == "add":
                deps = [tasks[j % len(tasks)]] if tasks and j % 2 else []
                plan.add_tasks([{"id": f"t-{i}", "name": f"{side} {i}", "deps": deps}])
            elif target is None:
                continue
            elif op == "done":
                plan.done(target)
            elif op == "accept":
                plan.accept(target)
            elif op == "reject":
                plan.reject(target, f"{side} says no")
            elif op == "delete":
                plan.delete(target, force=True)
            elif op in ("rename", "attempt", "dep"):
                line = plan.task_line(target)
                if op == "rename":
                    line.record["name"] = f"renamed on {side}"
                elif op == "attempt":
                    line.record["attempts"] = line.record.get("attempts", 0) + 1
                elif tasks[j % len(tasks)] != target:
                    line.record["deps"] = [*line.record.get("deps", []), tasks[j % len(tasks)]]
                plan.doc.rewrite(line)
            plan.check_integrity()
        except (Refused, InvalidInput):
            plan = Plan(load(plan.doc.to_bytes() if not plan.doc.touched else data))
            continue
        data = plan.doc.to_bytes()
    return data


def histories(draw_base: list, draw_ours: list, draw_theirs: list) -> tuple[bytes, bytes, bytes]:
    base = apply(b"", [("add", number, 0) for number in range(4)] + draw_base, "base")
    return base, apply(base, draw_ours, "ours"), apply(base, draw_theirs, "theirs")


def content(data: bytes) -> list[str]:
    """The records as a sorted list of canonical JSON, dependency lists in sorted order."""
    found = []
    for record in records(data):
        if "deps" in record:
            record = {**record, "deps": sorted(record["deps"])}
        found.append(json.dumps(record, sort_keys=True))
    return sorted(found)


@settings(max_examples=100)
@given(OPERATIONS, OPERATIONS, OPERATIONS)
def test_merging_a_side_with_the_base_gives_that_side(base_ops, ours_ops, theirs_ops):
    base, ours, theirs = histories(base_ops, ours_ops, theirs_ops)
    with_base = merge_bytes(base, ours, base)
    assert with_base.data == ours and with_base.conflicts == []
    assert merge_bytes(base, base, theirs).data == theirs


@settings(max_examples=100)
@given(OPERATIONS, OPERATIONS, OPERATIONS)
def test_a_merge_is_clean_exactly_when_check_passes_it_and_symmetric_when_clean(
    base_ops, ours_ops, theirs_ops
):
    base, ours, theirs = histories(base_ops, ours_ops, theirs_ops)
    merged = merge_bytes(base, ours, theirs)
    assert bool(merged.conflicts) == bool(parse(merged.data)[1])
    swapped = merge_bytes(base, theirs, ours)
    assert bool(swapped.conflicts) == bool(merged.conflicts)
    if not merged.conflicts:
        assert content(merged.data) == content(swapped.data)


@settings(max_examples=100)
@given(OPERATIONS, OPERATIONS, OPERATIONS)
def test_no_task_is_lost(base_ops, ours_ops, theirs_ops):
    """Every task either side has is in the result (between markers, if need be), accepted, or was
    deleted on the other side while this side left it as it was."""
    base, ours, theirs = histories(base_ops, ours_ops, theirs_ops)
    written = merge_bytes(base, ours, theirs).data.decode()
    base_tasks = {t["id"]: t for t in records(base) if t["t"] == "task"}
    sides = [{r["id"]: r for r in records(side) if r["t"] == "task"} for side in (ours, theirs)]
    for this, other in (sides, sides[::-1]):
        for task_id, record in this.items():
            deleted_there = task_id not in other and base_tasks.get(task_id) == record
            assert f'"id": "{task_id}"' in written or deleted_there, (task_id, written)


# --- the issue's rules, the cases not covered above --------------------------------------------------


def issue(issue_id: str, text: str, **fields) -> dict:
    return {"t": "issue", "id": f"i-{issue_id}", "text": text, **fields}


def test_an_issue_added_on_both_sides_differently_conflicts_and_alike_is_kept_once():
    conflicts, problems = conflicted([A], [A, issue("q", "Ours?")], [A, issue("q", "Theirs?")])
    assert conflicts == [
        "plan.jsonl:2: merge conflict: issue i-q was added on both sides with different content"
    ]
    assert problems[0].startswith(
        "plan.jsonl:2: unresolved git merge conflict marker (<<<<<<< ours, issue i-q"
    )
    assert clean([A], [A, issue("q", "Same?")], [A, issue("q", "Same?")]) == [A, issue("q", "Same?")]


def test_an_issue_resolved_on_one_side_goes_unless_the_other_changed_it():
    open_issue = issue("q", "Why?")
    kept = issue("q", "Why?", keep_open="a person decides")
    assert clean([A, open_issue], [A], [A, open_issue]) == [A]  # `issue resolve` removes the line
    conflicts, _ = conflicted([A, open_issue], [A], [A, kept])
    assert conflicts == [
        "plan.jsonl:2: merge conflict: issue i-q was deleted on our side and changed on theirs"
    ]


def test_an_accepted_task_wins_over_a_change_that_is_not_a_rejection():
    done = task("a", s="d")
    assert clean([done, B], [B, accept("a")], [task("a", s="d", notes="more"), B]) == [B, accept("a")]


def test_the_config_record_added_on_both_sides_merges_field_by_field_and_conflicts_on_a_field():
    ours, theirs = {"t": "config", "max_attempts": 4}, {"t": "config", "gate": ["make"]}
    assert clean([A], [A, ours], [A, theirs]) == [A, {"t": "config", "max_attempts": 4, "gate": ["make"]}]
    conflicts, _ = conflicted([A], [A, ours], [A, {"t": "config", "max_attempts": 5}])
    assert conflicts == [
        "plan.jsonl:2: merge conflict: the config record: 'max_attempts' changed on both sides"
    ]


def test_the_state_record_conflicts_on_a_field_changed_on_both_sides_that_is_not_a_counter():
    # (`stage` is each runner's own and keeps ours: see the claims' tests)
    state = {"t": "state", "iteration": 1, "spec": "specs/a.md"}
    ours = {**state, "iteration": 2, "spec": "specs/b.md"}
    theirs = {**state, "iteration": 3, "spec": "specs/c.md"}
    merged = merge([state], [ours], [theirs])
    assert [str(c) for c in merged.conflicts] == [
        "plan.jsonl:1: merge conflict: the state record: 'spec' changed on both sides"
    ]
    lines = merged.data.decode().splitlines()  # both versions have the larger iteration, 3
    assert json.loads(lines[1]) == {**ours, "iteration": 3} and json.loads(lines[3]) == theirs


def test_theirs_new_and_changed_records_keep_theirs_bytes():
    hand_b = '{"t":"task","id":"t-b","name":"B",  "notes": "theirs"}'
    hand_c = '{ "t": "task", "name": "C", "id": "t-c" }'
    merged = merge_bytes(text(A, B), text(task("a", s="d"), B), text(A, hand_b, hand_c))
    assert merged.conflicts == []
    assert merged.data == text(task("a", s="d"), hand_b, hand_c)
