"""ralph.secrets: what is redacted (the environment's and .env files' secret values, secret
assignments, URL credentials, token shapes), what is left alone (plain words, paths, URLs without
credentials), and output read line by line (a private key block spanning lines)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ralph.secrets import REDACTED, OutputLines, redact, redact_fields

SHAPES = [
    "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t",
    "sk_live_51HqLmN8oPq2RsT4uVw6",
    "sk_test_51HqLmN8oPq2RsT4uVw6",
    "rk_live_51HqLmN8oPq2RsT4uVw6",
    "ghp_k3Jd9sLq2Wm8Xn4Rb7Tc1Vy6Zp0Ha5Ge3Uf",
    "gho_k3Jd9sLq2Wm8Xn4Rb7Tc1Vy6Zp0Ha5Ge3Uf",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "xoxb-1234567890-abcdefghijkl",
    "xoxp-1234567890-abcdefghijkl",
    "AKIAIOSFODNN7EXAMPLE",
    "npm_k3Jd9sLq2Wm8Xn4Rb7Tc1Vy6Zp0Ha5Ge3Uf",
    "hf_k3Jd9sLq2Wm8Xn4Rb7Tc1Vy6Zp0Ha5",
    "glpat-k3Jd9sLq2Wm8Xn4Rb7Tc",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXZhbHVl",
]


@pytest.mark.parametrize("token", SHAPES)
def test_each_token_shape_is_redacted_wherever_it_stands(token):
    assert redact(f"the key ({token}) leaked") == f"the key ({REDACTED}) leaked"


def test_a_private_key_block_is_redacted_whole():
    block = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\nAAAAB3\n-----END OPENSSH PRIVATE KEY-----"
    assert redact(f"key:\n{block}\ndone") == f"key:\n{REDACTED}\ndone"


def test_secret_values_of_the_environment_are_redacted_but_not_paths_or_plain_words(monkeypatch):
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "ann@example.com")
    monkeypatch.setenv("DEPLOY_TOKEN", "envtok-4c1f9a7e2b3d")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/ssh-XXXX/agent.42")
    monkeypatch.setenv("AUTH_MODE", "disabled")
    monkeypatch.setenv("HOME_PAGE", "envtok-not-secret-by-name")
    text = "envtok-4c1f9a7e2b3d at /tmp/ssh-XXXX/agent.42, auth disabled, envtok-not-secret-by-name"
    assert redact(text) == f"{REDACTED} at /tmp/ssh-XXXX/agent.42, auth disabled, envtok-not-secret-by-name"
    assert redact("by ann@example.com") == "by ann@example.com"


def test_values_of_the_repositorys_env_files_are_redacted(tmp_path):
    (tmp_path / ".env").write_text("DB_PASSWORD='dotenv-Pa55-word'\nexport APP_SEED=zq9XvB27mKpL44\n# X=y\n")
    (tmp_path / ".env.local").write_text("NODE_ENV=production\nPORT=3000\nAPI=https://api2.example.com\n")
    text = "dotenv-Pa55-word zq9XvB27mKpL44 production 3000 https://api2.example.com"
    assert redact(text, tmp_path) == f"{REDACTED} {REDACTED} production 3000 https://api2.example.com"


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        ("DB_PASSWORD=hunter2hunter2 then", f"DB_PASSWORD={REDACTED} then"),
        ("password: 'my pass phrase'", f"password: {REDACTED}"),
        ('{"api_key": "abcd1234efgh"}', f'{{"api_key": {REDACTED}}}'),
        ("STRIPE_KEY = whsec_abcdef", f"STRIPE_KEY = {REDACTED}"),
        ("postgres://app:s3cret-pw@db:5432/app", f"postgres://{REDACTED}@db:5432/app"),
        ("https://x-access-token:abc123@github.com/o/r", f"https://{REDACTED}@github.com/o/r"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", f"Authorization: {REDACTED}"),
    ],
)
def test_secret_assignments_and_url_credentials_are_redacted(said, shown):
    assert redact(said) == shown


@pytest.mark.parametrize(
    "plain",
    [
        "ssh://git@github.com/o/r.git and https://example.com/a@b",
        "the key: it works",  # a value too short to be a secret
        "Author: Ann Example <ann@example.com>",  # an author is no secret
        '"tokens": 1000',
        "tests passed: 42 of 42; see sk-short",
        f"DB_PASSWORD={REDACTED} already",
    ],
)
def test_text_without_secrets_is_left_alone(plain):
    assert redact(plain) == plain


@pytest.mark.parametrize(
    "counts",
    [
        '"usage": {"input_tokens": 12345678, "cache_read_input_tokens": 90000000, "output_tokens": 4521}',
        '{"cache_creation_input_tokens":1500000}',
        "total_tokens=1234567, max_tokens: 200000",
        "max_tokens = '64000000'",
        "prompt_token_count: 3400000",
    ],
)
def test_token_counts_are_not_secrets_though_their_names_say_token(counts):
    assert redact(counts) == counts


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        ("GITHUB_TOKEN=ghx9f8e7d6c5b4a", f"GITHUB_TOKEN={REDACTED}"),
        ("API_TOKEN=123456789012", f"API_TOKEN={REDACTED}"),  # digits, but not a count's name
        ('"token": "k3Jd9sLq2Wm8Xn4R"', f'"token": {REDACTED}'),
        ("max_tokens: abcdef123456", f"max_tokens: {REDACTED}"),  # a count's name, but no count
    ],
)
def test_secret_values_under_token_names_are_still_redacted(said, shown):
    assert redact(said) == shown


def test_a_count_in_the_environment_is_not_hidden_everywhere(monkeypatch):
    monkeypatch.setenv("MAX_OUTPUT_TOKENS", "128000000")
    monkeypatch.setenv("DEPLOY_TOKEN", "123456789012")
    assert redact("128000000 and 123456789012") == f"128000000 and {REDACTED}"


def test_records_are_redacted_field_by_field_keys_kept():
    record = {"t": "task", "notes": ["call with sk_live_51HqLmN8oPq2RsT4uVw6"], "attempts": 2}
    assert redact_fields(record) == {"t": "task", "notes": [f"call with {REDACTED}"], "attempts": 2}


def test_output_read_line_by_line_hides_every_line_of_a_private_key_block():
    lines = OutputLines()
    said = ["start", "-----BEGIN EC PRIVATE KEY-----", "MIIEow", "IBA", "-----END EC PRIVATE KEY-----", "end"]
    assert [lines(line) for line in said] == ["start", REDACTED, REDACTED, REDACTED, REDACTED, "end"]


# --- cuts: no piece of a secret survives a cut (issue 32) -----------------------------------------

SECRET_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
FILLER_ALPHABET = " .()[]#"  # shares no character with a secret: any fragment found is the secret's


def fragments(secret: str, length: int = 8) -> set[str]:
    return {secret[at : at + length] for at in range(len(secret) - length + 1)}


def leaked(secret: str, shown: str) -> set[str]:
    return {piece for piece in fragments(secret) if piece in shown}


def test_a_secret_repeated_on_one_long_line_leaves_no_piece_in_a_gate_failure(monkeypatch):
    """The issue's case: a 62-character secret printed many times on one line; the gate failure's
    300-character cut kept 52 of its characters."""
    from ralph.failures import failing_lines

    secret = "LS-qoLo" + "x9Kd" * 13 + "zQ3"
    assert len(secret) == 62
    monkeypatch.setenv("DEPLOY_TOKEN", secret)
    (line,) = failing_lines([f"ERROR: {secret * 40}"])
    assert leaked(secret, line) == set() and line.startswith(f"ERROR: {REDACTED}")


def test_each_piece_of_a_long_line_read_in_pieces_hides_the_secret_it_cuts(monkeypatch):
    """A line longer than what is read at once comes in pieces, each longer than what is kept of
    it: a secret split between two is recognised from the piece before (`before`), so the second
    piece's head shows no part of it."""
    secret = "pc7Qz1-e8RkLw20Xy"
    monkeypatch.setenv("API_TOKEN", secret)
    line = "." * 1000 + secret * 3
    first, second = line[:1005], line[1005:]
    lines = OutputLines()
    assert lines.head(first, 100) == "." * 100
    assert lines.head(second, 100, before=first) == REDACTED
    assert lines.head(second, 100).startswith(secret[5:])  # the control: without what came before


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    secret=st.text(SECRET_ALPHABET, min_size=8, max_size=120).filter(
        lambda s: any(c.isdigit() for c in s) and any(c.isalpha() for c in s)
    ),
    copies=st.integers(1, 60),
    lead=st.text(FILLER_ALPHABET, max_size=400),
    gap=st.text(FILLER_ALPHABET, max_size=3),
    cut=st.integers(0, 8000),
    split=st.integers(0, 8000),
)
def test_no_secret_fragment_of_8_characters_survives_any_cut(
    monkeypatch, secret, copies, lead, gap, cut, split
):
    from ralph.secrets import redacted_head

    monkeypatch.setenv("SOME_SECRET", secret)
    line = lead + gap.join([secret] * copies) + lead
    assert leaked(secret, redacted_head(line, cut)) == set()
    # The same line read in two pieces, the first longer than what is kept of it (a piece is read
    # whole, CHUNK bytes): the second piece's head, knowing the first, shows no part either.
    split = min(split, len(line))
    first, second = line[:split], line[split:]
    assert leaked(secret, OutputLines().head(second, cut, before=first)) == set()


