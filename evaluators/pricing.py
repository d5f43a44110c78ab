"""Money from tokens: the price of each model step, agent and run. Pure: no I/O.

Prices come from `genai-prices` (pydantic's maintained price data, pinned in pyproject.toml),
read from the data bundled in the installed package: it knows providers, cache-read and
cache-write prices, prices that change on a date, and tiered (long-context) prices. Its
`UpdatePrices` background fetch is never started, and trajhub prices from its own snapshot of
the bundled data (`_catalogue`), so a fetch started by another library in the same process
cannot change trajhub's prices either. A price table file (TRAJHUB_PRICES, parsed by
`price_table` and loaded by the service) goes on top: its entries win.

A model neither knows has no price: its cost is unknown (None) and it is named in
`unpriced_models`, never guessed. A run's `usd` sums its priced steps; `complete` says whether
every model step was priced.

How tokens are counted, once each (docs/costs.md): a step's `input` is all the input tokens,
cache reads and cache writes included, and its `output` all the output tokens, reasoning
included (the OTel GenAI rule, which LangChain's usage metadata, OpenInference, OpenLLMetry and
Coze Loop follow). The cache and reasoning counts only say which part of those totals is billed
at another price. A record that cannot be inclusive (cache reads and writes more than the input,
as Anthropic's raw `usage.input_tokens` is; reasoning more than the output, as Gemini's raw
`candidatesTokenCount` is) is read as exclusive, and the parts are added to the total.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import genai_prices
from genai_prices import data as genai_data
from genai_prices import types as genai_types
from genai_prices.data_snapshot import DataSnapshot

from trajhub.normalizers.coerce import to_dict, to_whole
from trajhub.normalizers.playback import StepEvent

PER_TOKENS = 1_000_000

#: the genai-prices release whose bundled data trajhub was checked against, and the day it was
#: published (its data is as of then). pyproject.toml pins this version; tests/test_costs.py
#: fails when the installed one differs, so the date below is updated with the pin.
GENAI_PRICES_VERSION = "0.2.3"
GENAI_PRICES_DATA_DATE = "2026-11-10"

#: where a step's price came from (StepCost.source)
OVERRIDE, GENAI_PRICES = "TRAJHUB_PRICES", "genai-prices"


class PriceTableError(ValueError):
    """The price table is not in the expected shape (the message says where)."""


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """A TRAJHUB_PRICES entry, USD per 1M tokens."""

    input: float
    output: float  # reasoning tokens are output tokens
    cached_input: float | None = None  # a cache read; None = the input price
    cache_write: float | None = None  # a cache write; None = the input price


@dataclass(frozen=True, slots=True, eq=False)
class PriceTable:
    """The TRAJHUB_PRICES file: prices that win over genai-prices for the models it lists.
    Equal only to itself (the service reads each file version once), so it can key caches."""

    models: Mapping[str, ModelPrice]
    as_of: str = ""
    source: str = ""  # the file's path
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


def _optional_price(entry: Mapping[str, Any], key: str, where: str) -> float | None:
    value = entry.get(key)
    return None if value is None else _price_number(value, f"{where}.{key}")


def price_table(doc: Any, source: str) -> PriceTable:
    """A table from its JSON form: {"as_of", "currency", "models": {name: {"input", "output",
    "cached_input"?, "cache_write"?}}} with prices per 1M tokens."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("models"), Mapping):
        raise PriceTableError(f"{source}: expected an object with a \"models\" object")
    models = {}
    for name, entry in doc["models"].items():
        where = f"{source}: models.{name}"
        if not isinstance(entry, Mapping):
            raise PriceTableError(f"{where} must be an object")
        models[str(name).lower()] = ModelPrice(
            input=_price_number(entry.get("input"), where + ".input"),
            output=_price_number(entry.get("output"), where + ".output"),
            cached_input=_optional_price(entry, "cached_input", where),
            cache_write=_optional_price(entry, "cache_write", where))
    return PriceTable(models=models, as_of=str(doc.get("as_of", "")), source=source,
                      currency=str(doc.get("currency", "USD")))


