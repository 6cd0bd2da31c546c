"""A run's text for a person: the dry run's preview and the final report (which a pull request's
description also takes), each as lines; `--json` prints their typed data instead."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ralph.cli.common import describe_cost, emit, say
from ralph.text import plural, printable

if TYPE_CHECKING:
    from ralph.loop.construct import Report
    from ralph.loop.dryrun import Preview
    from ralph.loop.observe.report_data import AspectReview, Spent


def dry_run_lines(result: Preview) -> list[str]:
    """The dry run's preview for a person, one line each."""
    import shlex

    budget = result.budget
    minutes = f"{budget.max_minutes:g}" if budget.max_minutes else "none"
    cost = f"${budget.max_cost_usd:g}" if budget.max_cost_usd else "none"
    tokens = f"{budget.max_tokens:,}" if budget.max_tokens else "none"
    steps = result.escalations
    models = ", ".join(
        f"{stage} {' -> '.join(steps[stage]) if stage in steps else model or '(the CLI default)'}"
        for stage, model in result.models.items()
    )
    lines = [
        f"dry run of ralph construct {result.spec}: nothing is run, written or committed",
        f"budget: max-iterations {budget.max_iterations}, max-minutes {minutes}, max-cost {cost},"
        f" max-tokens {tokens},"
        f" max-attempts {budget.max_attempts}, timeout {budget.timeout_s:g}s per agent run,"
        f" gate timeout {budget.gate_timeout_s:g}s, parallel {budget.parallel},"
        f" max-decompose-depth {budget.max_decompose_depth}, max-rebuilds {budget.max_rebuilds}"
        f" after a rejection, {budget.max_agent_failures} agent failures in a row end the run",
        f"gate: {shlex.join(result.gate) if result.gate else '(none)'}",
        f"sandbox: {result.sandbox.said}",
        *([f"models: {models}"] if any(result.models.values()) else []),
        f"iteration {result.iteration}: {plural(len(result.runs), 'agent run')}",
    ]
    for run in result.runs:
        item = f" {run.item}" if run.item else ""
        lines.append(f"  {run.stage}{item}: {run.name}")
        if run.model:
            lines.append(f"    model: {run.model}")
        lines.append(f"    agent: {shlex.join(run.argv)}")
        lines.append(f"    prompt: {run.prompt_bytes} bytes; first lines:")
        lines += [f"      | {line}" for line in run.prompt_head]
        if run.gate is not None:
            lines.append(f"    then the gate: {shlex.join(run.gate) if run.gate else '(none)'}")
    if result.sandbox.argv:
        lines.append(f"each agent and gate starts as: {shlex.join(result.sandbox.argv)} ARGV...")
    lines += [f"note: {note}" for note in result.notes]
    if result.refusals:
        lines.append(
            f"the real run would not start: {plural(len(result.refusals), 'problem')}, listed on stderr"
        )
    return lines


def print_report(report: Report, as_json: bool) -> None:
    from ralph.secrets import redact, redact_fields

    if as_json:
        data = report.to_json()
        outcome = data.pop("outcome")  # a name of ralph's: never redacted
        emit({"outcome": outcome, **redact_fields(data)})
        return
    if report.exit_code and not report.began:
        # refused before it began: one line on stderr, nothing else
        say(f"ralph: {report.outcome.name}: {printable(redact(report.message))}", err=True)
        return
    say("\n".join(report_lines(report)))


def report_lines(report: Report) -> list[str]:
    """The final report of a run that began, for a person (and a pull request's description)."""
    from ralph.plan.scope import coverage_line, coverage_total, total_line
    from ralph.secrets import redact

    lines = [f"ralph: {report.ended_as}: {printable(redact(report.message))}"]  # it can quote an agent
    if report.agent_error:  # AGENT_FAILING: what the agent said, for a person to fix it
        lines.append("the agent's last error lines:")
        lines += [f"  | {printable(redact(line))}" for line in report.agent_error]
    if report.questions:  # first: they are what a person can act on at once
        lines.append(f"questions waiting for an answer ({len(report.questions)}; `ralph answer ID TEXT`):")
        lines += [f"  {printable(item)}" for item in report.questions]
    cost = describe_cost(report.cost_usd, report.unknown_cost_runs, why=True)
    lines.append(f"iterations run: {report.iterations}; tokens: {report.tokens:,}; cost: {cost}")
    for title, table in (("by stage", report.by_stage), ("by task", report.by_task)):
        if table:
            rows = (
                f"{key}{_model_of(row)} {row.tokens:,} tokens,"
                f" cost {describe_cost(row.cost_usd, row.unknown_runs)}"
                for key, row in table.items()
            )
            lines.append(f"{title}: " + "; ".join(rows))
    for title, items in (
        ("accepted", report.accepted),
        ("failed attempts and rejections", report.failed),  # why: what a person reads to help the next
        ("stopped", report.stopped),
        ("issues resolved", [f"{item.id}: {item.note}" for item in report.resolved]),
        ("left", report.remaining),
    ):
        if items:
            lines.append(f"{title} ({len(items)}):")
            lines += [f"  {printable(item)}" for item in items]
    if report.drafts:  # unfinished work, each on a branch of its own
        lines.append(f"drafts ({len(report.drafts)}; the next build of each task is told of its own):")
        lines += [
            f"  {draft.task}: {printable(draft.branch)} (git diff HEAD...{printable(draft.branch)})"
            for draft in report.drafts
        ]
    if report.coverage:  # what each scoped task planned to change beside what its build changed
        lines.append(f"scope and files ({total_line(coverage_total(report.coverage))}):")
        lines += [f"  {printable(coverage_line(row))}" for row in report.coverage]
    lines += review_lines(report.reviews)
    logs = printable(str(report.log_dir))
    lines.append(f"logs: {logs}/ (events: {logs}/events.jsonl)")
    if report.resume:
        then = "answer the questions above, then " if report.questions else ""
        lines.append(f"to resume: {then}{printable(report.resume)}")
    return lines


def review_lines(reviews: list[AspectReview]) -> list[str]:
    """Each review aspect's run, round by round, and what became of each thing it found."""
    if not reviews:
        return []
    lines = [f"review by aspect ({len(reviews)} runs):"]
    for review in reviews:
        ended = "" if review.end == "finished" else f" ({review.end}, nothing kept)"
        said = f"{len(review.findings)} found" if review.findings else "nothing found"
        lines.append(f"  round {review.round} {printable(review.aspect)}: {said}{ended}")
        lines += [
            f"    {finding.id} {finding.fate}: {printable(' '.join(finding.text.split()))[:120]}"
            for finding in review.findings
        ]
    return lines


def _model_of(row: Spent) -> str:
    """ " (model)" of a stage's runs (per stage only), " (model, model)" when an escalation
    used more than one, or nothing."""
    models = row.models or ((row.model,) if row.model else ())
    return f" ({printable(', '.join(models))})" if models else ""
