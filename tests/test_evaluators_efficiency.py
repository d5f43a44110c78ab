"""efficiency budgets, and the trajectory view totals they read (on the product spec's example)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.test_evaluators_support import (
    SPEC_DIR,
    agent,
    model,
    spec_example,
    tool,
    trajectory,
    validate,
)
from trajhub.evaluators import ConfigError, EfficiencyConfig, evaluate, parse_trajectory
from trajhub.evaluators.efficiency import efficiency
from trajhub.evaluators.result import EvaluatorOutput


def test_view_of_the_spec_example() -> None:
    doc = spec_example()  # agent_steps nested inside root_step, as the example has them
    view = parse_trajectory(doc)
    assert view.agent_names() == ("TravelPlannerAgent",)
    assert [c.name for c in view.tool_calls] == ["weather_tool", "search_tool"]
    assert view.tool_calls[0].arguments == {"location": "Shanghai", "date": "this_weekend"}
    assert view.tool_calls[1].arguments == {"query": "上海博物馆 预约规则"}
    totals = view.totals
    assert totals.steps == 5
    assert totals.model_calls == 3
    # summed from the model steps (100+200+350, 50+60+150); the root's 850/420 are illustrative
    assert (totals.input_tokens, totals.output_tokens) == (650, 260)
    assert totals.duration_ms == 4500
    assert totals.failed_steps == 0


def test_view_reads_a_real_coze_loop_trajectory() -> None:
    path = (
        SPEC_DIR.parent / "coze-loop-examples" / "langgraph_python_react.expected_trajectory.json"
    )
    (doc,) = json.loads(path.read_text("utf-8")).values()
    view = parse_trajectory(doc)
    assert [c.name for c in view.tool_calls] == ["get_weather"]


def test_view_tolerates_missing_fields() -> None:
    view = parse_trajectory({"agent_steps": [{"steps": [{"type": "tool"}, None, 3]}, "x"]})
    assert view.totals.tool_calls == 1
    assert view.totals.duration_ms is None
    assert parse_trajectory({}).totals.steps == 0


def run() -> dict[str, Any]:
    doc = trajectory(
        agent(
            "assistant",
            model(input_tokens=100, output_tokens=20),
            tool("search", {"q": "a"}),
            tool("search", {"q": "a"}),
            tool("search", {"q": "b"}),
            tool("search", {"q": "a"}, error=(-1, "timeout")),
            model(input_tokens=200, output_tokens=30),
        ),
        duration=5000,
    )
    validate(doc)
    return doc


def judged(**budgets: Any) -> EvaluatorOutput:
    """`run()` judged against these budgets."""
    return efficiency(run(), None, EfficiencyConfig(**budgets))


def test_all_budgets_met() -> None:
    result = judged(max_steps=6, max_tokens=350, max_duration_ms=5000, max_repeated_calls=2,
                    max_tool_error_rate=0.25)
    assert result.passed
    assert result.score == 1.0


def test_score_is_fraction_of_budgets_met() -> None:
    # 6 steps > 5; 350 tokens > 300; 5000 ms <= 6000; 2 repeats > 1; error rate 1/4 <= 0.5
    result = judged(max_steps=5, max_tokens=300, max_duration_ms=6000, max_repeated_calls=1,
                    max_tool_error_rate=0.5)
    assert not result.passed
    assert result.score == pytest.approx(2 / 5)
    text = result.explain()
    assert "❌ steps: 6 (limit 5)" in text
    assert "❌ tokens: 350 (limit 300)" in text
    assert "✅ duration_ms: 5000 (limit 6000)" in text
    assert "❌ repeated_calls: 2 (limit 1)" in text
    assert "✅ tool_error_rate: 0.25 (limit 0.5)" in text


def test_repeated_calls_scope() -> None:
    # search(a), search(a), search(b), search(a): 2 repeats anywhere, 1 back-to-back
    assert judged(max_repeated_calls=1, repeated_calls_scope="consecutive").passed
    assert not judged(max_repeated_calls=1).passed


def test_unmeasurable_budget_is_not_met() -> None:
    doc = trajectory(agent("a", model()))
    del doc["root_step"]["basic_info"]
    del doc["agent_steps"][0]["steps"][0]["basic_info"]
    result = efficiency(doc, None, EfficiencyConfig(max_duration_ms=10))
    assert not result.passed
    assert "not recorded" in result.explain()


def test_config_validation() -> None:
    with pytest.raises(ConfigError, match="at least one budget"):
        EfficiencyConfig()
    with pytest.raises(ConfigError, match="'max_stepz'"):
        evaluate("efficiency", run(), None, {"max_stepz": 3})
    with pytest.raises(ConfigError, match="'max_steps'"):
        EfficiencyConfig(max_steps=-1)
    with pytest.raises(ConfigError, match="'max_tool_error_rate'"):
        EfficiencyConfig(max_tool_error_rate=1.5)
    with pytest.raises(ConfigError, match="'max_tokens'"):
        EfficiencyConfig(max_tokens=True)
