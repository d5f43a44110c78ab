"""Expectations: JSON round trip, validation naming the field, and pre-fill from a trajectory."""

from __future__ import annotations

import json

import pytest

from tests.test_evaluators_support import agent, model, spec_example, tool, trajectory
from trajhub.evaluators import (
    Expectations,
    ExpectationsError,
    ExpectedStep,
    evaluate,
    expectations_from_trajectory,
)


def test_round_trip() -> None:
    original = Expectations(
        agents=("simple_agent",),
        tools={"simple_agent": ("get_weather", "translate")},
        tool_order=("get_weather", "translate"),
        trajectory=(
            ExpectedStep("agent", "simple_agent"),
            ExpectedStep("tool", "get_weather", {"city": "北京"}, args_match="superset"),
        ),
    )
    as_json = json.dumps(original.to_dict())
    assert Expectations.from_dict(json.loads(as_json)) == original
    assert Expectations.from_dict({}) == Expectations()
    with_turns = Expectations(
        trajectory=(
            ExpectedStep("tool", "x", turn=0),
            ExpectedStep("tool", "y", {"q": 1}, args_match=("q",), turn=0),
            ExpectedStep("tool", "z", turn=3),
        )
    )
    stored = json.loads(json.dumps(with_turns.to_dict()))
    assert stored["trajectory"][1] == {
        "type": "tool", "name": "y", "args": {"q": 1}, "args_match": ["q"], "turn": 0
    }
    assert Expectations.from_dict(stored) == with_turns
    assert "trajectory" not in Expectations().to_dict()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ([], "expectations"),
        ({"agent": ["a"]}, "agent"),
        ({"agents": "a"}, "agents"),
        ({"agents": ["a", 3]}, "agents[1]"),
        ({"tools": ["a"]}, "tools"),
        ({"tools": {"a": ["x", ""]}}, "tools.a[1]"),
        ({"tool_order": [None]}, "tool_order[0]"),
        ({"trajectory": {}}, "trajectory"),
        ({"trajectory": [{"type": "tool", "name": "x"}, "y"]}, "trajectory[1]"),
        ({"trajectory": [{"type": "model", "name": "x"}]}, "trajectory[0].type"),
        ({"trajectory": [{"type": "tool"}]}, "trajectory[0].name"),
        ({"trajectory": [{"type": "tool", "name": ""}]}, "trajectory[0].name"),
        ({"trajectory": [{"type": "tool", "name": "x", "args_match": "fuzzy"}]},
         "trajectory[0].args_match"),
        ({"trajectory": [{"type": "tool", "name": "x", "args": {"n": float("nan")}}]},
         "trajectory[0].args.n"),
        ({"trajectory": [{"type": "tool", "name": "x", "argz": {}}]}, "trajectory[0].argz"),
        ({"graph_runs": "agent"}, "graph_runs"),
        ({"graph_runs": [[]]}, "graph_runs[0]"),
        ({"graph_runs": [["__start__", 1]]}, "graph_runs[0][1]"),
        ({"trajectory": [{"type": "tool", "name": "x", "args_match": []}]},
         "trajectory[0].args_match"),
        ({"trajectory": [{"type": "tool", "name": "x", "args_match": ["a", 1]}]},
         "trajectory[0].args_match"),
        ({"trajectory": [{"type": "tool", "name": "x", "turn": -1}]}, "trajectory[0].turn"),
        ({"trajectory": [{"type": "tool", "name": "x", "turn": True}]}, "trajectory[0].turn"),
        ({"trajectory": [{"type": "agent", "name": "x", "turn": 0}]}, "trajectory[0].turn"),
        ({"trajectory": [{"type": "tool", "name": "x", "turn": 0}, {"type": "tool", "name": "y"}]},
         "trajectory[1].turn"),
        ({"trajectory": [{"type": "tool", "name": "x", "turn": 1},
                         {"type": "tool", "name": "y", "turn": 0}]}, "trajectory[1].turn"),
    ],
)  # fmt: skip
def test_validation_names_the_field(data: object, field: str) -> None:
    with pytest.raises(ExpectationsError) as caught:
        Expectations.from_dict(data)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")


def test_prefill_records_parallel_calls_in_one_turn() -> None:
    doc = trajectory(
        agent(
            "assistant",
            model(),
            tool("get_weather", {"city": "Paris"}),
            tool("add", {"a": 1}),
            model(),
            tool("divide", {"a": 1}),
            model("done"),
        )
    )
    steps = [s for s in expectations_from_trajectory(doc).trajectory or () if s.type == "tool"]
    assert [(s.name, s.turn) for s in steps] == [("get_weather", 0), ("add", 0), ("divide", 1)]


def test_prefill_from_the_spec_example() -> None:
    expectations = expectations_from_trajectory(spec_example())
    assert expectations.agents == ("TravelPlannerAgent",)
    assert expectations.tools == {"TravelPlannerAgent": ("weather_tool", "search_tool")}
    assert expectations.tool_order == ("weather_tool", "search_tool")
    assert expectations.trajectory == (
        ExpectedStep("agent", "TravelPlannerAgent"),
        # the spec example's two model turns each issue one call
        ExpectedStep(
            "tool", "weather_tool", {"location": "Shanghai", "date": "this_weekend"}, turn=0
        ),
        ExpectedStep("tool", "search_tool", {"query": "上海博物馆 预约规则"}, turn=1),
    )
    # pre-filled expectations survive JSON and the trajectory meets them in every evaluator
    stored = json.loads(json.dumps(expectations.to_dict()))
    for name, config in [
        ("expected_agents_tools", None),
        ("tool_call_accuracy", {"strict_mode": True}),
        ("trajectory_match", {"mode": "strict"}),
        ("trajectory_match", {"mode": "strict", "level": "agent"}),
    ]:
        assert evaluate(name, spec_example(), stored, config).passed, name
