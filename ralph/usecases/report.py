"""`ralph report`: one self-contained HTML page of the plan's history (no network, no scripts,
charts as inline SVG), built from what `ralph log` reads."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from html import escape
from pathlib import Path
from typing import Any

from ralph.errors import RalphError
from ralph.failures import gist
from ralph.plan.history import verdict_words
from ralph.plan.records import TaskType
from ralph.plan.scope import COVERAGE_WORDS, Coverage, coverage, coverage_total
from ralph.store.reader import read_plan
from ralph.text import joined_lines, printable
from ralph.usecases.history import ATTEMPT_EVENTS, timeline

Row = dict[str, Any]  # a task's, a stage's or a commit's figures; an event of the history
SERIES = (("pending", "#d97706"), ("done", "#2563eb"), ("accepted", "#16a34a"), ("blocked", "#dc2626"))
# The chart's own units: its viewBox. It is drawn at the page's width (at most 40rem), so 13 units
# of text are 17 px on a desktop; a phone's style makes them 18 units (13 px at 375 px).
WIDTH, HEIGHT = 480, 280
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 16, 56
STYLE = """
body { font: 16px/1.45 system-ui, sans-serif; margin: 1rem auto; max-width: 64rem; padding: 0 1rem; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2rem; }
.headline { font-size: 1.05rem; margin: 0.4rem 0; }
figure { margin: 0; } svg { display: block; width: 100%; max-width: 40rem; height: auto; }
figcaption, .legend { font-size: 14px; color: #444; }
.legend span { display: inline-block; margin-right: 1rem; white-space: nowrap; }
.legend i { display: inline-block; width: 1.2em; height: 0.3em; vertical-align: middle; margin-right: 0.3em; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
td, th { border-bottom: 1px solid #ddd; padding: 4px 6px; text-align: left; vertical-align: top; }
tfoot th, tfoot td { border-top: 2px solid #999; font-weight: bold; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
/* Ids, times and numbers never break; free text breaks between words, and a long path anywhere
   only where it must (overflow-wrap: anywhere on every cell let the table squeeze ids to one
   letter a line). */
td.id, td.n, td.when, th { white-space: nowrap; }
td.name { min-width: 9rem; }
td, li { overflow-wrap: break-word; }
/* A phone: each table row becomes a small card of labelled values, so nothing scrolls sideways. */
@media (max-width: 40rem) {
  thead { display: none; }
  table, tbody, tfoot, tr, td, tfoot th { display: block; width: auto; }
  tr { border-bottom: 1px solid #bbb; padding: 0.4rem 0; }
  td, td.n, tfoot th { border: 0; padding: 1px 0; text-align: left; white-space: normal; min-width: 0; }
  td, li { overflow-wrap: anywhere; }
  td::before { content: attr(data-label) ": "; color: #666; }
  svg text { font-size: 18px; }  /* in the chart's units: about 13 px on a 375 px phone */
}
"""


def build(root: Path) -> str:
    from ralph.secrets import FieldsRedactor

    points: list[dict[str, Any]] = []
    redact_fields = FieldsRedactor(root)  # a history from before ralph redacted can hold secrets
    events = [redact_fields(event) for event in timeline(root, points=points)]
    tasks = _tasks(events)
    spent = _spent(root)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ralph report</title>
<style>{STYLE}</style></head><body>
<h1>ralph report</h1>
{_headline(points, tasks, events, spent)}
<h2>Burndown</h2>
{_chart(points)}
<h2>Tokens and cost by stage</h2>
{_stages(spent)}
<h2>Why attempts failed</h2>
{_failures(events)}
<h2>Slowest tasks (created to accepted)</h2>
{_slowest(tasks)}
<h2>Tasks</h2>
{_task_table(tasks)}
<h2>Scope and files</h2>
{_coverage(tasks)}
<h2>Review by aspect</h2>
{_reviews(events, tasks)}
</body></html>
"""


def _headline(points: list[Row], tasks: dict[str, Row], events: list[Row], spent: dict[str, Row]) -> str:
    """What a person asks first: how far the run got, what it cost in all, how often attempts failed."""
    now = Counter(task["now"] for task in tasks.values())
    states = ", ".join(f"{count} {state}" for state, count in now.most_common())
    attempts = [event for event in events if event["event"] in ATTEMPT_EVENTS]
    failed = Counter(event.get("verdict", "") for event in attempts if event["event"] != "built")
    rejected = sum(1 for event in events if event["event"] == "rejected")
    if attempts:
        why = ", ".join(f"{verdict_words(verdict)} {count}" for verdict, count in failed.most_common())
        share = sum(failed.values()) / len(attempts)
        tries = f"{len(attempts)} build attempts, {sum(failed.values())} failed ({share:.0%})"
        tries += f": {why}" if why else ""
    else:
        tries = "no build attempt yet"
    total = _total(spent)
    money = _cost(total["cost_usd"], total["unknown_runs"]) if total["runs"] else "not recorded"
    return (
        f'<p class="headline"><b>{len(tasks)} tasks</b>{": " + states if states else ""}.'
        f" {tries}; VERIFY rejections: {rejected}.</p>"
        f'<p class="headline"><b>Spent in all:</b> {total["tokens"]:,} tokens, cost {money},'
        f" in {total['runs']} agent runs of every stage; {len(points)} commits of plan.jsonl.</p>"
    )


def _slowest(tasks: dict[str, Row]) -> str:
    slowest = sorted(
        (task for task in tasks.values() if task.get("cycle_s") is not None), key=lambda t: -t["cycle_s"]
    )
    rows = "".join(
        f"<li>{escape(printable(task['id']))} {escape(printable(task['name']))}:"
        f" {_duration(task['cycle_s'])}</li>"
        for task in slowest[:10]
    )
    return f"<ol>{rows or '<li>no task accepted yet</li>'}</ol>"


def _failures(events: list[Row]) -> str:
    """Each failed build attempt with its verdict and the line that says why; each rejection by
    VERIFY and each run stopped, with its reason."""
    rows = []
    for event in events:
        kind = event["event"]
        if kind == "attempt failed":
            failure = str(event.get("gate_failure") or "").removeprefix(f"{event.get('verdict')}: ")
            what = f"attempt {event.get('attempt')}: {verdict_words(event.get('verdict', ''))}"
            rows.append((event, what, gist(failure, 240)))
        elif kind in ("rejected", "killed", "blocked"):
            said = ": ".join(str(event[key]) for key in ("kill_reason", "reason") if event.get(key))
            rows.append((event, "rejected by VERIFY" if kind == "rejected" else kind, joined_lines(said)))
    if not rows:
        return "<p>no attempt failed</p>"
    body = "".join(
        f'<tr><td class="id" data-label="task">{escape(printable(str(event.get("id"))))}</td>'
        f'<td class="when" data-label="when">{escape(event["time"][:16].replace("T", " "))}</td>'
        f'<td data-label="what">{escape(what)}</td>'
        f'<td data-label="why">{escape(printable(why)) or "-"}</td></tr>'
        for event, what, why in rows
    )
    head = "<th>task</th><th>when</th><th>what</th><th>why</th>"
    return f'<table class="failures"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _task_table(tasks: dict[str, Row]) -> str:
    columns: tuple[tuple[str, str], ...] = (("id", "id"), ("name", "name"), ("type", ""), ("now", ""))
    columns += (("attempts", "n"),)
    columns += (("failed", ""),)
    columns += (("cycle time", "n"), ("build tokens", "n"), ("build cost (USD)", "n"))
    head = "".join(f"<th{_class(kind)}>{label}</th>" for label, kind in columns)
    rows = []
    for task_id, task in tasks.items():
        failed = ", ".join(
            f"{verdict_words(verdict)}{f' ×{count}' if count > 1 else ''}"
            for verdict, count in task["failed"].most_common()
        )
        values = (
            escape(printable(task_id)),
            escape(printable(task["name"])),
            escape(printable(str(task["type"]))),
            task["now"],
            task["attempts"],
            escape(failed) or "-",
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


def _coverage(tasks: dict[str, Row]) -> str:
    """Each built task with a scope: its scope beside the files its last build changed, and the
    counts in total."""
    rows: list[Coverage] = [task["coverage"] for task in tasks.values() if task.get("coverage")]
    if not rows:
        return "<p>no task with a scope was built</p>"
    labels = ("task", "scope", *(said for _, said in COVERAGE_WORDS))

    def cells(values: tuple[str, ...], tag: str = "td") -> str:
        return "".join(
            f'<{tag} data-label="{label}">{escape(printable(value)) or "-"}</{tag}>'
            for label, value in zip(labels, values, strict=True)
        )

    body = "".join(
        "<tr>"
        + cells(
            (row.task, ", ".join(row.scope), *(", ".join(getattr(row, key)) for key, _ in COVERAGE_WORDS))
        )
        + "</tr>"
        for row in rows
    )
    total = coverage_total(rows)
    counts = (
        f"in all ({total['tasks']} tasks)",
        f"{total['scope']} patterns",
        f"{total['touched']} files",
        f"{total['untouched']} patterns",
        f"{total['unplanned']} files",
    )
    head = "".join(f"<th>{label}</th>" for label in labels)
    foot = f"<tr>{cells(counts, 'th')}</tr>"
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody><tfoot>{foot}</tfoot></table>"


def _reviews(events: list[Row], tasks: dict[str, Row]) -> str:
    """What each review aspect found, and what became of it: a task as it is now, an issue open or
    resolved (a finding the plan no longer holds, decomposed or deleted, says so too)."""
    found: dict[str, dict[str, str]] = {}  # aspect -> finding id -> its name or text
    resolved: set[str] = set()
    for event in events:
        item, aspect = event.get("id"), event.get("aspect")
        if event["event"] in ("created", "added") and item and aspect:
            found.setdefault(str(aspect), {})[str(item)] = str(event.get("name") or event.get("text") or "")
        elif event["event"] == "resolved" and item:
            resolved.add(str(item))
    if not found:
        return "<p>no review aspect found anything</p>"

    def now(item: str) -> str:
        if item in tasks:
            return str(tasks[item]["now"])
        return "issue resolved" if item in resolved else "issue open"

    labels = ("aspect", "found", "what", "now")
    body = "".join(
        "<tr>"
        + "".join(
            f'<td{_class(kind)} data-label="{label}">{escape(printable(value))}</td>'
            for label, kind, value in zip(
                labels, ("", "id", "name", ""), (aspect, item, what, now(item)), strict=True
            )
        )
        + "</tr>"
        for aspect, items in found.items()
        for item, what in items.items()
    )
    head = "".join(f"<th>{label}</th>" for label in labels)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _class(kind: str) -> str:
    return f' class="{kind}"' if kind else ""


def _spent(root: Path) -> dict[str, Row]:
    """What every agent run spent, per stage, as the plan's state record sums it up."""
    try:
        spent = read_plan(root).state().get("spent") or {}
    except RalphError:
        return {}
    return {str(stage): row for stage, row in spent.items() if isinstance(row, dict)}


def _total(spent: dict[str, Row]) -> Row:
    total = {"runs": 0, "tokens": 0, "cost_usd": 0.0, "unknown_runs": 0}
    for row in spent.values():
        for key in total:
            value = row.get(key, 0)
            total[key] += value if isinstance(value, int | float) and not isinstance(value, bool) else 0
    return total


def _stages(spent: dict[str, Row]) -> str:
    if not spent:
        return "<p>no agent run recorded yet</p>"

    def row(stage: str, values: Row, tag: str = "td") -> str:
        return (
            f'<tr><{tag} data-label="stage">{escape(printable(stage))}</{tag}>'
            f'<td class="n" data-label="runs">{values.get("runs", 0)}</td>'
            f'<td class="n" data-label="tokens">{values.get("tokens", 0):,}</td>'
            f'<td class="n" data-label="cost (USD)">{_stage_cost(values)}</td></tr>'
        )

    rows = "".join(row(stage, values) for stage, values in spent.items())
    head = '<th>stage</th><th class="n">runs</th><th class="n">tokens</th><th class="n">cost (USD)</th>'
    foot = row("all stages", _total(spent), "th")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody><tfoot>{foot}</tfoot></table>"


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


def _ends(start: str, end: str) -> tuple[str, str]:
    """The x axis's end labels: the dates, or within one day the date and times (a run of an
    hour dated 2026-11-25 at both ends says nothing of its length)."""
    if start[:10] != end[:10]:
        return start[:10], end[:10]
    return f"{start[:10]} {start[11:16]}", end[11:16]


def nice_ticks(most: int) -> list[int]:
    """The y axis's ticks for counts up to `most`: 0 and whole steps of 1, 2 or 5 times a power
    of ten, at most 6 of them, the last at or above `most` (0, 1, 3 reads as a broken scale)."""
    most, step = max(most, 1), 1
    while -(-most // step) > 5:
        step = _next_step(step)
    return list(range(0, step * -(-most // step) + 1, step))


def _next_step(step: int) -> int:
    """1, 2, 5, 10, 20, 50, ..."""
    return step * 5 // 2 if str(step)[0] == "2" else step * 2


def _chart(points: list[Row]) -> str:
    """The counts after each commit as one polyline per status: one point per plan commit, the
    x axis the commits in order (dated at both ends), the y axis a count of tasks."""
    if not points:
        return "<p>no history yet</p>"
    ticks = nice_ticks(max(max(point[name] for name, _ in SERIES) for point in points))
    top = ticks[-1]
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
    grid = "".join(
        f'<line x1="{LEFT}" y1="{y(t):.1f}" x2="{WIDTH - RIGHT}" y2="{y(t):.1f}" stroke="#e5e5e5"/>'
        f'<text x="{LEFT - 6}" y="{y(t) + 4:.1f}" font-size="13" text-anchor="end">{t}</text>'
        for t in ticks
    )
    bottom = TOP + plot_h
    first, last = _ends(points[0]["time"], points[-1]["time"])
    axes = (
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}" stroke="#888"/>'
        f'<line x1="{LEFT}" y1="{bottom}" x2="{WIDTH - RIGHT}" y2="{bottom}" stroke="#888"/>'
        f'<text x="{LEFT}" y="{bottom + 18}" font-size="13">{escape(first)}</text>'
        f'<text x="{WIDTH - RIGHT}" y="{bottom + 18}" font-size="13" text-anchor="end">'
        f"{escape(last)}</text>"
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 8}" font-size="13" text-anchor="middle">'
        f"plan.jsonl commits, oldest to newest ({len(points)})</text>"
        f'<text transform="translate(14 {TOP + plot_h / 2:.1f}) rotate(-90)" font-size="13"'
        ' text-anchor="middle">tasks</text>'
    )
    legend = "".join(
        f'<span><i style="background:{colour}"></i>{name} (now {points[-1][name]})</span>'
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
                "type": TaskType.FEATURE.value,  # a task of no type is built as a feature
                "now": "pending",
                "attempts": 0,
                "tokens": 0,
                "cost_usd": 0.0,
                "unknown": 0,
                "failed": Counter(),
            },
        )
        task["name"] = event.get("name") or task["name"]
        kind = event["event"]
        if kind == "created":
            task["created"] = event["time"]
            task["type"] = event.get("type") or task["type"]
        elif kind == "changed" and "type" in event.get("fields", {}):  # a person retyped it
            task["type"] = event["fields"]["type"][1] or TaskType.FEATURE.value
        elif kind in ATTEMPT_EVENTS:
            task["attempts"] += 1
            if kind != "built":
                task["failed"][event.get("verdict", "")] += 1
            else:  # its last build that passed the gate: its scope beside its files
                task["coverage"] = coverage(task_id, event.get("scope"), event.get("files"))
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
            if kind == "rejected":
                task["failed"]["rejected"] += 1
    return tasks


def _duration(seconds: float | None) -> str:
    """42s, 3m 05s, 1h 07m, 2d 3h: as precise as a person reads a time of that length."""
    if seconds is None:
        return "-"
    seconds = max(0, round(seconds))
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{minutes}m {seconds % 60:02d}s"
    if seconds < 86400:
        return f"{hours}h {minutes % 60:02d}m"
    return f"{days}d {hours % 24}h"
