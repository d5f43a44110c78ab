"""Costs from genai-prices (docs/costs.md): every step's cache reads, cache writes and reasoning
counted exactly once, for the usage shapes of OpenAI, Anthropic and Google as the conventions
record them, checked against figures worked out here from the providers' published list prices
(per 1M tokens, written below), never from trajhub's output."""

from __future__ import annotations

import importlib.metadata
import json
import socket
import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.normalize_spans import span
from trajhub.evaluators.pricing import (
    GENAI_PRICES_DATA_DATE,
    GENAI_PRICES_VERSION,
    Prices,
    Usage,
    billable,
    genai_prices_label,
    price_table,
    run_cost,
    step_cost,
    usage_cost,
)
from trajhub.normalizers import derive
from trajhub.normalizers.model import AttributeValue
from trajhub.normalizers.playback import model_usage, step_events
from trajhub.normalizers.trajectory import trajectory_to_dict
from trajhub.service.prices import cost_json, load_prices

M = 1_000_000

# openai.com/api/pricing (standard tier), USD per 1M tokens
GPT_4O = {"input": 2.50, "cached": 1.25, "output": 10.00}
O4_MINI = {"input": 1.10, "cached": 0.275, "output": 4.40}  # reasoning is billed as output
# anthropic.com/pricing: base input, 5-minute cache write (1.25 × input), cache hit (0.1 ×)
SONNET_35 = {"input": 3.00, "write": 3.75, "read": 0.30, "output": 15.00}
# ai.google.dev/gemini-api/docs/pricing, Gemini 2.5 Pro: prompts up to 200k tokens, and over
# (the whole call at the higher price); output includes thinking tokens
GEMINI_25_PRO = {"input": 1.25, "cached": 0.125, "output": 10.00}
GEMINI_25_PRO_LONG = {"input": 2.50, "cached": 0.25, "output": 15.00}

GENAI = Prices()


def _events(model_attrs: dict[str, AttributeValue], convention: str) -> list[Any]:
    """One agent run with one model call, as `convention` records it."""
    if convention == "openinference":
        root = span("r", "", "agent", 0, 100, {"openinference.span.kind": "AGENT"})
        model_attrs = {"openinference.span.kind": "LLM", **model_attrs}
    elif convention == "langsmith":
        root = span("r", "", "LangGraph", 0, 100, {"langsmith.span.kind": "chain"})
        model_attrs = {"langsmith.span.kind": "llm", **model_attrs}
    else:
        root = span("r", "", "invoke_agent a", 0, 100, {"gen_ai.operation.name": "invoke_agent"})
        model_attrs = {"gen_ai.operation.name": "chat", **model_attrs}
    model = span("m", "r", "chat", 1_750_000_000_000, 1_750_000_000_010, model_attrs)
    d = derive([root, model])
    return step_events(trajectory_to_dict(d.trajectory))


def _genai_events(model: str, input: int, cache_read: int, output: int, reasoning: int
                  ) -> list[Any]:
    """`_events` of a GenAI model call with these token counts (input includes cache reads)."""
    return _events({"gen_ai.request.model": model, "gen_ai.usage.input_tokens": input,
                    "gen_ai.usage.cache_read.input_tokens": cache_read,
                    "gen_ai.usage.output_tokens": output,
                    "gen_ai.usage.reasoning.output_tokens": reasoning}, "genai")


def _listed(prices: dict[str, float], uncached: int, cached: int, output: int) -> float:
    """The USD a list of prices per 1M tokens gives for uncached input, cached input, output."""
    return (uncached * prices["input"] + cached * prices["cached"] + output * prices["output"]) / M


def _usd(events: list[Any], prices: Prices = GENAI) -> float | None:
    (model_event,) = [e for e in events if e.type == "model"]
    return run_cost(prices, events).steps[model_event.step_id].usd


# ---------------------------------------------------------------------------------- OpenAI


