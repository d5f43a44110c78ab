"""The prices in use: genai-prices' bundled data, with the table in the file named by
TRAJHUB_PRICES (read once per file version) on top. See docs/costs.md."""

from __future__ import annotations

import functools
import os
from dataclasses import asdict
from typing import Any

import orjson
from fastapi import HTTPException

from trajhub.evaluators.pricing import (
    GENAI_PRICES_DATA_DATE,
    OVERRIDE,
    Cost,
    Prices,
    PriceTable,
    PriceTableError,
    price_table,
    usage_cost,
)


class PriceFileError(Exception):
    """TRAJHUB_PRICES names a file that cannot be read as a price table."""


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int) -> PriceTable:
    with open(path, "rb") as f:
        return price_table(orjson.loads(f.read()), path)


def load_prices(path: str) -> Prices:
    """genai-prices, under the table at `path` when one is given (re-read when the file
    changes). A missing or malformed file is an error naming the file, never a silent
    fallback."""
    if not path:
        return Prices()
    try:
        return Prices(_load(path, os.stat(path).st_mtime_ns))
    except (OSError, orjson.JSONDecodeError, PriceTableError) as exc:
        raise PriceFileError(f"price table TRAJHUB_PRICES={path!r} is unusable: {exc}") from None


def prices_for(settings: Any) -> Prices:
    """For a request: a broken configured table is the server's problem, said as a 503."""
    try:
        return load_prices(settings.prices)
    except PriceFileError as exc:
        raise HTTPException(503, str(exc)) from None


def derived_prices() -> Prices:
    """For derivation, which prices each run's calls for monitoring's rollups: the table of
    TRAJHUB_PRICES as the process's environment names it; an unusable file prices with
    genai-prices alone (the API's reads say why, as a 503)."""
    try:
        return load_prices(os.environ.get("TRAJHUB_PRICES", ""))
    except PriceFileError:
        return Prices()


def cost_json(cost: Cost, prices: Prices) -> dict[str, Any]:
    """A Cost as the API's CostView (trajhub.records.trajectories)."""
    return {**asdict(cost), "price_sources": [prices.label(s) for s in cost.price_sources],
            "currency": prices.currency, "price_table": prices.description,
            "prices_as_of": _as_of(cost, prices)}


def _as_of(cost: Cost, prices: Prices) -> str:
    """The date of the prices used: the TRAJHUB_PRICES table's `as_of` when only its prices
    were used, else the date of genai-prices' data."""
    if cost.price_sources == [OVERRIDE] and prices.override is not None:
        return prices.override.as_of
    return GENAI_PRICES_DATA_DATE


@functools.lru_cache(maxsize=8192)
def _usage_cost(prices: Prices, model_usage: str) -> Cost:
    # a page of summaries prices every model call of every run listed, and the UI re-reads
    # pages as open runs grow: the same usage under the same prices is priced once (never
    # mutated: cost_json copies it)
    return usage_cost(prices, orjson.loads(model_usage))


def summary_cost(prices: Prices, model_usage: str | None) -> dict[str, Any]:
    """The cost of a listed trajectory, from the token usage per model call the store keeps
    (JSON text, the `model_usage` column)."""
    return cost_json(_usage_cost(prices, model_usage or "{}"), prices)
