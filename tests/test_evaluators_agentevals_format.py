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


def _chat(*messages: tuple[str, str]) -> str:
    return json.dumps([{"role": role, "content": content} for role, content in messages])


def test_every_user_turn_of_the_conversation_is_kept() -> None:
    # A chat-shaped root input carries the history; a later model call that was sent a new
    # user message (the user answered mid-run) adds that turn where it happened.
    first = model(json.dumps({"role": "assistant", "content": "Which city?"}))
    first["input"] = _chat(("system", "be brief"), ("user", "weather?"))
    second = model()
    second["input"] = _chat(
        ("system", "be brief"), ("user", "weather?"), ("assistant", "Which city?"),
        ("user", "Paris"),
    )  # fmt: skip
    final = model("It is sunny.")
    doc = trajectory(
        agent("assistant", first, second, tool("get_weather", {"city": "Paris"}), final),
        input=_chat(("user", "hello"), ("assistant", "hi, how can I help?"), ("user", "weather?")),
        output=json.dumps({"role": "assistant", "content": "It is sunny."}),
    )
    messages = to_agentevals_messages(doc)
    assert [(m["role"], m["content"]) for m in messages if "tool_calls" not in m] == [
        ("user", "hello"),
        ("assistant", "hi, how can I help?"),
        ("user", "weather?"),
        ("assistant", "Which city?"),  # the model's reply text, not its JSON message
        ("user", "Paris"),
        ("tool", "ok"),
        ("assistant", "It is sunny."),
    ]
    assert messages[5]["role"] == "assistant" and messages[5]["tool_calls"]


def test_a_sub_agent_with_its_own_history_adds_no_user_turn() -> None:
    sub_model = model("found")
    sub_model["input"] = _chat(("user", "research Paris"))
    doc = trajectory(
        agent("supervisor", model(), {"id": "sub", "type": "agent", "name": "r"}, model("done")),
        agent("r", sub_model, id="sub"),
        input=_chat(("user", "plan a trip")),
    )
    users = [m["content"] for m in to_agentevals_messages(doc) if m["role"] == "user"]
    assert users == ["plan a trip"]


def test_tool_messages_only_where_the_run_had_a_result() -> None:
    doc = trajectory(
        agent(
            "assistant",
            model(),
            tool("fire_and_forget", {"x": 1}, output=""),  # returned nothing
            tool("get_weather", {"city": "Paris"}, output="sunny"),
            tool("divide", {"a": 1, "b": 0}, output="", error=(-1, "ZeroDivisionError")),
            model("done"),
        )
    )
    messages = to_agentevals_messages(doc)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant"]
    calls = messages[1]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["fire_and_forget", "get_weather", "divide"]
    assert [m["tool_call_id"] for m in messages[2:4]] == [calls[1]["id"], calls[2]["id"]]
    assert messages[3]["content"] == "Error: ZeroDivisionError"


def test_export_of_an_item_without_a_snapshot_follows_its_expected_turns() -> None:
    from trajhub.service.api.dataset_formats import messages_from_expectations

    steps = [{"type": "agent", "name": "a"},
             {"type": "tool", "name": "x", "args": {"q": 1}, "turn": 0},
             {"type": "tool", "name": "y", "turn": 0},
             {"type": "tool", "name": "z", "turn": 1}]
    messages = messages_from_expectations("question", "answer", {"trajectory": steps})
    assert [m["role"] for m in messages] == ["user", "assistant", "assistant", "assistant"]
    assert [[c["function"]["name"] for c in m["tool_calls"]] for m in messages[1:3]] == [
        ["x", "y"], ["z"]]
    assert json.loads(messages[1]["tool_calls"][0]["function"]["arguments"]) == {"q": 1}
    # no turns given: one assistant turn issues them all; never a tool message without results
    flat = [{k: v for k, v in s.items() if k != "turn"} for s in steps]
    messages = messages_from_expectations("question", None, {"trajectory": flat})
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert len(messages[1]["tool_calls"]) == 3