def test_openai_cached_input_is_part_of_the_input_and_billed_once_at_the_cached_price() -> None:
    # OpenAI's prompt_tokens include prompt_tokens_details.cached_tokens; OpenInference records
    # both as they are. A dated version (gpt-4o-2024-08-06) is priced as gpt-4o.
    events = _events({"llm.model_name": "gpt-4o-2024-08-06", "llm.token_count.prompt": 10_000,
                      "llm.token_count.prompt_details.cache_read": 4_000,
                      "llm.token_count.completion": 500}, "openinference")
    assert _usd(events) == pytest.approx(_listed(GPT_4O, 6_000, 4_000, 500))  # 0.0225
    cost = run_cost(GENAI, events).run
    assert (cost.input_tokens, cost.cached_input_tokens, cost.output_tokens) == (
        10_000, 4_000, 500)


def test_openai_reasoning_tokens_are_output_tokens_counted_once() -> None:
    # completion_tokens include completion_tokens_details.reasoning_tokens
    events = _genai_events("o4-mini-2025-04-16", 10_000, 4_000, 2_000, 1_500)
    assert _usd(events) == pytest.approx(_listed(O4_MINI, 6_000, 4_000, 2_000))  # 0.0165
    cost = run_cost(GENAI, events).run
    assert (cost.output_tokens, cost.reasoning_tokens) == (2_000, 1_500)


@pytest.mark.parametrize("model", ["openai/gpt-4o", "azure/gpt-4o", "OpenAI/GPT-4o-2024-08-06"])
def test_a_provider_prefix_finds_the_model(model: str) -> None:
    usd = step_cost(GENAI, model, Usage(input=1_000, output=100, cache_read=200)).usd
    assert usd == pytest.approx((800 * GPT_4O["input"] + 200 * GPT_4O["cached"]
                                 + 100 * GPT_4O["output"]) / M)


# ------------------------------------------------------------------------------- Anthropic


SONNET_EXPECTED = (1_000 * SONNET_35["input"] + 8_000 * SONNET_35["read"]
                   + 3_000 * SONNET_35["write"] + 500 * SONNET_35["output"]) / M  # 0.02415


def test_anthropic_cache_writes_cost_the_write_price_and_reads_the_read_price() -> None:
    # LangChain's usage_metadata (which LangSmith exports) counts every input token in
    # input_tokens, with input_token_details.cache_read / cache_creation as parts of it
    events = _events({"gen_ai.request.model": "claude-3-5-sonnet-20241022",
                      "gen_ai.usage.input_tokens": 12_000, "gen_ai.usage.output_tokens": 500,
                      "langsmith.metadata.usage_metadata": json.dumps({
                          "input_token_details": {"cache_read": 8_000, "cache_creation": 3_000}})},
                     "langsmith")
    assert _usd(events) == pytest.approx(SONNET_EXPECTED)
    cost = run_cost(GENAI, events).run
    assert (cost.input_tokens, cost.cached_input_tokens, cost.cache_write_tokens) == (
        12_000, 8_000, 3_000)


def test_anthropic_raw_usage_that_leaves_the_cache_out_of_the_input_is_added_not_lost() -> None:
    # Anthropic's API: usage.input_tokens is only the uncached part; cache_read_input_tokens
    # and cache_creation_input_tokens come on top. Copied as is, the cache counts exceed the
    # input count, so the input cannot include them.
    events = _events({"gen_ai.request.model": "anthropic/claude-3-5-sonnet-20241022",
                      "gen_ai.usage.input_tokens": 1_000, "gen_ai.usage.output_tokens": 500,
                      "gen_ai.usage.cache_read.input_tokens": 8_000,
                      "gen_ai.usage.cache_creation.input_tokens": 3_000}, "genai")
    assert _usd(events) == pytest.approx(SONNET_EXPECTED)
    assert run_cost(GENAI, events).run.input_tokens == 12_000


