"""`ralph status --remote`: the claims on the remote runners share, live and stale, from a real
bare repository and a clone of it, through the real CLI. Golden files hold what a person reads;
the claims' times are set relative to now and shown as placeholders. Regenerate with
`pytest --update-goldens`."""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ralph.store.remote import Remote
from ralph.store.transaction import transaction
from ralph.usecases import claim_listing, tasks
from tests.support.cli import Ralph
from tests.support.gitrepo import Shared, git

GOLDEN = Path(__file__).parent / "golden" / "remote"


def ago(minutes: int) -> str:
    return (datetime.now(UTC) - timedelta(minutes=minutes)).isoformat(timespec="seconds")


@pytest.fixture
def claimed(repo: Path, tmp_path: Path, monkeypatch) -> tuple[Shared, Path, dict[str, str]]:
    """origin with one live claim (committed 5 minutes ago), one stale (committed two days ago,
    longer than any clock is wrong) and a free task; and a clone whose own plan knows nothing of
    them yet. Their claimed_at texts say otherwise (the claimers' clocks were wrong): ages are
    judged by the remote's commit times."""
    tasks.add(
        repo,
        [
            {"id": "t-live00", "name": "Login form"},
            {"id": "t-stale0", "name": "Password reset"},
            {"id": "t-free00", "name": "Sign-up"},
        ],
    )
    shared = Shared(repo, tmp_path)
    clone = shared.clone("clone")
    times = {"<5 minutes ago>": ago(5), "<2 days ago>": ago(2 * 24 * 60)}
    for task, runner, host, committed, said in (
        ("t-live00", "ci", "build-box-1", "<5 minutes ago>", "<2 days ago>"),
        ("t-stale0", "laptop-977", None, "<2 days ago>", "<5 minutes ago>"),  # a claim of before hosts
    ):
        monkeypatch.setenv("GIT_COMMITTER_DATE", times[committed])
        with transaction(repo) as change:
            change.plan.claim(task, runner, times[said], host=host)
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    git(repo, "push", "-q", "origin", "main")
    return shared, clone, times


def check_golden(name: str, text: str, request: pytest.FixtureRequest) -> None:
    golden = GOLDEN / f"{name}.txt"
    if request.config.getoption("--update-goldens"):
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")


def test_status_remote_lists_live_and_stale_claims(claimed, request):
    _, clone, times = claimed
    result = Ralph(clone)("status", "--remote")
    text = result.stdout
    for placeholder, value in times.items():
        text = text.replace(value, placeholder)
    check_golden("claims", text, request)
    assert result.stderr == ""


def test_status_remote_json_and_a_remote_named(claimed):
    shared, clone, times = claimed
    git(clone, "remote", "add", "shared", str(shared.origin))
    found = json.loads(Ralph(clone)("status", "--remote", "shared", "--json").stdout)
    assert found["remote"] == "shared" and found["branch"] == "main" and found["claim_ttl_s"] == 1800
    fields = ("task", "runner", "host", "since", "committed_at", "stale")
    claims = [tuple(claim[field] for field in fields) for claim in found["claims"]]
    assert claims == [
        ("t-live00", "ci", "build-box-1", times["<2 days ago>"], times["<5 minutes ago>"], False),
        ("t-stale0", "laptop-977", None, times["<5 minutes ago>"], times["<2 days ago>"], True),
    ]
    # This clone saw the claims first now: the live one is as old as that, the stale one is
    # older than any clock is wrong. A later look counts from the first.
    assert [c["seen_at"] for c in found["claims"]] == [found["at"]] * 2
    assert found["claims"][0]["age_s"] == 0 and found["claims"][1]["age_s"] >= 2 * 86400
    again = json.loads(Ralph(clone)("status", "--remote", "shared", "--json").stdout)
    assert [c["seen_at"] for c in again["claims"]] == [found["at"]] * 2


def test_status_remote_with_no_claims_and_an_unreachable_remote(repo, tmp_path, request, monkeypatch):
    # 10 ms before each retry, not ralph's 1 then 2 s: what it says after its attempts is checked
    monkeypatch.setattr(claim_listing, "Remote", functools.partial(Remote, backoff_s=0.01))
    shared = Shared(repo, tmp_path)
    clone = shared.clone("clone")
    check_golden("no-claims", Ralph(clone)("status", "--remote").stdout, request)
    git(clone, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    result = Ralph(clone)("status", "--remote", code=11)
    message = result.stderr.replace(str(tmp_path), "<tmp>")
    check_golden("unreachable", message, request)


def test_status_remote_lists_the_claim_refs_of_build_and_verify_live_and_stale(repo, tmp_path, monkeypatch):
    from ralph.store.git import Repo
    from ralph.store.remote import Remote

    tasks.add(repo, [{"id": "t-build0", "name": "Login form"}, {"id": "t-old000", "name": "Password reset"}])
    shared = Shared(repo, tmp_path)
    runner, clone = shared.clone("runner"), shared.clone("clone")
    for task, committed in (("t-build0", ago(5)), ("t-old000", ago(2 * 24 * 60))):
        monkeypatch.setenv("GIT_COMMITTER_DATE", committed)
        remote = Remote(Repo(runner))  # git's environment as it is now
        assert remote.push_claim(task, remote.make_claim(task, "ci", committed, host="build-box-2"))
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    found = json.loads(Ralph(clone)("status", "--remote", "--json").stdout)
    assert [(c["task"], c["name"], c["runner"], c["host"], c["stale"]) for c in found["claims"]] == [
        ("t-build0", "Login form", "ci", "build-box-2", False),
        ("t-old000", "Password reset", "ci", "build-box-2", True),
    ]
    shown = Ralph(clone)("status", "--remote").stdout
    assert "t-build0 Login form: ci on build-box-2, " in shown


def test_status_remote_names_the_runner_that_has_the_turn_to_publish(repo, tmp_path, monkeypatch):
    """The turn (a runner publishing after a lost race) is on the remote alone: status fetches
    it now, says who has it and since when, and says a turn past its time is stale."""
    from ralph.store.git import Repo
    from ralph.store.remote import TURN_STALE_S

    shared = Shared(repo, tmp_path)
    runner, clone = shared.clone("runner"), shared.clone("clone")
    assert json.loads(Ralph(clone)("status", "--remote", "--json").stdout)["turn"] is None
    assert "turn to publish" not in Ralph(clone)("status", "--remote").stdout
    monkeypatch.setenv("GIT_COMMITTER_DATE", ago(5))
    holder = Remote(Repo(runner))
    assert holder.take_turn("ci-7", "build-box-3")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    found = json.loads(Ralph(clone)("status", "--remote", "--json").stdout)["turn"]
    assert (found["runner"], found["host"], found["commit"]) == ("ci-7", "build-box-3", holder.turn)
    assert found["age_s"] >= 5 * 60 > TURN_STALE_S and found["stale"] is True
    shown = Ralph(clone)("status", "--remote").stdout
    assert "turn to publish: ci-7 on build-box-3, committed 5" in shown and "stale" in shown
    assert git(clone, "for-each-ref", "--points-at", holder.turn or "").strip() == ""  # no ref made here
    holder.end_turn()
    assert json.loads(Ralph(clone)("status", "--remote", "--json").stdout)["turn"] is None
