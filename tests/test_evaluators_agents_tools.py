"""expected_agents_tools against seed 001 (its two test cases and missed/extra semantics) and
tool_call_accuracy against every example of seed 004 (Mastra's code scorer; docs/evaluators.md)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_evaluators_support import agent, model, tool, tools_run, trajectory, validate
from trajhub.evaluators import (
    ConfigError,
    Expectations,
    ToolCallAccuracyConfig,
    evaluate,
)
from trajhub.evaluators.expected_agents_tools import AgentsToolsReason, expected_agents_tools
from trajhub.evaluators.result import EvaluatorOutput
from trajhub.evaluators.tool_call_accuracy import ToolCallAccuracyReason, tool_call_accuracy

# seed 001 TEST_CASES
T1 = Expectations(agents=("simple_agent",), tools={"simple_agent": ("get_weather",)})
T2 = Expectations(agents=("simple_agent",), tools={"simple_agent": ("translate",)})


def reason_of(result: EvaluatorOutput) -> AgentsToolsReason:
    assert isinstance(result.reason, AgentsToolsReason)
    return result.reason


def weather_run() -> dict[str, Any]:
    # seed 001 simpleAgent answering "北京今天天气怎么样?": one get_weather call, then the answer
    doc = trajectory(
        agent(
            "simple_agent",
            model(),
            tool("get_weather", {"city": "北京"}),
            model("北京今天晴"),
            input="北京今天天气怎么样?",
        ),
        input="北京今天天气怎么样?",
    )
    validate(doc)
    return doc


def test_seed001_t1_weather_passes() -> None:
    result = expected_agents_tools(weather_run(), T1)
    assert result.passed
    assert result.score == 1.0
    assert reason_of(result).agent_match and reason_of(result).tool_match
    assert "✅ agents called correctly" in result.explain()


def test_seed001_t2_translate_passes() -> None:
    doc = trajectory(
        agent(
            "simple_agent",
            model(),
            tool("translate", {"text": "你好世界", "targetLang": "english"}),
        )
    )
    assert expected_agents_tools(doc, T2).passed


def test_seed001_wrong_tool_is_missed_and_extra() -> None:
    result = expected_agents_tools(weather_run(), T2)
    reason = reason_of(result)
    assert not result.passed
    assert reason.agent_match
    assert not reason.tool_match
    assert [str(t) for t in reason.missed_tools] == ["simple_agent.translate"]
    assert [str(t) for t in reason.extra_tools] == ["simple_agent.get_weather"]
    text = result.explain()
    assert "missed: simple_agent.translate" in text
    assert "extra: simple_agent.get_weather" in text


def test_seed001_missed_and_extra_agents() -> None:
    doc = trajectory(agent("other_agent", model(), tool("get_weather")))
    reason = reason_of(expected_agents_tools(doc, T1))
    assert reason.missed_agents == ("simple_agent",)
    assert reason.extra_agents == ("other_agent",)
    # the tools of an agent absent from expected.tools are all extra (expectedTools = [])
    assert [str(t) for t in reason.extra_tools] == ["other_agent.get_weather"]
    assert [str(t) for t in reason.missed_tools] == ["simple_agent.get_weather"]


def test_seed001_collector_deduplicates() -> None:
    # the seed's EventBus records each agent and each tool once ("去重")
    doc = trajectory(
        agent("simple_agent", model(), tool("get_weather"), model(), tool("get_weather")),
        agent("simple_agent", model()),
    )
    result = expected_agents_tools(doc, T1)
    assert result.passed
    assert reason_of(result).actual_agents == ("simple_agent",)


def test_seed001_via_registry_with_json_expectations() -> None:
    result = evaluate(
        "expected_agents_tools",
        weather_run(),
        {"agents": ["simple_agent"], "tools": {"simple_agent": ["get_weather"]}},
    )
    assert result.passed


# seed 004 examples


def accuracy(doc: dict[str, Any], **options: object) -> float:
    return tool_call_accuracy(doc, Expectations(), ToolCallAccuracyConfig.from_dict(options)).score


def test_seed004_correct_tool_selection() -> None:
    config = ToolCallAccuracyConfig(expected_tool="weather-tool")
    result = tool_call_accuracy(tools_run("weather-tool"), Expectations(), config)
    assert result.score == 1
    assert isinstance(result.reason, ToolCallAccuracyReason)
    assert result.reason.correct_tool_called is True


def test_seed004_strict_mode_fails_with_two_tools() -> None:
    doc = trajectory(agent("a", model(), tool("search-tool"), tool("weather-tool")))
    assert accuracy(doc, expected_tool="weather-tool", strict_mode=True) == 0


def test_strict_mode_reason_follows_mastra_when_expected_tool_is_one_of_several() -> None:
    # Mastra's preprocess step: strict -> correctToolCalled only for the one and only call.
    doc = trajectory(agent("a", model(), tool("search-tool"), tool("weather-tool")))
    strict = ToolCallAccuracyConfig(expected_tool="weather-tool", strict_mode=True)
    reason = tool_call_accuracy(doc, Expectations(), strict).reason
    assert isinstance(reason, ToolCallAccuracyReason)
    assert reason.correct_tool_called is False
    assert reason.actual_tools == ("search-tool", "weather-tool")
    lenient = ToolCallAccuracyConfig(expected_tool="weather-tool", strict_mode=False)
    lenient_reason = tool_call_accuracy(doc, Expectations(), lenient).reason
    assert isinstance(lenient_reason, ToolCallAccuracyReason)
    assert lenient_reason.correct_tool_called is True
    only = trajectory(agent("a", model(), tool("weather-tool")))
    only_reason = tool_call_accuracy(only, Expectations(), strict).reason
    assert isinstance(only_reason, ToolCallAccuracyReason)
    assert only_reason.correct_tool_called is True


def test_seed004_lenient_mode_ignores_other_tools() -> None:
    doc = trajectory(agent("a", model(), tool("search-tool"), tool("weather-tool")))
    assert accuracy(doc, expected_tool="weather-tool", strict_mode=False) == 1


def test_seed004_strict_order_correct() -> None:
    doc = tools_run("auth-tool", "fetch-tool")
    options = {"expected_tool": "auth-tool", "expected_tool_order": ["auth-tool", "fetch-tool"]}
    assert accuracy(doc, strict_mode=True, **options) == 1


def test_seed004_strict_order_rejects_extra_tool() -> None:
    doc = tools_run("auth-tool", "log-tool", "fetch-tool")
    assert accuracy(doc, expected_tool_order=["auth-tool", "fetch-tool"], strict_mode=True) == 0


def test_seed004_flexible_order_allows_extra_tool() -> None:
    doc = tools_run("auth-tool", "log-tool", "fetch-tool")
    assert accuracy(doc, expected_tool_order=["auth-tool", "fetch-tool"], strict_mode=False) == 1


def test_seed004_flexible_order_rejects_wrong_order() -> None:
    doc = tools_run("fetch-tool", "auth-tool")
    assert accuracy(doc, expected_tool_order=["auth-tool", "fetch-tool"]) == 0


def test_seed004_wrong_tool_scores_zero() -> None:
    assert accuracy(tools_run("search-tool"), expected_tool="weather-tool") == 0


def test_seed004_no_tool_calls_scores_zero() -> None:
    doc = trajectory(agent("a", model("I can answer that directly")))
    assert accuracy(doc, expected_tool="weather-tool") == 0
    assert accuracy(doc, expected_tool_order=["auth-tool"]) == 0


def test_order_from_the_item_overrides_config() -> None:
    item = Expectations(tool_order=("auth-tool", "fetch-tool"))
    config = ToolCallAccuracyConfig(expected_tool="weather-tool")
    assert tool_call_accuracy(tools_run("auth-tool", "fetch-tool"), item, config).score == 1


def test_config_needs_tool_or_order_and_rejects_unknown_options() -> None:
    with pytest.raises(ValueError, match="expected_tool or"):
        tool_call_accuracy(tools_run("x"), Expectations(), ToolCallAccuracyConfig())
    with pytest.raises(ConfigError, match="'strictMode'"):
        ToolCallAccuracyConfig.from_dict({"strictMode": True})
    with pytest.raises(ConfigError, match="strict_mode"):
        ToolCallAccuracyConfig.from_dict({"expected_tool": "x", "strict_mode": "yes"})
    with pytest.raises(ConfigError, match="unknown evaluator"):
        evaluate("nope", tools_run("x"), None)


def test_flexible_order_is_an_ordered_subsequence_not_mastras_first_occurrence() -> None:
    # Mastra looks up each expected tool's first occurrence (indexOf): [b, a, b] fails [a, b]
    # there, and an expected order that repeats a tool never passes. The documented intent is
    # an ordered subsequence, which both of these are (README, deliberate differences).
    assert accuracy(tools_run("b", "a", "b"), expected_tool_order=["a", "b"]) == 1
    assert accuracy(tools_run("a", "b", "a"), expected_tool_order=["a", "a"]) == 1
    assert accuracy(tools_run("b", "a"), expected_tool_order=["a", "b"]) == 0
