"""What an agent run cost, and the budgets of a construct run.

A run's cost is the amount its CLI reports, else its tokens at the model's price (the config's
`prices` first, then the maintained price data of the `genai-prices` library), else unknown (None),
never a guessed zero. The money budget (--max-cost) and the token budget (--max-tokens) are held
two ways: a run starts only when the budget would still hold with it (`Spending.admit`), and a
running run whose streamed tokens, priced as they come, pass the budget is stopped
(`Spending.stream`). A money budget that cannot be held is not pretended to be: refused before the
run where ralph can tell (`unpriced_models`), and no run starts after one whose cost is unknown
(CostUnknown), unless a token budget bounds the run."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from functools import cache
from typing import Any

from ralph.agents.base import Usage
from ralph.loop.process.supervisor import BudgetSpent
from ralph.plan.stage_declarations import BY_NAME

PRICE_KEYS = ("input", "output", "cache_read", "cache_creation")
Price = dict[str, float]  # USD per million tokens, by PRICE_KEYS ("input" and "output" at least)
Prices = dict[str, Price]  # model name (or the start of one) -> its price: the config's `prices`
# A stage's or an item's spending: runs, tokens, cost_usd, unknown_runs (and the report's model,
# models); a dict because the plan's state record keeps it as such (Plan.add_spending).
SpendingRow = dict[str, Any]
# genai-prices' names of the same prices, per million tokens
_LIBRARY_KEYS = {
    "input": "input_mtok",
    "output": "output_mtok",
    "cache_read": "cache_read_mtok",
    "cache_creation": "cache_write_mtok",
}


class CostSpent(BudgetSpent):
    """The money budget would be passed: the loop ends with MAX_COST. `stopped_run`: a running
    agent was stopped for it, so its unfinished work must be set aside."""


class CostUnknown(CostSpent):
    """A run's cost turned out unknown (no reported cost, no price for its model) under a money
    budget and no token budget: nothing bounds what the next runs spend, so none starts; the loop
    ends with MAX_COST. `model`: the run's (None: the agent CLI's default)."""

    def __init__(self, message: str, model: str | None):
        super().__init__(message)
        self.model = model


class TokensSpent(BudgetSpent):
    """The token budget would be passed: the loop ends with MAX_TOKENS."""


def price_of(model: str | None, overrides: Prices | None = None) -> Price | None:
    """USD per million tokens of `model` ({"input", "output", "cache_read"?, "cache_creation"?}):
    the config's price (by exact name, then by the longest name the model's starts with), else
    the library's, else None."""
    if not model:
        return None
    mine = overrides or {}
    if model in mine:
        return mine[model]
    starts = [name for name in mine if model.startswith(name)]
    if starts:
        return mine[max(starts, key=len)]
    return library_price(model)


@cache
def library_price(model: str) -> Price | None:
    """The model's price from genai-prices' bundled data (never fetched: see below), or None.

    The library's own calc_price is not used: it picks a long-context tier from the input tokens of
    one request, and a run's tokens are the sum of many requests. The base price is the right one.
    Imported here, on the loop's first priced run: the library's data takes some 0.25 s to load,
    which no state command may pay. Only its bundled snapshot is read; ralph never starts its
    UpdatePrices, the one part that goes online."""
    from genai_prices import data_snapshot

    try:
        _, info = data_snapshot.get_snapshot().find_provider_model(model, None, None, None)
    except LookupError:
        return None
    prices = info.get_prices(datetime.now(tz=UTC))
    found: dict[str, float] = {}
    for key, name in _LIBRARY_KEYS.items():
        value = getattr(prices, name, None)
        value = getattr(value, "base", value)  # tiered prices: the base tier's
        if value is not None:
            found[key] = float(value)
    return found if {"input", "output"} <= set(found) else None


def unpriced_models(
    models: dict[str, str | None], overrides: Prices | None = None
) -> dict[str | None, list[str]]:
    """Of each stage's model (stage -> model; None: the agent CLI's default, which ralph cannot
    name), those with no known price, each with its stages: what a CLI that reports no cost would
    leave of unknown cost."""
    unpriced: dict[str | None, list[str]] = {}
    for stage, model in models.items():
        if price_of(model, overrides) is None:
            unpriced.setdefault(model, []).append(stage)
    return unpriced


def run_cost(usage: Usage, model: str | None, overrides: Prices | None = None) -> float | None:
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


def known_cost(cost_usd: float, known_runs: int, unknown_runs: int) -> float | None:
    """What runs cost as a report gives it: the sum of the known costs, or None when runs were made
    and none of their costs is known (unknown, which $0 would misstate)."""
    if unknown_runs and not known_runs:
        return None
    return round(cost_usd, 6)


