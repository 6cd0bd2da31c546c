"""What an agent run cost: the amount its CLI reports, else its tokens at the model's price (the
config's `prices` first, then this table), else unknown (None), never a guessed zero."""

from __future__ import annotations

from ralph.agents.base import Usage

# USD per million tokens, from the providers' public price lists when this was written; prices
# change, so a repository sets its own in the config record's `prices`. Matched by exact name,
# then by the longest name the model's starts with ("claude-sonnet-4-5-20250929").
PRICES: dict[str, dict[str, float]] = {
    "claude-opus-4": {"input": 15.0, "output": 75.0, "cache_read": 1.5, "cache_creation": 18.75},
    "claude-sonnet-4": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_creation": 3.75},
    "claude-haiku-4": {"input": 1.0, "output": 5.0, "cache_read": 0.1, "cache_creation": 1.25},
    "gpt-5": {"input": 1.25, "output": 10.0, "cache_read": 0.125},
    "gemini-2.5-pro": {"input": 1.25, "output": 10.0, "cache_read": 0.31},
}


def price_of(model: str | None, overrides: dict | None = None) -> dict | None:
    if not model:
        return None
    table = {**PRICES, **(overrides or {})}
    if model in table:
        return table[model]
    starts = [name for name in table if model.startswith(name)]
    return table[max(starts, key=len)] if starts else None


def run_cost(usage: Usage, model: str | None, overrides: dict | None = None) -> float | None:
    """The run's cost in USD, or None when neither the CLI nor a price says it."""
    if usage.cost_usd is not None:
        return usage.cost_usd
    price = price_of(model, overrides)
    if price is None:
        return None
    per_token = {key: value / 1_000_000 for key, value in price.items() if value is not None}
    return (
        usage.input_tokens * per_token["input"]
        + usage.output_tokens * per_token["output"]
        + usage.cache_read_tokens * per_token.get("cache_read", per_token["input"])
        + usage.cache_creation_tokens * per_token.get("cache_creation", per_token["input"])
    )


class Spending:
    """Tokens and cost of a construct run so far, in all and per stage and per item, and the money
    budget: the next run may not start when the runs so far, plus the ones running and one more at
    their mean cost, would pass it. Parallel BUILD and VERIFY add from several threads; with a
    budget, a run waits to start until the first run has ended (before that no cost is known, and
    four runs started at once passed a $1 budget by $1.40)."""

    def __init__(self, max_cost_usd: float | None):
        import threading

        self.max_cost_usd = max_cost_usd
        self.cost_usd = 0.0  # of the runs whose cost is known
        self.known_runs = 0
        self.unknown_runs = 0
        self.running = 0
        self.by_stage: dict[str, dict] = {}
        self.by_item: dict[str, dict] = {}
        self.unsaved: dict[str, dict] = {}  # per stage, not yet written to the plan's state record
        self._lock = threading.Condition()

    def over_budget(self) -> str | None:
        """Why the next run may not start, or None."""
        with self._lock:
            return self._over_budget()

    def _over_budget(self) -> str | None:
        if self.max_cost_usd is None or not self.known_runs:
            return None
        spent, mean, running = self.cost_usd, self.cost_usd / self.known_runs, self.running
        if spent + mean * (running + 1) > self.max_cost_usd:
            return (
                f"the money budget (${self.max_cost_usd:g}) would be passed: ${spent:.2f} spent, and a run"
                f" costs ${mean:.2f} on average"
            )
        return None

    def admit(self) -> str | None:
        """Start a run, or say why it may not: the budget would be passed. With a budget and no
        run ended yet (no cost known), wait for the one running to end first. Judging and counting
        the start under one lock: two threads cannot both take the last of the budget."""
        with self._lock:
            while self.max_cost_usd is not None and self.running and not self.known_runs + self.unknown_runs:
                self._lock.wait(timeout=1.0)
            over = self._over_budget()
            if over is None:
                self.running += 1
            return over

    def stopped(self) -> None:
        """A run that raised (a stop signal, the time budget): it ended, its cost not known."""
        with self._lock:
            self.running = max(self.running - 1, 0)
            self._lock.notify_all()

    def add(self, stage: str, item: str | None, tokens: int, cost_usd: float | None) -> None:
        """A run ended (one admit() each)."""
        with self._lock:
            self._lock.notify_all()
            self.running = max(self.running - 1, 0)
            if cost_usd is None:
                self.unknown_runs += 1
            else:
                self.known_runs += 1
                self.cost_usd += cost_usd
            for table, key in ((self.by_stage, stage), (self.by_item, item), (self.unsaved, stage)):
                if key is None:
                    continue
                row = table.setdefault(key, {"runs": 0, "tokens": 0, "cost_usd": 0.0, "unknown_runs": 0})
                row["runs"] += 1
                row["tokens"] += tokens
                if cost_usd is None:
                    row["unknown_runs"] += 1
                else:
                    row["cost_usd"] = round(row["cost_usd"] + cost_usd, 6)

    def take_unsaved(self) -> dict[str, dict]:
        """What was spent per stage since the last call, for the plan's state record."""
        with self._lock:
            unsaved, self.unsaved = self.unsaved, {}
        return unsaved


def describe_cost(cost_usd: float, unknown_runs: int) -> str:
    """ "$0.42", "$0.42 + 2 runs of unknown cost", or "unknown" when no run's cost is known."""
    if unknown_runs and not cost_usd:
        return f"unknown ({unknown_runs} run(s) with no reported cost and no price for the model)"
    return f"${cost_usd:.2f}" + (f" + {unknown_runs} run(s) of unknown cost" if unknown_runs else "")
