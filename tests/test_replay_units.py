"""The pure parts of replay: canonical tool arguments, step events, alignment, retries, prices,
the run contract on captured spans, and the hybrid-replay client's matching."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests import fake_agent
from tests.normalize_support import load_file
from trajhub.evaluators.compare import align, compare, retries
from trajhub.evaluators.pricing import (
    Prices,
    PriceTableError,
    Usage,
    price_table,
    step_cost,
    usage_cost,
)
from trajhub.normalizers import derive, trajectory_to_dict
from trajhub.normalizers.contract import run_contract
from trajhub.normalizers.model import Span
from trajhub.normalizers.playback import (
    StepEvent,
    Tokens,
    model_usage,
    parse_arguments,
    step_events,
)
from trajhub.normalizers.trajectory import StepError
from trajhub.records.arguments import arguments_hash
from trajhub.records.replay import ToolResultView
from trajhub.service.client.replay import RecordedToolError, RecordedTools, UnrecordedToolCall
from trajhub.service.prices import PriceFileError, load_prices

REAL = Path(__file__).parent / "fixtures" / "real-clients"


def sha_json(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def event(seq: int, type_: str, name: str, args: Any = None, error: bool = False,
          agent: str = "a1", tokens: tuple[int, int] | None = None) -> StepEvent:
    return StepEvent(
        seq=seq, step_id=f"s{seq}", parent_id=agent, type=type_, name=name, agent="agent",
        agent_step_id=agent, agent_path=("agent",), started_at_ms=1000 + seq, duration_ms=1,
        input=json.dumps(args) if args is not None else "", output="",
        error=StepError(-1, "boom") if error else None,
        model="m" if type_ == "model" else None,
        tokens=Tokens(tokens[0], tokens[1], 0, 0) if tokens else None,
        tool_call_id=None, arguments_hash=arguments_hash(args) if type_ == "tool" else None,
        metadata={})


def test_canonical_arguments_ignore_key_order_spacing_and_integral_floats() -> None:
    assert arguments_hash({"b": 0, "a": 1}) == sha_json({"a": 1, "b": 0})
    assert arguments_hash({"a": 1.0, "b": 0.0}) == sha_json({"a": 1, "b": 0})
    assert arguments_hash({"a": 1.5}) == sha_json({"a": 1.5})
    assert parse_arguments('{ "city" : "Paris" }') == {"city": "Paris"}
    assert parse_arguments("{'city': 'Paris'}") == {"city": "Paris"}  # str(dict) recordings
    assert parse_arguments("Paris") == "Paris"
    assert arguments_hash({"q": "café"}) == sha_json({"q": "café"})


def test_alignment_changed_inserted_deleted_and_first_divergence() -> None:
    a = [event(0, "model", "llm"), event(1, "tool", "search", {"q": "x"}),
         event(2, "model", "llm")]
    b = [event(0, "model", "llm"), event(1, "tool", "search", {"q": "y"}),
         event(2, "tool", "fetch", {"id": 1}), event(3, "model", "llm")]
    distance, pairs = align(a, b)
    assert distance == 2
    assert [p.op for p in pairs] == ["same", "changed", "inserted", "same"]
    c = compare(a, 10, b, 12)
    assert c.first_divergence is not None and c.first_divergence.position == 1
    assert c.deltas["tool_calls"] == 1 and c.deltas["duration_ms"] == 2
    # a model step never "changes" into a tool step: that is a deletion and an insertion
    _, pairs = align([event(0, "model", "llm")], [event(0, "tool", "search", {})])
    assert [p.op for p in pairs] == ["deleted", "inserted"]
    assert align([], []) == (0, [])


def test_parallel_tool_calls_compare_in_either_order() -> None:
    a = [event(0, "model", "llm"), event(1, "tool", "get_weather", {"city": "Paris"}),
         event(2, "tool", "add", {"a": 2, "b": 3}), event(3, "model", "llm")]
    b = [event(0, "model", "llm"), event(1, "tool", "add", {"a": 2, "b": 3}),
         event(2, "tool", "get_weather", {"city": "Paris"}), event(3, "model", "llm")]
    c = compare(a, 0, b, 0)
    assert c.distance == 0 and c.first_divergence is None


def test_a_repeat_of_a_failed_call_is_a_retry() -> None:
    evs = [event(0, "tool", "fetch", {"id": 1}, error=True), event(1, "tool", "fetch", {"id": 1}),
           event(2, "tool", "fetch", {"id": 2}), event(3, "tool", "fetch", {"id": 2})]
    assert retries(evs) == 1  # the second fetch(2) repeats a call that succeeded


PRICES = {"as_of": "2025-01-01", "models": {
    "gpt-4o": {"input": 2.5, "output": 10.0, "cached_input": 1.25},
    "gpt-4o-mini": {"input": 0.15, "output": 0.6}}}


def test_price_lookup_and_step_cost() -> None:
    table = price_table(PRICES, "test")
    prices = Prices(table)
    assert table.price("gpt-4o-mini-2024-07-18") is not None
    assert table.price("gpt-4o-mini-2024-07-18")[0] == "gpt-4o-mini"  # type: ignore[index]
    assert table.price("openai/GPT-4o")[0] == "gpt-4o"  # type: ignore[index]
    assert table.price("fake-gpt-4o-mini") is None
    assert table.price(None) is None
    # 1000 input of which 400 cached, 100 output: 600 × 2.5 + 400 × 1.25 + 100 × 10 per 1M
    assert step_cost(prices, "gpt-4o", Usage(1000, 100, 400)).usd == pytest.approx(0.003)
    # no cached price: cached tokens cost the input price
    assert step_cost(prices, "gpt-4o-mini", Usage(1000, 0, 400)).usd == pytest.approx(0.00015)
    unknown = step_cost(prices, "my-model", Usage(1000, 100))
    assert unknown.usd is None and unknown.priced_as is None


def test_run_cost_names_unpriced_models_and_never_invents_a_price() -> None:
    prices = Prices(price_table(PRICES, "test"))
    cost = usage_cost(prices, {
        "gpt-4o-mini": {"input_tokens": 1000, "output_tokens": 1000, "cached_input_tokens": 0},
        "house-model": {"input_tokens": 5, "output_tokens": 5, "cached_input_tokens": 0},
        "": {"input_tokens": 1, "output_tokens": 1, "cached_input_tokens": 0}})
    assert cost.usd == pytest.approx(0.00075)
    assert cost.complete is False
    assert sorted(cost.unpriced_models) == ["(model not recorded)", "house-model"]
    assert cost.input_tokens == 1006
    only_unknown = usage_cost(prices, {"x": {"input_tokens": 1, "output_tokens": 1}})
    assert only_unknown.usd is None


@pytest.mark.parametrize("doc, problem", [
    ({}, "models"), ({"models": {"m": {"input": -1, "output": 1}}}, "models.m.input"),
    ({"models": {"m": {"input": 1, "output": "2"}}}, "models.m.output"),
    ({"models": {"m": 3}}, "models.m")])
def test_bad_price_tables_are_rejected_with_the_place(doc: Any, problem: str) -> None:
    with pytest.raises(PriceTableError, match=problem.replace(".", r"\.")):
        price_table(doc, "file.json")


def test_price_file_override_and_the_default(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(PRICES))
    loaded = load_prices(str(path)).override
    assert loaded is not None and loaded.as_of == "2025-01-01" and loaded.source == str(path)
    assert load_prices("").override is None  # genai-prices alone
    path.write_text("{not json")
    with pytest.raises(PriceFileError, match=r"prices\.json"):
        load_prices(str(path))
    with pytest.raises(PriceFileError, match=r"missing\.json"):
        load_prices(str(tmp_path / "missing.json"))


def _fixture(run: str) -> tuple[list[Span], dict[str, Any]]:
    spans = [s for f in sorted((REAL / run).glob("http_*.bin")) for s in load_file(f)]
    return spans, trajectory_to_dict(derive(spans).trajectory)


def test_contract_reads_versions_and_a_prompt_version() -> None:
    spans, doc = _fixture("cozeloop_python/react.prebuilt.stream")
    c = run_contract(spans, doc)
    # the captures ran with langchain-core 1.7.2 (pinned in pyproject's test extra)
    assert [v.value for v in c.framework_version.values] == ["langchain 1.7.2"]
    assert c.sdk.values[0].value.startswith("cozeloop-python")
    assert not c.system_prompt_version.known and "system_prompt_version" in c.unknown()
    model = next(s for s in spans if s.cozeloop and s.cozeloop.span_type == "model")
    versioned = [Span(**{**{f: getattr(s, f) for f in Span.__slots__},  # type: ignore[arg-type]
                         "attributes": {**s.attributes, "llm.prompt_template.version": "v7"}})
                 if s is model else s for s in spans]
    c = run_contract(versioned, doc)
    assert [v.value for v in c.system_prompt_version.values] == ["v7"]
    assert "llm.prompt_template.version" in c.system_prompt_version.values[0].source


def test_events_of_a_capture_follow_the_script() -> None:
    _, doc = _fixture("langsmith/react.prebuilt.stream")
    evs = step_events(doc)
    tools = [e for e in evs if e.type == "tool"]
    assert {e.tool_call_id for e in tools} == {"call_weather_1", "call_add_1", "call_div_1"}
    assert [e.tokens.input for e in evs if e.tokens] == [120, 180, 230]


def recorded() -> RecordedTools:
    def result(name: str, call_id: str, args: Any, output: str,
               error: dict[str, Any] | None = None) -> ToolResultView:
        return ToolResultView.model_validate({
            "tool_name": name, "call_id": call_id, "arguments": args,
            "arguments_hash": sha_json(args), "output": output, "error": error,
            "step_id": call_id, "agent": "agent", "seq": 0})

    return RecordedTools([
        result("search", "c1", {"q": "x"}, "first"),
        result("search", "c2", {"q": "x"}, "second"),
        result("divide", "c3", {"a": 1, "b": 0}, "", {"code": -1, "msg": "division by zero"}),
    ])


def test_recorded_tools_answer_in_order_prefer_the_call_id_and_report_misses() -> None:
    tools = recorded()
    assert tools.answer("search", {"q": "x"}) == "first"
    assert tools.answer("search", {"q": "x"}) == "second"
    assert tools.answer("search", {"q": "x"}) == "second"  # recordings used up: the last again
    assert recorded().answer("search", {"q": "x"}, call_id="c2") == "second"
    with pytest.raises(RecordedToolError, match="division by zero"):
        tools.answer("divide", {"a": 1.0, "b": 0.0})
    with pytest.raises(UnrecordedToolCall):
        tools.answer("search", {"q": "y"})
    assert [(u.tool_name, u.arguments) for u in tools.unanswered] == [("search", {"q": "y"})]
    assert tools.answered == 4
    assert tools.function("search")(q="x") == "second"


def test_recorded_tools_stand_in_for_langchain_tools() -> None:
    tools = recorded()
    wrapped = {t.name: t for t in tools.langchain_tools(fake_agent.TOOLS)}
    assert set(wrapped) == {"get_weather", "add", "divide"}
    assert wrapped["divide"].description == fake_agent.divide.description
    with pytest.raises(RecordedToolError):
        wrapped["divide"].invoke({"a": 1, "b": 0})
    with pytest.raises(UnrecordedToolCall):
        wrapped["add"].invoke({"a": 2, "b": 3})
    assert tools.unanswered[-1].arguments == {"a": 2, "b": 3}


def test_model_usage_sums_tokens_per_model() -> None:
    spans, _ = _fixture("openinference/react.prebuilt.stream")
    usage = model_usage(derive(spans).trajectory)
    # the react script (tests/fake_agent.py): 120 + 180 + 230 in (64 + 96 cache reads, 16
    # cache writes), 30 + 18 + 25 out (12 + 4 reasoning)
    (entry,) = usage.values()
    assert list(usage) == [fake_agent.MODEL_NAME]
    assert {k: v for k, v in entry.items() if k != "calls"} == {
        "steps": 3, "input_tokens": 530, "output_tokens": 73, "cached_input_tokens": 160,
        "cache_write_tokens": 16, "reasoning_tokens": 16}
    # each call: [input, output, cache read, cache write, reasoning, start ms]
    assert [c[:5] for c in entry["calls"]] == [
        [120, 30, 64, 16, 12], [180, 18, 96, 0, 4], [230, 25, 0, 0, 0]]
    assert all(c[5] > 0 for c in entry["calls"])


@pytest.mark.integration  # starts processes
def test_the_replay_client_imports_no_server_code() -> None:
    from tests.harness import python_output

    code = ("import sys, trajhub.service.client.replay; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'fastapi', 'starlette', 'asyncpg', 'grpc', 'uvicorn'}))")
    assert python_output(code).strip() == "[]"


def test_regression_items_without_a_run_are_missing_not_compared() -> None:
    from trajhub.evaluators.regression import ItemSide, Verdict, aggregate, item_report

    run = [event(0, "model", "llm", tokens=(10, 5)), event(1, "tool", "search", {"q": "x"})]
    longer = [*run, event(2, "model", "llm", tokens=(10, 5))]
    reports = [
        item_report("i1", ItemSide("t1", run, 100, 0.5, {"judge": Verdict(0.5, False)}),
                    ItemSide("t2", longer, 90, 0.75, {"judge": Verdict(1.0, True)})),
        item_report("i2", ItemSide("t3", run, 100, None), ItemSide(None, None,
                                                                 problem="no run of this item")),
    ]
    first, missing = reports
    assert first.deltas["path_length"] == 1 and first.deltas["tokens"] == 15
    assert first.deltas["duration_ms"] == -10 and first.deltas["cost_usd"] == 0.25
    assert first.first_divergence is not None and first.first_divergence.op == "inserted"
    assert first.quality["judge"]["score_delta"] == 0.5
    assert missing.deltas["path_length"] is None and missing.first_divergence is None
    assert missing.problems == ["candidate: no run of this item"]
    verdicts = {v.metric: v for v in aggregate(reports)}
    assert (verdicts["path_length"].verdict, verdicts["path_length"].worse,
            verdicts["path_length"].missing) == ("worse", 1, 1)
    assert verdicts["duration_ms"].verdict == "better"
    assert verdicts["judge.score"].verdict == "better"
    assert verdicts["judge.passed"].better == 1
    assert verdicts["cost_usd"].missing == 1