def test_webhook_urls_and_webhook_variables_are_redacted(monkeypatch):
    slack = "https://hooks.slack.com/services/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"
    discord = "https://discord.com/api/webhooks/123456789012345678/aBcDeF-gHiJkLmN_oPqRsT"
    assert redact(f"posted to {slack} ok") == f"posted to https://{REDACTED} ok"
    assert redact(f"posted to {discord}") == f"posted to https://{REDACTED}"
    monkeypatch.setenv("DEPLOY_WEBHOOK", "https://example.com/hook/k3Jd9sLq2Wm8")
    assert redact("sent to https://example.com/hook/k3Jd9sLq2Wm8") == f"sent to {REDACTED}"
    assert redact("MY_WEBHOOK_URL=https://example.org/p/abc123xyz") == f"MY_WEBHOOK_URL={REDACTED}"


def test_a_secret_the_environment_gains_or_loses_between_two_redactions_is_hidden_then_shown(monkeypatch):
    """The environment's secrets are remembered per environment, never past a change to it."""
    token = "late-0123456789abcdefghij"
    monkeypatch.delenv("LATE_API_KEY", raising=False)
    assert redact(f"sent {token}") == f"sent {token}"
    monkeypatch.setenv("LATE_API_KEY", token)
    assert redact(f"sent {token}") == f"sent {REDACTED}"
    monkeypatch.delenv("LATE_API_KEY")
    assert redact(f"sent {token}") == f"sent {token}"
