"""Redaction before a gate's or agent's output reaches the plan (and so git history): the values of
secret-looking environment variables, and the shapes of common tokens, wherever they appear."""

from __future__ import annotations

import pytest

from ralph.loop.secrets import REDACTED, redact


def test_the_value_of_a_secret_looking_variable_is_replaced_by_its_name():
    environ = {"GITHUB_TOKEN": "s3cr3t-value-123", "DB_PASSWORD": "hunter2hunter2", "HOME": "/home/someone"}
    text = "login with s3cr3t-value-123 at /home/someone, then hunter2hunter2"
    assert redact(text, environ) == (
        "login with [GITHUB_TOKEN redacted] at /home/someone, then [DB_PASSWORD redacted]"
    )


def test_short_values_and_variables_with_ordinary_names_are_left_alone():
    # Under 8 characters a value is too likely to be an ordinary word of the output.
    environ = {"API_KEY": "abc", "EDITOR": "a-long-editor-command"}
    assert redact("abc and a-long-editor-command", environ) == "abc and a-long-editor-command"


@pytest.mark.parametrize(
    "token",
    [
        "AKIAABCDEFGHIJKLMNOP",
        "ghp_" + "a1" * 18,
        "github_pat_" + "B2_" * 8,
        "glpat-" + "x" * 20,
        "sk-ant-" + "k" * 30,
        "xoxb-1234567890-abc",
        "AIza" + "Q" * 35,
        "Bearer abcdefghijklmnopqrstuvwxyz.0123",
    ],
)
def test_common_token_shapes_are_redacted_without_any_environment(token):
    assert redact(f"the gate printed {token} and failed", {}) == f"the gate printed {REDACTED} and failed"


def test_a_private_key_block_is_redacted_whole_even_when_cut_off():
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----"
    assert redact(f"before\n{key}\nafter", {}) == f"before\n{REDACTED}\nafter"
    cut = "tail of a log\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk"
    assert redact(cut, {}) == f"tail of a log\n{REDACTED}"
