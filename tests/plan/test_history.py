"""The pure diff of two plan versions into events (ralph/plan/history.py)."""

from __future__ import annotations

import json

import pytest

from ralph.plan.history import add_line, diff, remove_line, version


def plan(*records: dict) -> bytes:
    return "".join(json.dumps(record) + "\n" for record in records).encode()


def events(before: bytes, after: bytes) -> list[tuple]:
    return [(event["event"], event["id"]) for event in diff(version(before), version(after))]


LOGIN = {"t": "task", "id": "t-login", "name": "Login"}
DONE = {**LOGIN, "s": "d"}


def test_a_new_task_is_created_and_a_finished_one_done():
    assert events(b"", plan(LOGIN)) == [("created", "t-login")]
    assert events(plan(LOGIN), plan(DONE)) == [("done", "t-login")]


def test_an_accepted_task_is_accepted_and_a_deleted_one_deleted():
    accepted = plan({"t": "accept", "id": "t-login", "name": "Login"})
    assert events(plan(DONE), accepted) == [("accepted", "t-login")]
    assert events(plan(DONE), b"") == [("deleted", "t-login")]
    assert events(plan(LOGIN), b"\n") == [("deleted", "t-login")]


def test_a_task_that_leaves_subtasks_naming_it_was_decomposed():
    child = {"t": "task", "id": "t-a", "name": "A", "parent": "t-login"}
    found = diff(version(plan(LOGIN, child)), version(plan(child)))
    assert found == [{"event": "decomposed", "id": "t-login", "name": "Login", "into": ["t-a"]}]


def test_a_rejection_says_its_reason_and_a_kill_its_kill_reason():
    rejected = {**LOGIN, "reject_reason": "broken"}
    found = diff(
        version(plan(DONE)), version(plan(rejected, {"t": "reject", "id": "t-login", "reason": "broken"}))
    )
    assert found == [{"event": "rejected", "id": "t-login", "reason": "broken"}]
    killed = {**LOGIN, "kill_reason": "timeout", "reject_reason": "timed out"}
    tombstone = {"t": "reject", "id": "t-login", "reason": "timed out", "kill_reason": "timeout"}
    found = diff(version(plan(LOGIN)), version(plan(killed, tombstone)))
    assert found == [{"event": "killed", "id": "t-login", "reason": "timed out", "kill_reason": "timeout"}]


def test_a_second_identical_rejection_is_a_rejection_too():
    tombstone = {"t": "reject", "id": "t-login", "reason": "broken"}
    assert events(plan(DONE, tombstone), plan(LOGIN, tombstone, tombstone)) == [("rejected", "t-login")]


def test_a_hand_edit_is_the_fields_it_changed():
    found = diff(version(plan(LOGIN)), version(plan({**LOGIN, "priority": "high", "x-mine": 1})))
    assert found == [
        {"event": "changed", "id": "t-login", "fields": {"priority": [None, "high"], "x-mine": [None, 1]}}
    ]


def test_build_attempts_tell_tokens_cost_and_the_gate():
    failed = {
        **LOGIN,
        "attempts": 1,
        "gate_failure": "`make verify` exited 2:\n2 failed",
        "tokens": 10,
        "attempt_tokens": [10],
        "cost_usd": 0.5,
    }
    built = {
        **LOGIN,
        "attempts": 2,
        "files": ["a.py"],
        "tokens": 30,
        "attempt_tokens": [10, 20],
        "cost_usd": 0.75,
    }
    assert diff(version(plan(LOGIN)), version(plan(failed))) == [
        {
            "event": "attempt failed",
            "id": "t-login",
            "verdict": "gate_failed",
            "attempt": 1,
            "tokens": 10,
            "cost_usd": 0.5,
            "gate_failure": "`make verify` exited 2:\n2 failed",
        }
    ]
    assert diff(version(plan(failed)), version(plan(built))) == [
        {
            "event": "built",
            "id": "t-login",
            "verdict": "built",
            "attempt": 2,
            "tokens": 20,
            "cost_usd": 0.25,
            "files": ["a.py"],
        }
    ]