def test_a_bedrock_model_id_is_priced_as_the_same_claude_on_aws() -> None:
    # aws.amazon.com/bedrock/pricing: Claude 3.5 Sonnet v2 on demand, the same list prices
    usd = step_cost(GENAI, "anthropic.claude-3-5-sonnet-20241022-v2:0",
                    Usage(input=12_000, output=500, cache_read=8_000, cache_write=3_000)).usd
    assert usd == pytest.approx(SONNET_EXPECTED)


# ---------------------------------------------------------------------------------- Google


def test_gemini_thinking_tokens_are_output_and_implicit_cache_hits_are_input() -> None:
    # Gemini's promptTokenCount includes cachedContentTokenCount; LangChain's and the OTel
    # instrumentations' output count includes thoughtsTokenCount
    events = _genai_events("models/gemini-2.5-pro", 50_000, 10_000, 3_000, 2_000)
    assert _usd(events) == pytest.approx(_listed(GEMINI_25_PRO, 40_000, 10_000, 3_000))  # 0.08125


def test_gemini_raw_usage_that_leaves_thoughts_out_of_the_output_is_added_not_lost() -> None:
    # Gemini's API: candidatesTokenCount leaves thoughtsTokenCount out
    usd = step_cost(GENAI, "gemini-2.5-pro",
                    Usage(input=50_000, output=1_000, cache_read=10_000, reasoning=2_000)).usd
    assert usd == pytest.approx((40_000 * GEMINI_25_PRO["input"]
                                 + 10_000 * GEMINI_25_PRO["cached"]
                                 + 3_000 * GEMINI_25_PRO["output"]) / M)


def test_a_long_context_call_is_priced_at_the_long_context_tier() -> None:
    # over 200k prompt tokens, the whole call is at the higher price
    long = (200_000 * GEMINI_25_PRO_LONG["input"] + 100_000 * GEMINI_25_PRO_LONG["cached"]
            + 4_000 * GEMINI_25_PRO_LONG["output"]) / M  # 0.585
    usd = step_cost(GENAI, "google/gemini-2.5-pro",
                    Usage(input=300_000, output=4_000, cache_read=100_000)).usd
    assert usd == pytest.approx(long)


def test_the_tier_is_decided_per_call_also_in_a_summary() -> None:
    # two calls of 150k prompt tokens each stay at the base price: summed, they would not
    calls = [[150_000, 1_000, 0, 0, 0, 1_750_000_000_000]] * 2
    usage = {"gemini-2.5-pro": {"steps": 2, "input_tokens": 300_000, "output_tokens": 2_000,
                                "calls": calls}}
    expected = 2 * (150_000 * GEMINI_25_PRO["input"] + 1_000 * GEMINI_25_PRO["output"]) / M
    assert usage_cost(GENAI, usage).usd == pytest.approx(expected)  # 0.395


def test_many_calls_at_one_rate_in_a_summary_cost_what_each_costs() -> None:
    # a session's turns: thousands of calls of a model priced per token (gpt-4o), each with its
    # own prompt, cache hit and time; the summary prices them summed (usage_cost), which must
    # come to the calls' costs one by one
    calls = [[1_000 + i, 20, i % 500, 0, 0, 1_750_000_000_000 + 60_000 * i] for i in range(3_000)]
    usage = {"gpt-4o": {"steps": len(calls), "calls": calls}}
    expected = sum((1_000 + i - i % 500) * GPT_4O["input"] + (i % 500) * GPT_4O["cached"]
                   + 20 * GPT_4O["output"] for i in range(3_000)) / M
    cost = usage_cost(GENAI, usage)
    assert cost.usd == pytest.approx(expected, rel=1e-9)  # 18.41 USD
    assert (cost.input_tokens, cost.cached_input_tokens, cost.output_tokens) == (
        sum(1_000 + i for i in range(3_000)), sum(i % 500 for i in range(3_000)), 60_000)


