"""trajectory_judge and tool_choice_judge, the pure halves: what the prompt carries, and that
only the exact verdict asked for is accepted (anything else is an error, never a pass)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.test_evaluators_support import agent, model, tool, trajectory
from trajhub.evaluators import (
    JUDGES,
    ConfigError,
    Expectations,
    ExpectedStep,
    JudgeContext,
    JudgeResponseError,
)
from trajhub.evaluators.tool_choice_judge import ToolChoiceReason
from trajhub.evaluators.trajectory_judge import TrajectoryJudgeReason


def run() -> dict[str, Any]:
    return trajectory(
        agent(
            "assistant",
            model("checking"),
            tool("get_weather", {"city": "Paris"}, output="Sunny, 22C"),
            tool("add", {"a": 2, "b": 3}, output="5"),
            model(),
            tool("divide", {"a": 1, "b": 0}, output="", error=(-1, "ZeroDivisionError")),
            model("It is sunny; 2+3=5; 1/0 is undefined."),
        ),
        input="Weather in Paris, 2+3 and 1/0?",
        output="It is sunny; 2+3=5; 1/0 is undefined.",
    )


def answer(content: Any, model_name: str = "judge-1") -> dict[str, Any]:
    text = content if isinstance(content, str) else json.dumps(content)
    return {"model": model_name, "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}


def request(name: str, doc: dict[str, Any], context: JudgeContext,
            expectations: Expectations | None = None, **options: Any) -> dict[str, Any]:
    spec = JUDGES[name]
    config = spec.config_from_dict(options)
    return spec.build_request(doc, context, expectations or Expectations(), config, "judge-1")


def parse(name: str, body: dict[str, Any], doc: dict[str, Any],
          context: JudgeContext | None = None, expectations: Expectations | None = None,
          **options: Any) -> Any:
    spec = JUDGES[name]
    return spec.parse_response(body, doc, context or JudgeContext(),
                               expectations or Expectations(), spec.config_from_dict(options))


# trajectory_judge


def test_trajectory_prompt_carries_steps_calls_results_and_errors() -> None:
    body = request("trajectory_judge", run(), JudgeContext(input="Weather in Paris, 2+3 and 1/0?"),
                   temperature=0.3)
    assert body["model"] == "judge-1" and body["temperature"] == 0.3
    assert body["response_format"] == {"type": "json_object"}
    system, user = (m["content"] for m in body["messages"])
    assert '"reasoning"' in system and '"score"' in system
    assert "reference" not in system.lower()  # judged without one
    for text in ('get_weather({"city": "Paris"}) -> Sunny, 22C', 'add({"a": 2, "b": 3}) -> 5',
                 "divide", "ERROR: ZeroDivisionError", "model chat replied: checking",
                 "Weather in Paris, 2+3 and 1/0?", "1/0 is undefined"):
        assert text in user, text
    assert "<reference" not in user and "<expected steps>" not in user


def test_trajectory_prompt_with_a_reference_run_or_expected_steps() -> None:
    reference = trajectory(agent("assistant", model(), tool("lookup_weather", {"q": "Paris"}),
                                 model("sunny")))
    context = JudgeContext(input="q", reference_output="sunny, 5, undefined",
                           reference_trajectory=reference)
    system, user = (m["content"] for m in request("trajectory_judge", run(), context)["messages"])
    assert "reference of a good run" in system
    assert "<reference trajectory>" in user and "lookup_weather" in user
    assert "<reference answer>\nsunny, 5, undefined" in user
    expected = Expectations(trajectory=(ExpectedStep("tool", "get_weather", {"city": "Paris"}),))
    _, user = (m["content"] for m in
               request("trajectory_judge", run(), JudgeContext(), expected)["messages"])
    assert '<expected steps>\n1. tool get_weather({"city": "Paris"})' in user
    system, user = (m["content"] for m in
                    request("trajectory_judge", run(), context, expected,
                            reference="none")["messages"])
    assert "reference of a good run" not in system and "<reference" not in user


def test_trajectory_verdict() -> None:
    result = parse("trajectory_judge", answer({"reasoning": "fine, steps 2-3", "score": 0.7}),
                   run())
    assert result.score == 0.7 and result.passed  # default threshold 0.5
    assert isinstance(result.reason, TrajectoryJudgeReason)
    assert result.reason.reasoning == "fine, steps 2-3" and result.reason.model == "judge-1"
    assert result.reason.with_reference is False
    strict = parse("trajectory_judge", answer({"reasoning": "ok", "score": 0.7}), run(),
                   threshold=0.8)
    assert not strict.passed
    assert "judged without a reference, pass at >= 0.8" in strict.explain()


@pytest.mark.parametrize("content", [
    "The run looks good to me.",
    {"reasoning": "ok"},
    {"reasoning": "ok", "score": 1.5},
    {"reasoning": "ok", "score": "0.9"},
    {"score": 0.9},
    {"reasoning": 3, "score": 0.9},
    [{"reasoning": "ok", "score": 0.9}],
    '{"reasoning": "ok", "score": NaN}',
])  # fmt: skip
def test_malformed_trajectory_verdicts_are_errors(content: Any) -> None:
    with pytest.raises(JudgeResponseError):
        parse("trajectory_judge", answer(content), run())


def test_truncated_refused_and_error_answers_are_errors() -> None:
    truncated = answer({"reasoning": "ok", "score": 1})
    truncated["choices"][0]["finish_reason"] = "length"
    refused = answer("")
    refused["choices"][0]["message"]["refusal"] = "I can't"
    for body in (truncated, refused, {"error": {"message": "overloaded"}}, {"choices": []}):
        with pytest.raises(JudgeResponseError):
            parse("trajectory_judge", body, run())


# tool_choice_judge


def test_tool_choice_prompt_numbers_every_call() -> None:
    body = request("tool_choice_judge", run(), JudgeContext(input="Weather in Paris?"),
                   available_tools=["get_weather: current weather", "add", "divide"])
    system, user = (m["content"] for m in body["messages"])
    assert '"appropriate"' in system and '"missing_tools"' in system
    assert "call 1: tool get_weather" in user and "call 2: tool add" in user
    assert "call 3: tool divide" in user and "ERROR: ZeroDivisionError" in user
    assert "<available tools>\nget_weather: current weather\nadd\ndivide" in user
    assert "3 numbered tool call(s)" in user


def calls(*verdicts: bool, missing: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"calls": [
        {"call": i, "appropriate": ok, "reasoning": f"call {i} reasoning"}
        for i, ok in enumerate(verdicts, 1)]}
    if missing is not None:
        out["missing_tools"] = missing
    return out


def test_tool_choice_score_is_the_fraction_of_appropriate_calls() -> None:
    result = parse("tool_choice_judge", answer(calls(True, True, False)), run())
    assert result.score == pytest.approx(2 / 3) and not result.passed  # threshold 1 by default
    assert isinstance(result.reason, ToolChoiceReason)
    assert [(c.call, c.tool, c.appropriate) for c in result.reason.calls] == [
        (1, "get_weather", True), (2, "add", True), (3, "divide", False)]
    assert "call 3 divide: NOT appropriate: call 3 reasoning" in result.explain()
    lenient = parse("tool_choice_judge", answer(calls(True, True, False)), run(), threshold=0.6)
    assert lenient.passed
    # the entries may come in any order
    shuffled = calls(True, False, True)
    shuffled["calls"].reverse()
    assert parse("tool_choice_judge", answer(shuffled), run()).score == pytest.approx(2 / 3)


def test_tool_choice_without_calls_follows_mastra() -> None:
    quiet = trajectory(agent("assistant", model("hello")))
    assert parse("tool_choice_judge", answer(calls()), quiet).score == 1.0
    needed = parse("tool_choice_judge", answer(calls(missing=["get_weather"])), quiet)
    assert needed.score == 0.0 and "needed but not called: get_weather" in needed.explain()


@pytest.mark.parametrize("verdict", [
    calls(True, True),  # call 3 not judged
    calls(True, True, True, True),  # there is no call 4
    {"calls": [{"call": 1, "appropriate": True, "reasoning": "x"}] * 2
     + [{"call": 3, "appropriate": True, "reasoning": "x"}]},  # call 1 twice
    {"calls": [{"call": i, "appropriate": "yes", "reasoning": "x"} for i in (1, 2, 3)]},
    {"calls": [{"call": i, "appropriate": True} for i in (1, 2, 3)]},
    {"calls": "all fine"},
    calls(True, True, True, missing="divide"),  # type: ignore[arg-type]
])  # fmt: skip
def test_malformed_tool_choice_verdicts_are_errors(verdict: Any) -> None:
    with pytest.raises(JudgeResponseError):
        parse("tool_choice_judge", answer(verdict), run())


# connection settings, for every judge


@pytest.mark.parametrize("name", sorted(JUDGES))
def test_judge_settings_are_checked(name: str) -> None:
    config = JUDGES[name].config_from_dict
    assert config({"model": "m", "temperature": 1, "endpoint": "https://judge.example/v1",
                   "api_key_env": "TRAJHUB_JUDGE_KEY_TEAM"}).settings.model == "m"
    for options, message in [
        ({"api_key": "sk-123"}, "raw 'api_key' is not accepted"),
        ({"api_key_env": "DATABASE_URL"}, "TRAJHUB_JUDGE_KEY_"),
        ({"api_key_env": "TRAJHUB_JUDGE_KEY_"}, "TRAJHUB_JUDGE_KEY_"),
        ({"endpoint": "judge.example"}, "'endpoint' must be an http"),
        ({"temperature": 3}, "'temperature'"),
        ({"temperature": True}, "'temperature'"),
        ({"model": ""}, "'model'"),
        ({"modle": "x"}, "unknown option 'modle'"),
    ]:
        with pytest.raises(ConfigError, match=message):
            config(options)