# --------------------------------------------------------------------------- token usage


@dataclass(frozen=True, slots=True)
class Usage:
    """One model call's tokens as recorded, and when it started (Unix ms; 0 = unknown)."""

    input: int
    output: int
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    started_ms: int = 0


@dataclass(frozen=True, slots=True)
class Billable:
    """A call's tokens, each counted once: `input` and `output` are the totals; the cache and
    reasoning counts are the parts of those totals with their own price."""

    input: int
    output: int
    cache_read: int
    cache_write: int
    reasoning: int


def billable(u: Usage) -> Billable:
    """The inclusive totals of a recorded usage (see the module docstring)."""
    read, write, reasoning = max(u.cache_read, 0), max(u.cache_write, 0), max(u.reasoning, 0)
    inp, out = max(u.input, 0), max(u.output, 0)
    if read + write > inp:  # the input count left the cached tokens out
        inp += read + write
    if reasoning > out:  # the output count left the reasoning tokens out
        out += reasoning
    return Billable(input=inp, output=out, cache_read=read, cache_write=write,
                    reasoning=reasoning)


# --------------------------------------------------------------------------- price lookup


@functools.cache
def _catalogue() -> DataSnapshot:
    """genai-prices' bundled data, in a snapshot of trajhub's own (see the module docstring)."""
    return DataSnapshot(providers=list(genai_data.providers), from_auto_update=False)


# Bedrock model ids: `anthropic.claude-…-v2:0`, with an optional region prefix (`us.`, `eu.`)
_BEDROCK = re.compile(r"^(?:[a-z]{2,6}\.)?(?:anthropic|amazon|meta|mistral|cohere|ai21|deepseek|"
                      r"openai|qwen|writer|twelvelabs)\.")


def _attempts(name: str) -> list[tuple[str | None, str]]:
    """(provider hint, model ref) pairs to try, most specific first: the name as written, a
    `provider/` prefix as the provider (`openai/gpt-4o`, `azure/gpt-4o`), the name without its
    prefixes (`models/gemini-2.5-pro`), and a Bedrock id on AWS."""
    tries: list[tuple[str | None, str]] = [(None, name)]
    if "/" in name:
        head, tail = name.split("/", 1)
        tries += [(head, tail), (None, tail)]
        last = name.rsplit("/", 1)[1]
        if last != tail:
            tries.append((None, last))
    if _BEDROCK.match(name):
        tries.append(("aws", name))
    return tries


@functools.lru_cache(maxsize=1024)
def _genai_model(name: str) -> tuple[genai_types.Provider, genai_types.ModelInfo] | None:
    snapshot = _catalogue()
    for provider_id, ref in _attempts(name):
        try:
            return snapshot.find_provider_model(ref, None, provider_id, None)
        except LookupError:
            continue
    return None


def genai_prices_label() -> str:
    """What the cost view says of genai-prices: version and the date of its data."""
    version = genai_prices.__version__
    if version == GENAI_PRICES_VERSION:
        return f"genai-prices {version}, data of {GENAI_PRICES_DATA_DATE}"
    return f"genai-prices {version}, bundled data"


@dataclass(frozen=True, slots=True)
class Prices:
    """The prices in use: genai-prices, with the TRAJHUB_PRICES table (if any) on top."""

    override: PriceTable | None = None

    @property
    def currency(self) -> str:
        return "USD"  # genai-prices prices in USD; a TRAJHUB_PRICES table is read as USD too

    @property
    def description(self) -> str:
        """Every source configured, the one that wins first."""
        base = genai_prices_label()
        return base if self.override is None else f"{self.override_label()} over {base}"

    @property
    def as_of(self) -> str:
        """The date of the winning source's prices: the TRAJHUB_PRICES table's `as_of`
        (when it gives one), else genai-prices' data date."""
        if self.override is not None and self.override.as_of:
            return self.override.as_of
        return GENAI_PRICES_DATA_DATE

    def override_label(self) -> str:
        table = self.override
        if table is None:
            return ""
        return f"TRAJHUB_PRICES {table.source}" + (f", as of {table.as_of}" if table.as_of
                                                    else "")

    def label(self, source: str) -> str:
        return self.override_label() if source == OVERRIDE else genai_prices_label()


