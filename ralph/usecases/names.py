"""How a commit message names the records a command changed."""

from __future__ import annotations

from ralph.plan.document import Record

SUBJECT_TEXT = 72  # of a name or text in a commit subject: `git log --oneline` stays one screen line


def named(records: list[Record], key: str = "name") -> str:
    if len(records) == 1:
        text = " ".join(str(records[0].get(key, "")).split())  # one line, whatever the name holds
        if len(text) > SUBJECT_TEXT:
            text = text[: SUBJECT_TEXT - 3] + "..."
        return f"{records[0]['id']} {text}".rstrip()
    return f"{len(records)} ({', '.join(r['id'] for r in records[:8])}{', ...' if len(records) > 8 else ''})"
