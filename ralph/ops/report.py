"""`ralph report`: one self-contained HTML page of the plan's history (no network, no scripts,
charts as inline SVG), built from what `ralph log` reads."""

from __future__ import annotations

from datetime import datetime
from html import escape
from pathlib import Path

from ralph.ops.history import timeline
from ralph.text import printable

SERIES = (("pending", "#d97706"), ("done", "#2563eb"), ("accepted", "#16a34a"), ("blocked", "#dc2626"))
WIDTH, HEIGHT, PAD = 640, 240, 32


def build(root: Path) -> str:
    points: list[dict] = []
    events = timeline(root, points=points)
    tasks = _tasks(events)
    attempts = [event for event in events if event["event"] in ("built", "gate failed")]
    failed = sum(1 for event in attempts if event["event"] == "gate failed")
    rate = f"{failed / len(attempts):.0%}" if attempts else "no builds yet"
    slowest = sorted(
        (task for task in tasks.values() if task.get("cycle_s") is not None), key=lambda t: -t["cycle_s"]
    )
    tokens = sum(task["tokens"] for task in tasks.values())
    cost = sum(task["cost_usd"] for task in tasks.values())
    rows = "".join(
        f"<tr><td>{escape(printable(task_id))}</td><td>{escape(printable(task['name']))}</td><td>{task['now']}</td>"
        f"<td>{task['attempts']}</td><td>{_duration(task.get('cycle_s'))}</td><td>{task['tokens']}</td>"
        f"<td>{task['cost_usd']:.4f}</td></tr>"
        for task_id, task in tasks.items()
    )
    slow_rows = "".join(
        f"<li>{escape(printable(task['id']))} {escape(printable(task['name']))}:"
        f" {_duration(task['cycle_s'])}</li>"
        for task in slowest[:10]
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ralph report</title>
<style>
body {{ font: 16px/1.4 system-ui, sans-serif; margin: 1rem auto; max-width: 60rem; padding: 0 1rem; }}
svg {{ width: 100%; height: auto; }} table {{ border-collapse: collapse; width: 100%; font-size: 14px; }}
td, th {{ border-bottom: 1px solid #ddd; padding: 4px; text-align: left; }}
.wide {{ overflow-x: auto; }}
</style></head><body>
<h1>ralph report</h1>
<p>{len(points)} commits of plan.jsonl; {len(tasks)} tasks; build attempts: {len(attempts)},
gate failures: {failed} ({rate}); tokens (BUILD): {tokens}; cost (BUILD): ${cost:.4f}</p>
<h2>Burndown</h2>
{_chart(points)}
<h2>Slowest tasks (created to accepted)</h2>
<ol>{slow_rows or "<li>no task accepted yet</li>"}</ol>
<h2>Tasks</h2>
<div class="wide"><table><thead><tr><th>id</th><th>name</th><th>now</th><th>attempts</th><th>cycle time</th>
<th>tokens</th><th>cost (USD)</th></tr></thead><tbody>{rows}</tbody></table></div>
<p>Tokens and cost come from plan.jsonl, where the loop records them per build attempt; the other
stages' usage is in build/ralph-logs/, which git does not keep.</p>
</body></html>
"""


def _chart(points: list[dict]) -> str:
    """The counts after each commit as one polyline per status: as many points as commits."""
    if not points:
        return "<p>no history yet</p>"
    top = max(max(point[name] for name, _ in SERIES) for point in points) or 1
    step = (WIDTH - 2 * PAD) / max(len(points) - 1, 1)
    lines = []
    for name, colour in SERIES:
        coords = " ".join(
            f"{PAD + index * step:.1f},{HEIGHT - PAD - point[name] * (HEIGHT - 2 * PAD) / top:.1f}"
            for index, point in enumerate(points)
        )
        lines.append(
            f'<polyline class="series" data-series="{name}" fill="none" stroke="{colour}" stroke-width="2"'
            f' points="{coords}"><title>{name}</title></polyline>'
        )
    legend = "".join(
        f'<text x="{PAD + n * 110}" y="{PAD - 12}" fill="{colour}" font-size="14">{name}</text>'
        for n, (name, colour) in enumerate(SERIES)
    )
    axis = (
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" stroke="#999"/>'
        f'<text x="{PAD}" y="{HEIGHT - 8}" font-size="12">{escape(points[0]["time"][:10])}</text>'
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - 8}" font-size="12" text-anchor="end">'
        f"{escape(points[-1]['time'][:10])}</text>"
        f'<text x="4" y="{PAD}" font-size="12">{top}</text>'
    )
    return (
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="tasks pending, done and accepted after '
        f'each commit">{legend}{axis}{"".join(lines)}</svg>'
    )


def _tasks(events: list[dict]) -> dict[str, dict]:
    """Per task: name, where it ended, attempts, tokens, cost, and the seconds from created to accepted."""
    tasks: dict[str, dict] = {}
    for event in events:
        task_id = event.get("id")
        if not task_id or not task_id.startswith("t-"):
            continue
        task = tasks.setdefault(
            task_id,
            {"id": task_id, "name": "", "now": "pending", "attempts": 0, "tokens": 0, "cost_usd": 0.0},
        )
        task["name"] = event.get("name") or task["name"]
        kind = event["event"]
        if kind == "created":
            task["created"] = event["time"]
        elif kind in ("built", "gate failed"):
            task["attempts"] += 1
            task["tokens"] += event.get("tokens", 0)
            task["cost_usd"] += event.get("cost_usd", 0)
        elif kind in ("done", "accepted", "deleted", "decomposed", "blocked"):
            task["now"] = kind
            if kind == "accepted" and task.get("created"):
                started = datetime.fromisoformat(task["created"])
                task["cycle_s"] = (datetime.fromisoformat(event["time"]) - started).total_seconds()
        elif kind in ("rejected", "killed", "reopened"):
            task["now"] = "pending"
    return tasks


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes = int(seconds // 60)
    return (
        f"{minutes // 1440}d {minutes // 60 % 24}h"
        if minutes >= 1440
        else f"{minutes // 60}h {minutes % 60}m"
    )
