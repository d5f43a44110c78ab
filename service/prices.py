"""The model price table in use: the default shipped with trajhub (evaluators/data/prices.json)
or the file named by TRAJHUB_PRICES, read once per file version."""

from __future__ import annotations

import functools
import os
from dataclasses import asdict
from importlib import resources
from typing import Any

import orjson
from fastapi import HTTPException

from trajhub.evaluators.pricing import Cost, PriceTable, PriceTableError, price_table, usage_cost


class PriceFileError(Exception):
    """TRAJHUB_PRICES names a file that cannot be read as a price table."""


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int) -> PriceTable:
    with open(path, "rb") as f:
        return price_table(orjson.loads(f.read()), path)


@functools.lru_cache(maxsize=1)
def default_table() -> PriceTable:
    text = resources.files("trajhub.evaluators").joinpath("data/prices.json").read_bytes()
    return price_table(orjson.loads(text), "default")


def load_table(path: str) -> PriceTable:
    """The table at `path` (re-read when the file changes), or the default when `path` is
    empty. A missing or malformed file is an error naming the file, never a silent default."""
    if not path:
        return default_table()
    try:
        return _load(path, os.stat(path).st_mtime_ns)
    except (OSError, orjson.JSONDecodeError, PriceTableError) as exc:
        raise PriceFileError(f"price table TRAJHUB_PRICES={path!r} is unusable: {exc}") from None


def table_for(settings: Any) -> PriceTable:
    """For a request: a broken configured table is the server's problem, said as a 503."""
    try:
        return load_table(settings.prices)
    except PriceFileError as exc:
        raise HTTPException(503, str(exc)) from None


def cost_json(cost: Cost, table: PriceTable) -> dict[str, Any]:
    return {**asdict(cost), "currency": table.currency, "price_table": table.source,
            "prices_as_of": table.as_of}


def summary_cost(table: PriceTable, model_usage: str | None) -> dict[str, Any]:
    """The cost of a listed trajectory, from the token usage per model the store keeps (JSON
    text, the `model_usage` column)."""
    return cost_json(usage_cost(table, orjson.loads(model_usage or "{}")), table)