def _spent_for(stage: str, item: str | None) -> str | None:
    """The task or issue a run's spending counts under (None: none; a review aspect is no item)."""
    declared = BY_NAME.get(stage)
    return item if declared is None or declared.spends_for_item else None


class Spending:
    """Tokens and cost of a construct run so far, in all and per stage and per item, and its
    budgets (money, tokens).

    A run may start when the amount spent, plus what each running run has streamed (at least the
    most one run has cost so far), plus one more such run, stays within the budget; while runs
    are going, one that may not start yet waits for them rather than ending the loop (they may
    end cheaper). With a money budget only one run goes until a run's cost is known: before that
    there is nothing to judge (four builds started at once passed a $1 budget by $1.40). The most
    one run cost, not the mean: a cheap first run (an INVESTIGATE) made four $0.60 builds look
    like $0.05 ones.

    While a run goes, its streamed tokens and their price are `stream`ed in; once the amount spent
    and streamed passes a budget, the run is told to stop. Parallel BUILD and VERIFY runs add from
    several threads, one run per thread at a time: a run's streamed amounts are kept by the thread
    that admitted it (its `owner`; the monitor that streams them runs in a reader thread)."""

    def __init__(self, max_cost_usd: float | None, max_tokens: int | None = None):
        self.max_cost_usd = max_cost_usd
        self.max_tokens = max_tokens
        self.cost_usd = 0.0  # of the runs whose cost is known
        self.tokens = 0
        self.known_runs = 0
        self.unknown_runs = 0
        self.ended_runs = 0
        self._admitted: set[int] = set()  # the threads whose run is going (one admit() each)
        self.largest_cost = 0.0  # of one run whose cost is known
        self.largest_tokens = 0
        self.streamed: dict[int, tuple[int, float | None]] = {}  # thread -> tokens, cost of its run
        self.by_stage: dict[str, SpendingRow] = {}
        self.by_item: dict[str, SpendingRow] = {}
        self.unsaved: dict[str, SpendingRow] = {}  # per stage, not yet written to the plan's state record
        # The first run of unknown cost under a money budget that no token budget backs: no run
        # starts after it (CostUnknown).
        self.cost_unknown: CostUnknown | None = None
        self._lock = threading.Condition()

    @property
    def running(self) -> int:
        return len(self._admitted)

    @property
    def budgeted(self) -> bool:
        return self.max_cost_usd is not None or self.max_tokens is not None

    def over_budget(self) -> BudgetSpent | None:
        """Why the next run may not start, or None."""
        with self._lock:
            return self._over_budget()

    def _over_budget(self) -> BudgetSpent | None:
        """With the runs going and one more, each at least the largest run so far."""
        if self.cost_unknown is not None:  # a fresh one for each refusal: threads raise their own
            return CostUnknown(str(self.cost_unknown), self.cost_unknown.model)
        streams = self.streamed.values()
        if self.max_cost_usd is not None and self.known_runs:
            one = self.largest_cost
            going = sum(max(cost or 0.0, one) for _, cost in streams) + one * (self.running - len(streams))
            if self.cost_usd + going + one > self.max_cost_usd:
                return CostSpent(
                    f"the money budget (${self.max_cost_usd:g}) would be passed: ${self.cost_usd:.2f} spent,"
                    f" and a run costs up to ${one:.2f}"
                )
        if self.max_tokens is not None and self.ended_runs:
            one = self.largest_tokens
            going = sum(max(tokens, one) for tokens, _ in streams) + one * (self.running - len(streams))
            if self.tokens + going + one > self.max_tokens:
                return TokensSpent(
                    f"the token budget ({self.max_tokens:,}) would be passed: {self.tokens:,} spent,"
                    f" and a run takes up to {one:,} tokens"
                )
        return None

    def admit(self) -> BudgetSpent | None:
        """Start a run, or say why it may not: a budget would be passed. Judging and counting the
        start under one lock: two threads cannot both take the last of the budget."""
        with self._lock:
            while True:
                if not self.budgeted:
                    break
                no_cost_yet = self.max_cost_usd is not None and not self.known_runs
                no_tokens_yet = self.max_tokens is not None and not self.ended_runs
                if self.running and (no_cost_yet or no_tokens_yet):
                    self._lock.wait(timeout=1.0)  # nothing to judge by yet: one run at a time
                    continue
                over = self._over_budget()
                if over is None:
                    break
                if not self.running:
                    return over
                self._lock.wait(timeout=1.0)  # judged again as each run going ends
            self._admitted.add(threading.get_ident())
            self.streamed.pop(threading.get_ident(), None)
            return None

    def stream(self, owner: int, tokens: int, cost_usd: float | None) -> BudgetSpent | None:
        """The run that thread `owner` admitted has so far streamed `tokens` tokens costing
        `cost_usd` (None: no price known). Why it must stop, or None: the spent and streamed amounts
        passed a budget."""
        with self._lock:
            self.streamed[owner] = (tokens, cost_usd)
            streams = self.streamed.values()
            if self.max_cost_usd is not None:
                going = sum(cost or 0.0 for _, cost in streams)
                if self.cost_usd + going > self.max_cost_usd:
                    return CostSpent(
                        f"the money budget (${self.max_cost_usd:g}) is spent: ${self.cost_usd:.2f} by the"
                        f" runs ended and ${going:.2f} by the {len(self.streamed)} running",
                        stopped_run=True,
                    )
            if self.max_tokens is not None:
                going_tokens = sum(tokens for tokens, _ in streams)
                if self.tokens + going_tokens > self.max_tokens:
                    return TokensSpent(
                        f"the token budget ({self.max_tokens:,}) is spent: {self.tokens:,} tokens by the runs"
                        f" ended and {going_tokens:,} by the {len(self.streamed)} running",
                        stopped_run=True,
                    )
            return None

    def stopped(self, stage: str | None = None, item: str | None = None, model: str | None = None) -> int:
        """A run that raised (a stop signal, a budget): it ended; what it streamed was spent.
        Returns the tokens it streamed."""
        with self._lock:
            tokens, cost = self.streamed.pop(threading.get_ident(), (0, None))
            self._admitted.discard(threading.get_ident())  # none going (refused a start): nothing to end
            self._lock.notify_all()
            if stage is not None and (tokens or cost):
                self._count(stage, item, tokens, cost, model)
            return tokens

    def add(
        self, stage: str, item: str | None, tokens: int, cost_usd: float | None, model: str | None = None
    ) -> CostUnknown | None:
        """A run ended (one admit() each). `model`: the one it ran with, shown per stage. Returns
        why no run starts from now on when it is this run that made the money budget unholdable."""
        with self._lock:
            self._lock.notify_all()
            self._admitted.discard(threading.get_ident())
            self.streamed.pop(threading.get_ident(), None)
            return self._count(stage, item, tokens, cost_usd, model)

    def _count(
        self, stage: str, item: str | None, tokens: int, cost_usd: float | None, model: str | None
    ) -> CostUnknown | None:
        self.ended_runs += 1
        self.tokens += tokens
        self.largest_tokens = max(self.largest_tokens, tokens)
        unholdable = None
        if cost_usd is None:
            self.unknown_runs += 1
            unholdable = self._cannot_hold(stage, item, model)
        else:
            self.known_runs += 1
            self.cost_usd += cost_usd
            self.largest_cost = max(self.largest_cost, cost_usd)
        for table, key in (
            (self.by_stage, stage),
            (self.by_item, _spent_for(stage, item)),
            (self.unsaved, stage),
        ):
            if key is None:
                continue
            row = table.setdefault(key, {"runs": 0, "tokens": 0, "cost_usd": 0.0, "unknown_runs": 0})
            row["runs"] += 1
            row["tokens"] += tokens
            if cost_usd is None:
                row["unknown_runs"] += 1
            else:
                row["cost_usd"] = round(row["cost_usd"] + cost_usd, 6)
        if model:  # not in the plan's record (unsaved): the report's, for this run
            row = self.by_stage[stage]
            used = row.get("models") or ([row["model"]] if row.get("model") else [])
            if model not in used:  # more than one: an escalation's steps, in order
                used.append(model)
            row["model"] = model  # the last one
            if len(used) > 1:
                row["models"] = used
        return unholdable

    def _cannot_hold(self, stage: str, item: str | None, model: str | None) -> CostUnknown | None:
        """A run of unknown cost: under a money budget alone, the budget cannot be held from now on.
        The refusal, when this run is the first to make it so."""
        if self.max_cost_usd is None or self.max_tokens is not None or self.cost_unknown is not None:
            return None
        run = f"{stage} {item}" if item else stage
        named = f"model {model}" if model else "the agent CLI's default model"
        self.cost_unknown = CostUnknown(
            f"the money budget (${self.max_cost_usd:g}) cannot be held: the cost of {run} is unknown"
            f" (no cost reported, no price known for {named}), so no further run starts; give its price"
            " in the config's `prices` (USD per million tokens) or bound the run with --max-tokens",
            model,
        )
        return self.cost_unknown

    def take_unsaved(self) -> dict[str, SpendingRow]:
        """What was spent per stage since the last call, for the plan's state record."""
        with self._lock:
            unsaved, self.unsaved = self.unsaved, {}
        return unsaved
