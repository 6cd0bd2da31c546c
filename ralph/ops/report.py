"""`ralph report`: one self-contained HTML page of the plan's history (no network, no scripts,
charts as inline SVG), built from what `ralph log` reads."""

from __future__ import annotations

from datetime import datetime
from html import escape
from pathlib import Path
from typing import Any

from ralph.errors import RalphError
from ralph.ops.history import timeline
from ralph.store.reader import read_plan
from ralph.text import printable

SERIES = (("pending", "#d97706"), ("done", "#2563eb"), ("accepted", "#16a34a"), ("blocked", "#dc2626"))
# The chart's own units: its viewBox. It is drawn at the page's width (at most 40rem), so 13 units
# of text are about 10 px on a 390 px phone and 17 px on a desktop.
WIDTH, HEIGHT = 480, 280
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 16, 56
STYLE = """
body { font: 16px/1.45 system-ui, sans-serif; margin: 1rem auto; max-width: 60rem; padding: 0 1rem; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2rem; }
figure { margin: 0; } svg { display: block; width: 100%; max-width: 40rem; height: auto; }
figcaption, .legend { font-size: 14px; color: #444; }
.legend span { display: inline-block; margin-right: 1rem; white-space: nowrap; }
.legend i { display: inline-block; width: 1.2em; height: 0.3em; vertical-align: middle; margin-right: 0.3em; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
td, th { border-bottom: 1px solid #ddd; padding: 4px 6px; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td, li { overflow-wrap: anywhere; }
/* A phone: each table row becomes a small card of labelled values, so nothing scrolls sideways. */
@media (max-width: 40rem) {
  thead { display: none; }
  table, tbody, tr, td { display: block; width: auto; }
  tr { border-bottom: 1px solid #bbb; padding: 0.4rem 0; }
  td, td.n { border: 0; padding: 1px 0; text-align: left; }
  td::before { content: attr(data-label) ": "; color: #666; }
}
"""