@pytest.mark.parametrize(
    ("failure", "verdict"),
    [
        ("`make verify` exited 2:\nE   assert 1 == 2", "gate_failed"),
        ("`make verify` timed out after 600s", "gate_failed"),
        ("the gate could not start: cannot run make", "gate_failed"),
        ("no_changes: the agent marked the task done but changed no file.", "no_changes"),
        ("the agent ended (exit 0) without running `ralph task done`.\n...", "not_done"),
        ("the agent left plan.jsonl invalid: line 3: not JSON", "plan_invalid"),
        ("permission_violation: ran git push", "permission_violation"),
        ("scope_violation: the build changed files outside the task's scope (a.py): b.py", "scope_violation"),
        ("merge_conflict: the build passed its gate, but ...", "merge_conflict"),
        ("the pre-commit hook refused the build:\nsecret found", "hook_refused"),
        ("...\nthe tail of a long excerpt", "failed"),  # its start was cut: not guessed
    ],
)
def test_a_failed_attempt_recorded_without_a_verdict_is_labelled_by_its_failure(failure, verdict):
    """Plans written before tasks recorded their verdict: a failure is "gate failed" only when
    the gate ran and failed."""
    before, after = {**LOGIN, "attempts": 1}, {**LOGIN, "attempts": 2, "gate_failure": failure}
    (event,) = diff(version(plan(before)), version(plan(after)))
    assert (event["event"], event["verdict"]) == ("attempt failed", verdict)


def test_a_recorded_verdict_is_the_attempts_label():
    after = {**LOGIN, "attempts": 1, "gate_failure": "`make` exited 2:", "verdict": "hook_refused"}
    (event,) = diff(version(plan(LOGIN)), version(plan(after)))
    assert event["verdict"] == "hook_refused"


def test_issues_are_added_kept_open_and_resolved():
    issue = {"t": "issue", "id": "i-q", "text": "Why?"}
    assert events(b"", plan(issue)) == [("added", "i-q")]
    assert events(plan(issue), plan({**issue, "keep_open": "ask Ada"})) == [("kept open", "i-q")]
    assert events(plan(issue), b"") == [("resolved", "i-q")]
    # Resolved with a note (a resolve record): the note goes on the "resolved" event.
    note = {"t": "resolve", "id": "i-q", "note": "out of scope", "text": "Why?"}
    assert diff(version(plan(issue)), version(plan(note))) == [
        {"event": "resolved", "id": "i-q", "text": "Why?", "note": "out of scope"}
    ]


def test_lines_that_are_not_records_are_shown_as_lines():
    found = diff(version(plan(LOGIN)), version(plan(LOGIN) + b"{broken\n"))
    assert found == [{"event": "line added", "id": None, "line": "{broken"}]


def test_an_unchanged_plan_has_no_events_and_line_order_does_not_matter():
    other = {"t": "task", "id": "t-b", "name": "B"}
    assert events(plan(LOGIN, other), plan(other, LOGIN)) == []


def test_changed_lines_alone_give_the_events_of_whole_versions():
    """What `ralph log` does with `git log -p`: apply removed and added lines, diff those keys."""
    child = {"t": "task", "id": "t-a", "name": "A", "parent": "t-login"}
    tombstone = {"t": "reject", "id": "t-a", "reason": "no"}
    steps = [plan(LOGIN), plan(LOGIN, child), plan(child), plan({**child, "s": "d"}), plan(child, tombstone)]
    state: dict = {}
    previous: list[str] = []
    for data in steps:
        lines = data.decode().splitlines()
        touched: dict = {}
        for text in [line for line in previous if line not in lines]:
            key, old = remove_line(state, text)
            touched.setdefault(key, old)
        for text in [line for line in lines if line not in previous]:
            key, old = add_line(state, text)
            touched.setdefault(key, old)
        assert state == version(data)
        whole = version("".join(line + "\n" for line in previous).encode())
        assert diff(touched, state, touched) == diff(whole, version(data))
        previous = lines


