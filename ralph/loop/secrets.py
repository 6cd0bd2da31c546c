"""Keeping secrets out of git history: what a failed gate or agent printed is redacted before
the plan (which is committed) keeps an excerpt of it. Only the loop needs this, so the state
commands never compile these patterns."""

from __future__ import annotations

import re

# Names of environment variables whose values are secrets, and the shapes of common tokens.
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|API_?KEY|ACCESS_?KEY|PRIVATE|CREDENTIAL|AUTH", re.IGNORECASE)
TOKEN_SHAPES = re.compile(
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"  # AWS access key id
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}"  # GitHub tokens
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bglpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|\bsk-[A-Za-z0-9_-]{20,}"  # OpenAI / Anthropic style keys
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|\bAIza[0-9A-Za-z_-]{35}"  # Google API key
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"
    r"|(?i:\bbearer\s+)[A-Za-z0-9._~+/-]{16,}=*"
)
REDACTED = "[redacted]"


def redact(text: str, environ: dict[str, str]) -> str:
    """`text` without the values of secret-looking environment variables or common token shapes:
    for text that goes into git history (a gate's output in plan.jsonl), where a leak stays."""
    for name, value in environ.items():
        if len(value) >= 8 and SECRET_NAME.search(name) and value in text:
            text = text.replace(value, f"[{name} redacted]")
    return TOKEN_SHAPES.sub(REDACTED, text)