def test_summary_and_detail_give_the_same_cost() -> None:
    root = span("r", "", "invoke_agent a", 0, 100, {"gen_ai.operation.name": "invoke_agent"})
    calls = [span(f"m{i}", "r", "chat", 10 + i, 20 + i, {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": model,
        "gen_ai.usage.input_tokens": inp, "gen_ai.usage.output_tokens": out,
        "gen_ai.usage.cache_read.input_tokens": read,
        "gen_ai.usage.cache_creation.input_tokens": write})
        for i, (model, inp, out, read, write) in enumerate([
            ("gpt-4o", 2_000, 100, 1_000, 0), ("claude-3-5-sonnet-20241022", 5_000, 50, 0, 4_000),
            ("gemini-2.5-pro", 250_000, 10, 0, 0), ("house-model", 10, 10, 0, 0)])]
    trajectory = derive([root, *calls]).trajectory
    detail = run_cost(GENAI, step_events(trajectory_to_dict(trajectory))).run
    summary = usage_cost(GENAI, json.loads(json.dumps(model_usage(trajectory))))
    expected = ((1_000 * GPT_4O["input"] + 1_000 * GPT_4O["cached"] + 100 * GPT_4O["output"])
                + (1_000 * SONNET_35["input"] + 4_000 * SONNET_35["write"]
                   + 50 * SONNET_35["output"])
                + (250_000 * GEMINI_25_PRO_LONG["input"] + 10 * GEMINI_25_PRO_LONG["output"])
                ) / M
    assert detail.usd == pytest.approx(expected) and summary.usd == pytest.approx(expected)
    assert detail.unpriced_models == summary.unpriced_models == ["house-model"]
    assert not detail.complete and not summary.complete


# ---------------------------------------------------------------------- sources and unknowns


def test_an_unknown_model_is_unknown_never_zero() -> None:
    for model in ("house-model", "", None, "ChatOpenAI"):
        step = step_cost(GENAI, model, Usage(input=1_000, output=100))
        assert step.usd is None and step.priced_as is None and step.source is None
    cost = usage_cost(GENAI, {"house-model": {"input_tokens": 5, "output_tokens": 5}})
    assert cost.usd is None and cost.unpriced_models == ["house-model"]
    view = cost_json(cost, GENAI)
    assert view["usd"] is None and view["price_sources"] == []


def test_trajhub_prices_entries_win_and_say_so(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"as_of": "2026-02-01", "models": {
        "gpt-4o": {"input": 1.0, "output": 2.0, "cached_input": 0.5},
        "house-model": {"input": 4.0, "output": 8.0, "cache_write": 5.0}}}))
    prices = load_prices(str(path))
    mine = step_cost(prices, "gpt-4o-2024-08-06", Usage(1_000, 100, cache_read=400))
    assert mine.usd == pytest.approx((600 * 1.0 + 400 * 0.5 + 100 * 2.0) / M)
    assert (mine.priced_as, mine.source) == ("gpt-4o", "TRAJHUB_PRICES")
    # a cache write in the file's own price; no cache-read price = the input price
    house = step_cost(prices, "house-model", Usage(1_000, 10, cache_read=100, cache_write=300))
    assert house.usd == pytest.approx((600 * 4.0 + 100 * 4.0 + 300 * 5.0 + 10 * 8.0) / M)
    # a model the file does not list still has genai-prices' price
    claude = step_cost(prices, "claude-3-5-sonnet-20241022", Usage(1_000, 0))
    assert claude.usd == pytest.approx(1_000 * SONNET_35["input"] / M)
    assert claude.source == "genai-prices"
    cost = usage_cost(prices, {"gpt-4o": {"input_tokens": 1_000, "output_tokens": 0},
                               "claude-3-5-sonnet": {"input_tokens": 1_000, "output_tokens": 0}})
    view = cost_json(cost, prices)
    assert view["price_sources"] == [
        f"genai-prices {GENAI_PRICES_VERSION}, data of {GENAI_PRICES_DATA_DATE}",
        f"TRAJHUB_PRICES {path}, as of 2026-02-01"]
    assert view["price_table"] == (f"TRAJHUB_PRICES {path}, as of 2026-02-01 over genai-prices "
                                   f"{GENAI_PRICES_VERSION}, data of {GENAI_PRICES_DATA_DATE}")
    only_mine = cost_json(usage_cost(prices, {"gpt-4o": {"input_tokens": 1, "output_tokens": 1}}),
                          prices)
    assert only_mine["prices_as_of"] == "2026-02-01"