def _request_time(u: Usage) -> datetime:
    """genai-prices picks the price in force when the call was made; a call of unknown time is
    priced as of the data's date (never "now": the same run must cost the same every day)."""
    if u.started_ms > 0:
        return datetime.fromtimestamp(u.started_ms / 1000, tz=UTC)
    return datetime.combine(date.fromisoformat(GENAI_PRICES_DATA_DATE), datetime.min.time(),
                            tzinfo=UTC)


def _override_usd(price: ModelPrice, b: Billable) -> float:
    read = price.input if price.cached_input is None else price.cached_input
    write = price.input if price.cache_write is None else price.cache_write
    uncached = b.input - b.cache_read - b.cache_write
    return (uncached * price.input + b.cache_read * read + b.cache_write * write
            + b.output * price.output) / PER_TOKENS


@dataclass(frozen=True, slots=True)
class StepCost:
    model: str | None
    priced_as: str | None  # the entry used ("openai:gpt-4o", or the TRAJHUB_PRICES key)
    usd: float | None  # None = no price for this model
    source: str | None = None  # OVERRIDE or GENAI_PRICES; None when not priced


def step_cost(prices: Prices, model: str | None, usage: Usage) -> StepCost:
    """Cost of one model call: TRAJHUB_PRICES first, then genai-prices."""
    b = billable(usage)
    entry = prices.override.price(model) if prices.override is not None else None
    if entry is not None:
        key, price = entry
        return StepCost(model, key, round(_override_usd(price, b), 10), OVERRIDE)
    found = _genai_model(model.strip().lower()) if model and model.strip() else None
    if found is None:
        return StepCost(model, None, None)
    provider, info = found
    when = _request_time(usage)
    rates = _linear_rates(provider, info, info.get_prices(when), when)
    try:
        usd = (_genai_usd(provider, info, when, b) if rates is None else
               rates[0] + sum((r * n for r, n in zip(rates[1:], _counts(b), strict=True)),
                              Decimal(0)) / PER_TOKENS)
    except ValueError:  # usage genai-prices cannot price: unknown, never a guess
        return StepCost(model, None, None)
    return StepCost(model, f"{provider.id}:{info.id}", round(float(usd), 10), GENAI_PRICES)


def _counts(b: Billable) -> tuple[int, int, int, int, int]:
    return b.input, b.cache_read, b.cache_write, b.output, b.reasoning


def _genai_usd(provider: genai_types.Provider, info: genai_types.ModelInfo, when: datetime,
               b: Billable) -> Decimal:
    total: Decimal = info.calc_price(
        genai_prices.Usage(input_tokens=b.input, cache_read_tokens=b.cache_read,
                           cache_write_tokens=b.cache_write, output_tokens=b.output,
                           output_reasoning_tokens=b.reasoning),
        provider, genai_request_timestamp=when).total_price
    return total


#: the price set (of one model, in force at some time) each cached rate was read from, by id:
#: genai-prices' price sets live as long as its data, and are kept here so no id is reused
_RATES: dict[int, tuple[genai_types.ModelPrice, tuple[Decimal, ...] | None]] = {}


