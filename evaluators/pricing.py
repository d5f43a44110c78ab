"""Money from tokens: a model price table and the cost of steps, agents and runs. Pure; the
service loads the table (the default shipped in `evaluators/data/prices.json`, or the file named
by TRAJHUB_PRICES) and passes it in.

A model the table does not list has no price: its cost is unknown (None) and it is named in
`unpriced_models`, never guessed. A run's `usd` sums its priced steps; `complete` says whether
every model step was priced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trajhub.normalizers.coerce import to_dict, to_whole
from trajhub.normalizers.playback import StepEvent

PER_TOKENS = 1_000_000


class PriceTableError(ValueError):
    """The price table is not in the expected shape (the message says where)."""


@dataclass(frozen=True, slots=True)
class ModelPrice:
    input: float  # USD per 1M input tokens
    output: float  # USD per 1M output tokens
    cached_input: float | None = None  # USD per 1M cache-read input tokens; None = input price


@dataclass(frozen=True, slots=True)
class PriceTable:
    models: Mapping[str, ModelPrice]
    as_of: str = ""
    source: str = ""  # where the table came from: "default" or a file path
    currency: str = "USD"

    def price(self, model: str | None) -> tuple[str, ModelPrice] | None:
        """The table entry for a model name: exact (case-insensitive, any `provider/` prefix
        dropped), else the longest entry the name extends with a `-suffix` (a dated version
        such as gpt-4o-mini-2024-07-18)."""
        if not model:
            return None
        name = model.strip().lower().rsplit("/", 1)[-1]
        if name in self.models:
            return name, self.models[name]
        best = max((key for key in self.models if name.startswith(key + "-")), key=len,
                   default=None)
        return (best, self.models[best]) if best is not None else None


def _price_number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise PriceTableError(f"{where} must be a non-negative number, got {value!r}")
    return float(value)


def price_table(doc: Any, source: str) -> PriceTable:
    """A table from its JSON form: {"as_of", "currency", "models": {name: {"input", "output",
    "cached_input"?}}} with prices per 1M tokens."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("models"), Mapping):
        raise PriceTableError(f"{source}: expected an object with a \"models\" object")
    models = {}
    for name, entry in doc["models"].items():
        where = f"{source}: models.{name}"
        if not isinstance(entry, Mapping):
            raise PriceTableError(f"{where} must be an object")
        cached = entry.get("cached_input")
        models[str(name).lower()] = ModelPrice(
            input=_price_number(entry.get("input"), where + ".input"),
            output=_price_number(entry.get("output"), where + ".output"),
            cached_input=None if cached is None else _price_number(cached,
                                                                   where + ".cached_input"))
    return PriceTable(models=models, as_of=str(doc.get("as_of", "")), source=source,
                      currency=str(doc.get("currency", "USD")))


@dataclass(frozen=True, slots=True)
class StepCost:
    model: str | None
    priced_as: str | None  # the table entry used; None = no price for this model
    usd: float | None


@dataclass
class Cost:
    """Tokens and money over a set of model steps."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    usd: float | None = None
    complete: bool = True  # every model step had a price
    unpriced_models: list[str] = field(default_factory=list)

    def add(self, input_tokens: int, output_tokens: int, cached_input_tokens: int,
            step: StepCost) -> None:
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.cached_input_tokens += cached_input_tokens
        if step.usd is None:
            self.complete = False
            label = step.model or "(model not recorded)"
            if label not in self.unpriced_models:
                self.unpriced_models.append(label)
        else:
            self.usd = round((self.usd or 0.0) + step.usd, 10)


def step_cost(table: PriceTable, model: str | None, input_tokens: int, output_tokens: int,
              cached_input_tokens: int = 0) -> StepCost:
    """Cost of one model call. Cached (cache-read) input tokens are part of `input_tokens`, as
    every convention counts them, and are charged at the cached price where there is one."""
    entry = table.price(model)
    if entry is None:
        return StepCost(model=model, priced_as=None, usd=None)
    key, price = entry
    cached = min(max(cached_input_tokens, 0), max(input_tokens, 0))
    cached_price = price.input if price.cached_input is None else price.cached_input
    usd = ((input_tokens - cached) * price.input + cached * cached_price
           + output_tokens * price.output) / PER_TOKENS
    return StepCost(model=model, priced_as=key, usd=round(usd, 10))


def usage_cost(table: PriceTable, usage: Mapping[str, Mapping[str, Any]]) -> Cost:
    """Cost of a run from its token usage per model name ({model: {"input_tokens",
    "output_tokens", "cached_input_tokens"}}; "" = model not recorded), as the trajectory
    store keeps it for summaries."""
    cost = Cost()
    for model in sorted(usage):
        u = to_dict(usage[model])
        # the stored column is JSON: an unreadable count is 0, like an unrecorded one
        inp = to_whole(u.get("input_tokens")) or 0
        out = to_whole(u.get("output_tokens")) or 0
        cached = to_whole(u.get("cached_input_tokens")) or 0
        cost.add(inp, out, cached, step_cost(table, model or None, inp, out, cached))
    return cost


def total(costs: Iterable[Cost]) -> Cost:
    out = Cost()
    for c in costs:
        out.input_tokens += c.input_tokens
        out.output_tokens += c.output_tokens
        out.cached_input_tokens += c.cached_input_tokens
        if c.usd is not None:
            out.usd = round((out.usd or 0.0) + c.usd, 10)
        out.complete = out.complete and c.complete
        out.unpriced_models += [m for m in c.unpriced_models if m not in out.unpriced_models]
    return out


@dataclass(frozen=True, slots=True)
class RunCost:
    steps: dict[str, StepCost]  # model step id → its cost
    agents: dict[str, Cost]  # agent step id → the cost of its own model steps
    run: Cost


def run_cost(table: PriceTable, events: Iterable[StepEvent]) -> RunCost:
    """Cost per model step, per agent activation and for the whole run."""
    steps: dict[str, StepCost] = {}
    agents: dict[str, Cost] = {}
    run = Cost()
    for e in events:
        if e.type != "model":
            continue
        inp, out, cached = ((e.tokens.input, e.tokens.output, e.tokens.cached_input)
                            if e.tokens is not None else (0, 0, 0))
        cost = step_cost(table, e.model, inp, out, cached)
        steps[e.step_id] = cost
        agents.setdefault(e.agent_step_id, Cost()).add(inp, out, cached, cost)
        run.add(inp, out, cached, cost)
    return RunCost(steps=steps, agents=agents, run=run)