def test_the_installed_genai_prices_is_the_pinned_one() -> None:
    # GENAI_PRICES_DATA_DATE is the publication day of this version: an upgrade must move both
    assert importlib.metadata.version("genai-prices") == GENAI_PRICES_VERSION
    pins = Path(__file__).parents[1].joinpath("pyproject.toml").read_text()
    assert f'"genai-prices=={GENAI_PRICES_VERSION}"' in pins
    assert genai_prices_label() == (f"genai-prices {GENAI_PRICES_VERSION}, "
                                    f"data of {GENAI_PRICES_DATA_DATE}")


def test_pricing_never_fetches_and_ignores_a_fetched_snapshot(monkeypatch: Any) -> None:
    import genai_prices.data_snapshot as snapshots
    from genai_prices.data_snapshot import DataSnapshot

    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("pricing opened a network connection")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    # what genai-prices' UpdatePrices installs after a fetch (here: a snapshot with no models)
    monkeypatch.setattr(snapshots, "_custom_snapshot", DataSnapshot([], from_auto_update=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        usd = step_cost(GENAI, "gpt-4o-mini", Usage(1_000, 100)).usd
    assert usd == pytest.approx((1_000 * 0.15 + 100 * 0.60) / M)


def test_billable_counts_each_token_once() -> None:
    inclusive = billable(Usage(input=100, output=50, cache_read=30, cache_write=20, reasoning=10))
    assert (inclusive.input, inclusive.output) == (100, 50)
    exclusive = billable(Usage(input=10, output=5, cache_read=30, cache_write=20, reasoning=10))
    assert (exclusive.input, exclusive.output) == (60, 15)
    assert billable(Usage(input=-1, output=-1)).input == 0


def test_a_price_table_file_keeps_its_format() -> None:
    table = price_table({"as_of": "2026-01-01", "currency": "USD", "models": {
        "m": {"input": 1, "output": 2, "cached_input": 0.5, "cache_write": 1.25}}}, "f.json")
    assert table.models["m"].cache_write == 1.25 and table.as_of == "2026-01-01"


def test_every_model_costs_what_genai_prices_itself_computes() -> None:
    """step_cost reads an untiered price set once and prices calls from it: for every model of
    genai-prices' data, on one of two dates, its price equals genai-prices' own calculation."""
    import random
    from datetime import UTC, datetime

    import genai_prices
    from genai_prices import data as genai_data

    models = {(p.id, m.id): (p, m) for p in genai_data.providers for m in p.models}
    rng = random.Random(7)
    compared = 0
    dates = (datetime(2024, 6, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC))
    for n, (_, model_id) in enumerate(sorted(models)):
        for when in dates[n % 2:n % 2 + 1]:
            inp = rng.randint(0, 300_000)
            read = rng.randint(0, inp)
            write = rng.randint(0, inp - read)
            out = rng.randint(0, 40_000)
            reasoning = rng.randint(0, out)
            step = step_cost(Prices(), model_id, Usage(
                input=inp, output=out, cache_read=read, cache_write=write, reasoning=reasoning,
                started_ms=int(when.timestamp() * 1000)))
            if step.priced_as is None:
                continue
            provider, info = models[tuple(step.priced_as.split(":", 1))]  # type: ignore[index]
            own = info.calc_price(genai_prices.Usage(
                input_tokens=inp, cache_read_tokens=read, cache_write_tokens=write,
                output_tokens=out, output_reasoning_tokens=reasoning),
                provider, genai_request_timestamp=when).total_price
            assert step.usd == round(float(own), 10), (step.priced_as, when)
            compared += 1
    assert compared > 1000
