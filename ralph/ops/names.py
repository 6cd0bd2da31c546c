"""How a commit message names the records a command changed."""

from __future__ import annotations


def named(records: list[dict], key: str = "name") -> str:
    if len(records) == 1:
        return f"{records[0]['id']} {records[0].get(key, '')}".rstrip()
    return f"{len(records)} ({', '.join(r['id'] for r in records[:8])}{', ...' if len(records) > 8 else ''})"