def _linear_rates(provider: genai_types.Provider, info: genai_types.ModelInfo,
                  price: genai_types.ModelPrice, when: datetime) -> tuple[Decimal, ...] | None:
    """A price set without tiers is a constant plus a rate per token of each count (input,
    cache read, cache write, output, reasoning): read once from genai-prices' own calculation
    at a few usages, it prices every call with a few multiplications, where genai-prices
    resolves and checks its units on every call. None for a tiered price set (the rate
    depends on the input's size) or one genai-prices cannot price: each call asks it."""
    cached = _RATES.get(id(price))
    if cached is not None and cached[0] is price:
        return cached[1]
    rates: tuple[Decimal, ...] | None = None
    if not any(isinstance(v, genai_types.TieredPrices) for v in vars(price).values()):
        n = PER_TOKENS

        def usd(inp: int = 0, read: int = 0, write: int = 0, out: int = 0, reasoning: int = 0
                ) -> Decimal:
            return _genai_usd(provider, info, when, Billable(input=inp, output=out, cache_read=read,
                                                          cache_write=write, reasoning=reasoning))

        try:
            base, inp, out = usd(), usd(inp=n), usd(out=n)
            rates = (base, inp - base, usd(inp=n, read=n) - inp, usd(inp=n, write=n) - inp,
                     out - base, usd(out=n, reasoning=n) - out)
        except ValueError:
            rates = None
    _RATES[id(price)] = (price, rates)
    return rates


# --------------------------------------------------------------------------- sums


