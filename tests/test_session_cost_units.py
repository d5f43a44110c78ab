"""A session's cost, priced from its rows (service/api/sessions.py: per model the billable
tokens summed, or the calls of a model priced by size or date), is what pricing every call of
its turns gives: for a model priced at one rate per token, one with date- or size-dependent
prices, one without a price and a call without a model; with cached and reasoning tokens
counted inside or outside the input and output, and a turn stored before calls were kept."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from trajhub.evaluators.pricing import Usage, billable, priced_by_sum, usage_cost
from trajhub.service.api.sessions import _session_cost
from trajhub.service.prices import cost_json, load_prices

TURNS: list[dict[str, Any]] = [
    {"gpt-4o": {"calls": [[1200, 30, 200, 0, 0, 1764000000000],
                          [50, 400, 0, 0, 500, 1764000001000]]},
     "o3": {"calls": [[3000, 900, 0, 0, 600, 1700000000000]]}},
    {"o3": {"calls": [[10, 20, 0, 0, 0, 1764000002000],
                      [200000, 5, 100, 100, 0, 1764000003000]]},
     "gemini-1.5-pro": {"calls": [[150000, 10, 0, 0, 0, 1764000004000],
                                  [100, 10, 0, 0, 0, 1764000005000]]},
     "no-such-model": {"calls": [[7, 3, 0, 0, 0, 0]]}},
    {"": {"calls": [[5, 5, 0, 0, 0, 0]]},
     # stored before calls were kept: one call of its totals
     "gpt-4o": {"input_tokens": 100, "output_tokens": 10, "cached_input_tokens": 150}},
]


def _calls(usage: dict[str, Any]) -> list[list[Any]]:
    got = usage.get("calls")
    if isinstance(got, list):
        return got
    return [[usage.get(k, 0) for k in ("input_tokens", "output_tokens", "cached_input_tokens",
                                       "cache_write_tokens", "reasoning_tokens")] + [0]]


def test_a_session_cost_from_its_rows_is_the_cost_of_every_call() -> None:
    prices = load_prices(None)
    # every call of every turn, per model (as the summary priced them before)
    every: dict[str, list[list[Any]]] = defaultdict(list)
    for turn in TURNS:
        for model, usage in turn.items():
            every[model] += _calls(usage)
    want = cost_json(usage_cost(prices, {m: {"calls": c} for m, c in every.items()}), prices)
    # the rows: per model the calls' count and billable tokens summed, and the calls
    models = {}
    for model, calls in every.items():
        b = [billable(Usage(*c)) for c in calls]
        models[model] = [len(calls), *(sum(getattr(x, f) for x in b) for f in (
            "input", "output", "cache_read", "cache_write", "reasoning"))]
    stored_calls = {("s", m): c for m, c in every.items() if not priced_by_sum(prices, m or None)}
    assert ("s", "o3") in stored_calls and ("s", "gpt-4o") not in stored_calls
    got = _session_cost(prices, stored_calls, {"session": "s", "models": models})
    assert got == want
    assert got["usd"] and got["unpriced_models"]