def test_fields_of_the_wrong_type_in_old_commits_are_still_told():
    """History keeps broken hand edits: the diff never assumes a field's type, ids become text."""
    from ralph.cli.history import line

    before = plan({"t": "task", "id": "t-a", "name": 5}, {"t": "issue", "id": "i-q", "text": ["x"]})
    found = diff(version(before), version(plan({"t": "reject", "id": 7, "reason": None})))
    assert [(event["event"], event["id"]) for event in found] == [
        ("resolved", "i-q"),
        ("deleted", "t-a"),
        ("rejected", "7"),
    ]
    stamp = {"commit": "0" * 40, "time": "2026-01-02T10:00:00+00:00", "author": "A"}
    assert [line({**stamp, **event}).split("  ", 1)[1] for event in found] == [
        "i-q  resolved: ['x']",
        "t-a  deleted: 5",
        "7  rejected",
    ]


def test_a_namesakes_claim_from_another_host_is_told_as_a_takeover_not_a_renewal():
    here = {**LOGIN, "claimed_by": "ci", "claimed_at": "2026-01-01T10:00:00+00:00", "claimed_on": "build-1"}
    there = {**here, "claimed_at": "2026-01-01T11:00:00+00:00", "claimed_on": "build-2"}
    assert events(plan(here), plan(there)) == [("taken over", "t-login")]
    assert events(plan(here), plan({**here, "claimed_at": there["claimed_at"]})) == [
        ("claim renewed", "t-login")
    ]


def test_claims_of_runners_sharing_a_remote_are_told_as_claims_not_field_changes():
    claimed = {**LOGIN, "claimed_by": "host-a", "claimed_at": "2026-01-01T10:00:00+00:00"}
    renewed = {**claimed, "claimed_at": "2026-01-01T10:05:00+00:00"}
    taken = {**LOGIN, "claimed_by": "host-b", "claimed_at": "2026-01-01T11:00:00+00:00"}
    takeover = {
        "t": "takeover",
        "id": "t-login",
        "by": "host-b",
        "at": taken["claimed_at"],
        "was_claimed_by": "host-a",
    }
    found = diff(version(plan(LOGIN)), version(plan(claimed)))
    assert found == [{"event": "claimed", "id": "t-login", "runner": "host-a", "at": claimed["claimed_at"]}]
    assert events(plan(claimed), plan(renewed)) == [("claim renewed", "t-login")]
    found = diff(version(plan(renewed)), version(plan(taken, takeover)))  # the record says nothing more
    assert [(e["event"], e["runner"], e["was_claimed_by"]) for e in found] == [
        ("taken over", "host-b", "host-a")
    ]
    assert diff(version(plan(taken)), version(plan(DONE))) == [
        {"event": "done", "id": "t-login", "name": "Login"},
        {"event": "released", "id": "t-login", "runner": "host-b"},
    ]
    # One commit with the takeover and the release after it (a merge of another runner's pushes):
    # the claim is not "released by host-a", it was taken over from it and released by host-b.
    found = diff(version(plan(renewed)), version(plan(LOGIN, takeover)))
    assert [(e["event"], e["runner"], e.get("was_claimed_by")) for e in found] == [
        ("taken over", "host-b", "host-a"),
        ("released", "host-b", None),
    ]
    issue = {"t": "issue", "id": "i-1", "text": "slow"}
    assert events(plan(issue), plan({**issue, "claimed_by": "h", "claimed_at": "x"})) == [("claimed", "i-1")]
    spec = {"t": "spec", "path": "specs/a.md"}
    assert events(plan(spec), plan({**spec, "claimed_by": "h", "claimed_at": "x"})) == [
        ("claimed", "specs/a.md")
    ]
