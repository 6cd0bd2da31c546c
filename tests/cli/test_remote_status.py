"""`ralph status --remote`: the claims on the remote runners share, live and stale, from a real
bare repository and a clone of it, through the real CLI. Golden files hold what a person reads;
the claims' times are set relative to now and shown as placeholders. Regenerate with
`pytest --update-goldens`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ralph.ops import tasks
from ralph.store.transaction import transaction
from tests.support.cli import Ralph
from tests.support.gitrepo import Shared, git

GOLDEN = Path(__file__).parent / "golden" / "remote"


def ago(minutes: int) -> str:
    return (datetime.now(UTC) - timedelta(minutes=minutes)).isoformat(timespec="seconds")


@pytest.fixture
def claimed(repo: Path, tmp_path: Path) -> tuple[Shared, Path, dict[str, str]]:
    """origin with one live claim (5 minutes old), one stale (45 minutes, past the 30 minute
    default) and a free task; and a clone whose own plan knows nothing of them yet."""
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
    times = {"<5 minutes ago>": ago(5), "<45 minutes ago>": ago(45)}
    with transaction(repo) as change:
        change.plan.claim("t-live00", "build-box-1-4242", times["<5 minutes ago>"])
        change.plan.claim("t-stale0", "laptop-977", times["<45 minutes ago>"])
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
    assert [(c["task"], c["runner"], c["since"], c["stale"]) for c in found["claims"]] == [
        ("t-live00", "build-box-1-4242", times["<5 minutes ago>"], False),
        ("t-stale0", "laptop-977", times["<45 minutes ago>"], True),
    ]


def test_status_remote_with_no_claims_and_an_unreachable_remote(repo, tmp_path, request):
    shared = Shared(repo, tmp_path)
    clone = shared.clone("clone")
    check_golden("no-claims", Ralph(clone)("status", "--remote").stdout, request)
    git(clone, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    result = Ralph(clone)("status", "--remote", code=11)
    message = result.stderr.replace(str(tmp_path), "<tmp>")
    check_golden("unreachable", message, request)