def build(root: Path) -> str:
    from ralph.secrets import FieldsRedactor

    points: list[dict[str, Any]] = []
    redact_fields = FieldsRedactor(root)  # a history from before ralph redacted can hold secrets
    events = [redact_fields(event) for event in timeline(root, points=points)]
    tasks = _tasks(events)
    attempts = [event for event in events if event["event"] in ("built", "gate failed")]
    failed = sum(1 for event in attempts if event["event"] == "gate failed")
    rate = f"{failed / len(attempts):.0%}" if attempts else "no builds yet"
    slowest = sorted(
        (task for task in tasks.values() if task.get("cycle_s") is not None), key=lambda t: -t["cycle_s"]
    )
    tokens = sum(task["tokens"] for task in tasks.values())
    build_cost = _cost(
        sum(task["cost_usd"] for task in tasks.values()), sum(task["unknown"] for task in tasks.values())
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
<style>{STYLE}</style></head><body>
<h1>ralph report</h1>
<p>{len(points)} commits of plan.jsonl; {len(tasks)} tasks; build attempts: {len(attempts)},
gate failures: {failed} ({rate}); BUILD: {tokens:,} tokens, {build_cost}</p>
<h2>Burndown</h2>
{_chart(points)}
<h2>Tokens and cost by stage</h2>
{_stages(root)}
<h2>Slowest tasks (created to accepted)</h2>
<ol>{slow_rows or "<li>no task accepted yet</li>"}</ol>
<h2>Tasks</h2>
{_task_table(tasks)}
</body></html>
"""


def _task_table(tasks: dict[str, dict[str, Any]]) -> str:
    columns: tuple[tuple[str, str], ...] = (
        ("id", ""),
        ("name", ""),
        ("now", ""),
        ("attempts", "n"),
        ("cycle time", "n"),
    )
    columns += (("tokens", "n"), ("cost (USD)", "n"))
    head = "".join(f"<th{_class(kind)}>{label}</th>" for label, kind in columns)
    rows = []
    for task_id, task in tasks.items():
        values = (
            escape(printable(task_id)),
            escape(printable(task["name"])),
            task["now"],
            task["attempts"],
            _duration(task.get("cycle_s")),
            f"{task['tokens']:,}" if task["attempts"] else "-",
            _cost(task["cost_usd"], task["unknown"], dollar=False) if task["attempts"] else "-",
        )
        cells = "".join(
            f'<td{_class(kind)} data-label="{label}">{value}</td>'
            for (label, kind), value in zip(columns, values, strict=True)
        )
        rows.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _class(kind: str) -> str:
    return f' class="{kind}"' if kind else ""


def _stages(root: Path) -> str:
    """What every agent run spent, per stage, as the plan's state record sums it up."""
    try:
        spent = read_plan(root).state().get("spent") or {}
    except RalphError:
        spent = {}
    if not spent:
        return "<p>no agent run recorded yet</p>"
    rows = "".join(
        f'<tr><td data-label="stage">{escape(printable(stage))}</td>'
        f'<td class="n" data-label="runs">{row.get("runs", 0)}</td>'
        f'<td class="n" data-label="tokens">{row.get("tokens", 0):,}</td>'
        f'<td class="n" data-label="cost (USD)">{_stage_cost(row)}</td></tr>'
        for stage, row in spent.items()
    )
    head = '<th>stage</th><th class="n">runs</th><th class="n">tokens</th><th class="n">cost (USD)</th>'
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _stage_cost(row: dict[str, Any]) -> str:
    unknown = row.get("unknown_runs", 0)
    known = row.get("runs", 0) - unknown
    return _cost(row.get("cost_usd", 0.0) if known else 0.0, unknown, dollar=False)


def _cost(cost_usd: float, unknown_runs: int, dollar: bool = True) -> str:
    """A cost nobody reported is "unknown", never 0."""
    sign = "$" if dollar else ""
    if unknown_runs and not cost_usd:
        return "unknown"
    return f"{sign}{cost_usd:.4f}" + (f" + {unknown_runs} unknown" if unknown_runs else "")


def _chart(points: list[dict[str, Any]]) -> str:
    """The counts after each commit as one polyline per status: one point per plan commit, the
    x axis the commits in order (dated at both ends), the y axis a count of tasks."""
    if not points:
        return "<p>no history yet</p>"
    top = max(max(point[name] for name, _ in SERIES) for point in points) or 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / max(len(points) - 1, 1)

    def y(count: float) -> float:
        return TOP + plot_h - count * plot_h / top

    lines = []
    for name, colour in SERIES:
        coords = " ".join(
            f"{LEFT + index * step:.1f},{y(point[name]):.1f}" for index, point in enumerate(points)
        )
        lines.append(
            f'<polyline class="series" data-series="{name}" fill="none" stroke="{colour}" stroke-width="2"'
            f' points="{coords}"><title>{name}</title></polyline>'
        )
    ticks = sorted({0, top // 2, top})
    grid = "".join(
        f'<line x1="{LEFT}" y1="{y(t):.1f}" x2="{WIDTH - RIGHT}" y2="{y(t):.1f}" stroke="#e5e5e5"/>'
        f'<text x="{LEFT - 6}" y="{y(t) + 4:.1f}" font-size="13" text-anchor="end">{t}</text>'
        for t in ticks
    )
    bottom = TOP + plot_h
    axes = (
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}" stroke="#888"/>'
        f'<line x1="{LEFT}" y1="{bottom}" x2="{WIDTH - RIGHT}" y2="{bottom}" stroke="#888"/>'
        f'<text x="{LEFT}" y="{bottom + 18}" font-size="13">{escape(points[0]["time"][:10])}</text>'
        f'<text x="{WIDTH - RIGHT}" y="{bottom + 18}" font-size="13" text-anchor="end">'
        f"{escape(points[-1]['time'][:10])}</text>"
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 8}" font-size="13" text-anchor="middle">'
        f"plan.jsonl commits, oldest to newest ({len(points)})</text>"
        f'<text transform="translate(14 {TOP + plot_h / 2:.1f}) rotate(-90)" font-size="13"'
        ' text-anchor="middle">tasks</text>'
    )
    last = points[-1]
    legend = "".join(
        f'<span><i style="background:{colour}"></i>{name} (now {last[name]})</span>'
        for name, colour in SERIES
    )
    return (
        f'<figure><svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="number of tasks pending, done,'
        f' accepted and blocked after each commit of plan.jsonl">{grid}{axes}{"".join(lines)}</svg>'
        f'<figcaption class="legend">{legend}</figcaption></figure>'
    )


def _tasks(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per task: name, where it ended, attempts, tokens, cost, and the seconds from created to accepted."""
    tasks: dict[str, dict[str, Any]] = {}
    for event in events:
        task_id = event.get("id")
        if not task_id or not task_id.startswith("t-"):
            continue
        task = tasks.setdefault(
            task_id,
            {
                "id": task_id,
                "name": "",
                "now": "pending",
                "attempts": 0,
                "tokens": 0,
                "cost_usd": 0.0,
                "unknown": 0,
            },
        )
        task["name"] = event.get("name") or task["name"]
        kind = event["event"]
        if kind == "created":
            task["created"] = event["time"]
        elif kind in ("built", "gate failed"):
            task["attempts"] += 1
            task["tokens"] += event.get("tokens", 0)
            task["cost_usd"] += event.get("cost_usd", 0)
            task["unknown"] += 1 if event.get("cost_unknown") else 0
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