@dataclass
class Cost:
    """Tokens (each counted once, see `billable`) and money over a set of model steps."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0  # cache reads
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    usd: float | None = None
    complete: bool = True  # every model step had a price
    unpriced_models: list[str] = field(default_factory=list)
    price_sources: list[str] = field(default_factory=list)  # OVERRIDE / GENAI_PRICES used

    def add(self, usage: Usage, step: StepCost) -> None:
        b = billable(usage)
        self.input_tokens += b.input
        self.output_tokens += b.output
        self.cached_input_tokens += b.cache_read
        self.cache_write_tokens += b.cache_write
        self.reasoning_tokens += b.reasoning
        if step.usd is None:
            self.complete = False
            label = step.model or "(model not recorded)"
            if label not in self.unpriced_models:
                self.unpriced_models.append(label)
        else:
            self.usd = round((self.usd or 0.0) + step.usd, 10)
            if step.source is not None and step.source not in self.price_sources:
                self.price_sources.append(step.source)


def _whole(value: Any) -> int:
    # the stored column is JSON: an unreadable count is 0, like an unrecorded one
    if type(value) is int:  # what the store holds; the rest is coerced
        return value
    return to_whole(value) or 0


def _calls(entry: Mapping[str, Any]) -> list[Usage]:
    """The calls of one model in the stored usage (see `normalizers.playback.model_usage`); a
    row stored before calls were kept is priced as one call of its totals."""
    calls = entry.get("calls")
    if isinstance(calls, list):
        return [Usage(*(_whole(v) for v in c)) for c in calls
                if isinstance(c, list) and len(c) == 6]
    return [Usage(input=_whole(entry.get("input_tokens")),
                  output=_whole(entry.get("output_tokens")),
                  cache_read=_whole(entry.get("cached_input_tokens")),
                  cache_write=_whole(entry.get("cache_write_tokens")),
                  reasoning=_whole(entry.get("reasoning_tokens")))]


@functools.lru_cache(maxsize=1024)
def _genai_linear(name: str) -> bool:
    """Whether genai-prices prices every call of this model at the same rate per token: one
    price (none that changes with the date or the time of day), no tiers by the call's size,
    and no price per request."""
    found = _genai_model(name)
    if found is None:
        return False
    price = found[1].prices
    return isinstance(price, genai_types.ModelPrice) and not any(
        isinstance(value, genai_types.TieredPrices) for value in vars(price).values()) \
        and getattr(price, "requests_kcount", None) is None


def _linear(prices: Prices, model: str | None) -> bool:
    """Whether the calls of `model` cost what their tokens summed cost (see `_genai_linear`;
    a TRAJHUB_PRICES entry is a rate per token)."""
    if not model or not model.strip():
        return False
    if prices.override is not None and prices.override.price(model) is not None:
        return True
    return _genai_linear(model.strip().lower())


def usage_sums(usage: Mapping[str, Any]) -> dict[str, list[int]]:
    """A run's token usage per model (as the store keeps it, see `usage_cost`) as
    {model: [calls, input, output, cache read, cache write, reasoning]}: each call's billable
    tokens (`billable`), summed. A session's row adds these up over its turns
    (storage/session_rows.py), and `priced_by_sums` says which models they price."""
    out: dict[str, list[int]] = {}
    for model, entry in usage.items():
        if not isinstance(entry, Mapping):
            continue
        parts = [billable(c) for c in _calls(to_dict(entry))]
        out[str(model)] = [len(parts), *(sum(getattr(b, f) for b in parts) for f in (
            "input", "output", "cache_read", "cache_write", "reasoning"))]
    return out


def priced_by_sums(prices: Prices, model: str) -> bool:
    """Whether one call of the billable tokens of a model's calls summed costs what the calls
    do (up to `usage_cost`'s rounding): a model priced per token (`_linear`), or one with no
    price at all, whose calls and their sum are alike unpriced. A session's row keeps only the
    sums (storage/session_rows.py)."""
    if _linear(prices, model or None) or not model.strip():
        return True
    return _genai_model(model.strip().lower()) is None


def _summed(calls: list[Usage]) -> Usage:
    """One call of the calls' billable tokens summed (`billable` of it gives the sums back)."""
    parts = [billable(c) for c in calls]
    return Usage(input=sum(b.input for b in parts), output=sum(b.output for b in parts),
                 cache_read=sum(b.cache_read for b in parts),
                 cache_write=sum(b.cache_write for b in parts),
                 reasoning=sum(b.reasoning for b in parts), started_ms=calls[0].started_ms)


def usage_cost(prices: Prices, usage: Mapping[str, Mapping[str, Any]]) -> Cost:
    """Cost of a run from its token usage per model name, as the trajectory store keeps it
    for summaries ("" = model not recorded). The calls of a model priced at one rate per
    token are priced once, summed: the same money (genai-prices computes in exact decimals)
    for a fraction of the time, which a session of thousands of turns needs (bench/README.md,
    "Sessions").
    Only the rounding differs: each priced call is rounded to 1e-10 USD."""
    cost = Cost()
    for model in sorted(usage):
        calls = _calls(to_dict(usage[model]))
        if len(calls) > 1 and _linear(prices, model or None):
            calls = [_summed(calls)]
        for call in calls:
            cost.add(call, step_cost(prices, model or None, call))
    return cost


@dataclass(frozen=True, slots=True)
class RunCost:
    steps: dict[str, StepCost]  # model step id → its cost
    agents: dict[str, Cost]  # agent step id → the cost of its own model steps
    run: Cost


def event_usage(e: StepEvent) -> Usage:
    t = e.tokens
    if t is None:
        return Usage(0, 0, started_ms=e.started_at_ms)
    return Usage(input=t.input, output=t.output, cache_read=t.cached_input,
                 cache_write=t.cache_write, reasoning=t.reasoning, started_ms=e.started_at_ms)


def run_cost(prices: Prices, events: Iterable[StepEvent]) -> RunCost:
    """Cost per model step, per agent activation and for the whole run."""
    steps: dict[str, StepCost] = {}
    agents: dict[str, Cost] = {}
    run = Cost()
    for e in events:
        if e.type != "model":
            continue
        usage = event_usage(e)
        cost = step_cost(prices, e.model, usage)
        steps[e.step_id] = cost
        agents.setdefault(e.agent_step_id, Cost()).add(usage, cost)
        run.add(usage, cost)
    return RunCost(steps=steps, agents=agents, run=run)
