"""llm_judge: the request carries the trajectory and the expectations; parsing is strict and a
malformed answer is an error, never a pass."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.test_evaluators_support import spec_example
from trajhub.evaluators import (
    Expectations,
    JudgeResponseError,
    build_judge_request,
    parse_judge_response,
)


def response(content: Any, **choice: Any) -> dict[str, Any]:
    return {
        "model": "judge-1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, **choice}],
    }


def verdict(**fields: Any) -> str:
    return json.dumps({"score": 0.8, "passed": True, "reason": "sensible steps"} | fields)


def test_build_request() -> None:
    expectations = Expectations(agents=("TravelPlannerAgent",), tool_order=("weather_tool",))
    body = build_judge_request(
        spec_example(), "plan a trip", "museum on Sunday", expectations, "gpt-judge"
    )
    assert body["model"] == "gpt-judge"
    assert body["temperature"] == 0
    assert body["response_format"] == {"type": "json_object"}
    system, user = body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    assert '"score"' in system["content"] and '"passed"' in system["content"]
    assert '"reason"' in system["content"]
    assert "logical" in system["content"]  # the default rubric
    for expected in ("plan a trip", "museum on Sunday", "weather_tool", "search_tool",
                     "TravelPlannerAgent", '"tool_order"'):  # fmt: skip
        assert expected in user["content"]
    json.dumps(body)  # the body is JSON-serialisable as is


def test_custom_rubric_and_no_reference() -> None:
    body = build_judge_request(spec_example(), "q", None, None, "m", rubric="Only {brevity}.")
    assert "Only {brevity}." in body["messages"][0]["content"]
    assert "<Reference output>" not in body["messages"][1]["content"]
    assert "<Expectations>" not in body["messages"][1]["content"]


def test_parse_valid_verdicts() -> None:
    result = parse_judge_response(response(verdict()))
    assert result.score == 0.8 and result.passed and result.evaluator == "llm_judge"
    assert "sensible steps (judge: judge-1)" in result.explain()
    failed = parse_judge_response(response(verdict(score=0, passed=False)))
    assert failed.score == 0.0 and not failed.passed


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"choices": []},
        {"choices": [{"message": None}]},
        {"error": {"message": "rate limited"}},
        response(None),
        response([{"type": "text", "text": verdict()}]),
        response("The trajectory looks good, I'd say 0.9."),
        response("```json\n" + verdict() + "\n```"),
        response('[0.8, true, "ok"]'),
        response(verdict(score=None)),
        response(json.dumps({"passed": True, "reason": "no score"})),
        response(verdict(score="0.8")),
        response(verdict(score=True)),
        response(verdict(score=1.5)),
        response(verdict(score=-0.1)),
        response('{"score": NaN, "passed": true, "reason": "x"}'),
        response(verdict(passed="true")),
        response(json.dumps({"score": 1, "reason": "no passed"})),
        response(verdict(reason=None)),
        response(verdict(), finish_reason="length"),
        {"choices": [{"message": {"content": verdict(), "refusal": "I can't"}}]},
    ],
)
def test_malformed_answers_raise(body: dict[str, Any]) -> None:
    with pytest.raises(JudgeResponseError):
        parse_judge_response(body)
