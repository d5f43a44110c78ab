"""Conversion to agentevals' trajectory format (OpenAI chat messages)."""

from __future__ import annotations

import json

from tests.test_evaluators_support import agent, model, spec_example, tool, trajectory, validate
from trajhub.evaluators import to_agentevals_messages


def test_spec_example() -> None:
    doc = spec_example()
    steps = doc["root_step"]["agent_steps"][0]["steps"]
    messages = to_agentevals_messages(doc)
    assert [m["role"] for m in messages] == [
        "user", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert messages[0]["content"] == doc["root_step"]["input"]
    first = messages[1]
    assert first["content"] == steps[0]["output"]  # the model turn that issued the call
    (call,) = first["tool_calls"]
    assert call["type"] == "function"
    assert call["function"]["name"] == "weather_tool"
    args = json.loads(call["function"]["arguments"])
    assert args == {"location": "Shanghai", "date": "this_weekend"}
    assert messages[2] == {
        "role": "tool",
        "tool_call_id": call["id"],
        "content": steps[1]["output"],
    }
    assert messages[3]["tool_calls"][0]["function"]["name"] == "search_tool"
    assert messages[4]["tool_call_id"] == messages[3]["tool_calls"][0]["id"]
    # the final answer once: the root output, not also the last model turn
    assert messages[5] == {"role": "assistant", "content": doc["root_step"]["output"]}
    # stable ids: the same document converts to the same messages
    assert to_agentevals_messages(spec_example()) == messages


def test_tool_call_ids_parallel_calls_errors_and_plain_inputs() -> None:
    doc = trajectory(
        agent(
            "assistant",
            model(),
            tool("get_weather", {"city": "Paris"}, metadata={"tool_call_id": "call_abc"}),
            tool("add", {"a": 2, "b": 3}, metadata={"tool_call_id": "call_def"}),
            model(),
            tool("divide", {"a": 1, "b": 0}, output="", error=(-1, "ZeroDivisionError")),
            model(),
            tool("echo", raw_input="plain text"),
            model("final from model"),
        ),
        output="",
    )
    validate(doc)
    messages = to_agentevals_messages(doc)
    assert [m["role"] for m in messages] == [
        "user", "assistant", "tool", "tool", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    parallel = messages[1]["tool_calls"]
    assert [c["id"] for c in parallel] == ["call_abc", "call_def"]
    assert [m["tool_call_id"] for m in messages[2:4]] == ["call_abc", "call_def"]
    assert messages[5]["content"] == "Error: ZeroDivisionError"
    echo = messages[6]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(echo) == {"input": "plain text"}
    # no root output: the last model turn is the final answer
    assert messages[-1] == {"role": "assistant", "content": "final from model"}


def test_sub_agent_calls_appear_where_invoked() -> None:
    doc = trajectory(
        agent(
            "supervisor",
            model(),
            tool("plan"),
            model(),
            {"id": "sub", "type": "agent", "name": "researcher"},
            model(),
            tool("publish"),
            model("done"),
        ),
        agent("researcher", model(), tool("search"), model("found"), id="sub"),
    )
    names = [
        call["function"]["name"]
        for message in to_agentevals_messages(doc)
        for call in message.get("tool_calls", [])
    ]
    assert names == ["plan", "search", "publish"]
