"""An Eino ADK transfer (a ChatModelAgent handing off to a sub-agent) through both Eino callbacks.

A bare ChatModelAgent with a sub-agent, run under an application span of its own, written span by
span from eino's source (cloudwego/eino ca0441ac) in the forms the real captures show
(tests/fixtures/eino-real; their ADK supervisor run, with its transfers, is checked by
tests/test_eino_real.py):

- `adk/flow.go` `flowAgent.Run` keeps `ctxForSubAgents := ctx` from BEFORE `initAgentCallbacks`
  and `callbacks.OnStart` of the agent, and `flowAgent.run` runs the transfer's target with it:
  the sub-agent's span is a sibling of the agent that transferred, not its child. Under the
  application's own span (the run's root here) both agents hang side by side.
- `adk/chatmodel.go`: the transfer tool is `transfer_to_agent` with the argument
  `{"agent_name": ...}`, answering "successfully transferred to agent [<name>]"; it returns
  directly (the ReAct graph ends after it).
- A ChatModelAgent runs `Chain[<agent>]{Lambda, ReAct graph{ChatModel, ToolsNode > tool}}`.

Expected (docs/trajectory-rules.md §7): two agent steps, `router` then `weather`, each holding
exactly its own model and tool steps; the transfer is a tool step of `router` marked as a handoff to
`weather`; tokens per agent and in total; the same skeleton through both callbacks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from tests.normalize_spans import span
from trajhub.normalizers import derive
from trajhub.normalizers.model import AttributeValue, Span
from trajhub.normalizers.sources import span_from_cozeloop
from trajhub.normalizers.trajectory import Trajectory

TRACE = "5f2b3c4d5e6f708192a3b4c5d6e7f809"
QUESTION = "What's the weather in Paris?"
ANSWER = "It is sunny and 22C in Paris."


@dataclass
class Node:
    """One Eino callback run: its component, run-info name and type, payloads and usage."""

    span_id: str
    parent: str
    name: str
    component: str  # Agent, Chain, Lambda, Graph, ChatModel, ToolsNode, Tool; "" = app span
    start: int  # ms
    end: int
    type: str = ""
    input: Any = None
    output: Any = None
    tokens: tuple[int, int] | None = None
    tool_call_id: str = ""
    agent: str = ""  # the ADK agent whose baggage the span carries


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


USER = {"role": "user", "content": QUESTION}
TRANSFER = {
    "role": "assistant",
    "content": "",
    "tool_calls": [_call("call_t1", "transfer_to_agent", {"agent_name": "weather"})],
}
TRANSFERRED = "successfully transferred to agent [weather]"
ASK = {
    "role": "assistant",
    "content": "",
    "tool_calls": [_call("call_w1", "get_weather", {"city": "Paris"})],
}
FINAL = {"role": "assistant", "content": ANSWER}


def _agent_frame(p: str, agent: str, start: int, end: int) -> list[Node]:
    """A ChatModelAgent's own runs under the app span: the agent, its Chain, the Chain's Lambda
    and the ReAct graph (`<p>4`) that holds its model and tool calls."""
    return [
        Node(f"{p}1", "a0", agent, "Agent", start, end, "ChatModel", [USER], None, agent=agent),
        Node(f"{p}2", f"{p}1", agent, "Chain", start + 1, end - 1, agent=agent),
        Node(f"{p}3", f"{p}2", "", "Lambda", start + 2, start + 3, agent=agent),
        Node(f"{p}4", f"{p}2", "ReAct", "Graph", start + 4, end - 2, agent=agent),
    ]


def _model_call(span_id: str, parent: str, start: int, end: int, messages: list[Any],
                answer: Any, tokens: tuple[int, int], agent: str) -> Node:
    """One call of the agents' OpenAI ChatModel."""
    return Node(span_id, parent, "ChatModel", "ChatModel", start, end, "OpenAI", messages,
                answer, tokens=tokens, agent=agent)


def _tool_call(p: str, agent: str, start: int, end: int, name: str, type_: str,
               arguments: str, result: str, call_id: str) -> list[Node]:
    """The ReAct graph's ToolsNode (`<p>6`) running one tool call (`<p>7`)."""
    return [
        Node(f"{p}6", f"{p}4", "ToolsNode", "ToolsNode", start, end, agent=agent),
        Node(f"{p}7", f"{p}6", name, "Tool", start + 1, end - 1, type_, arguments, result,
             tool_call_id=call_id, agent=agent),
    ]


def _run() -> list[Node]:
    router, weather = "router", "weather"
    return [
        Node("a0", "", "chat", "", 0, 100, input=QUESTION, output=ANSWER),
        # router: agent > Chain > {Lambda, ReAct > {ChatModel, ToolsNode > transfer_to_agent}}
        *_agent_frame("r", router, 1, 40),
        _model_call("r5", "r4", 6, 20, [USER], TRANSFER, (60, 12), router),
        *_tool_call("r", router, 21, 37, "transfer_to_agent", "transferToAgent",
                    '{"agent_name": "weather"}', TRANSFERRED, "call_t1"),
        # weather: a sibling of router (ctxForSubAgents), run after the transfer
        *_agent_frame("w", weather, 41, 99),
        _model_call("w5", "w4", 46, 60, [USER], ASK, (80, 10), weather),
        *_tool_call("w", weather, 61, 70, "get_weather", "GetWeather", '{"city": "Paris"}',
                    "Sunny, 22C in Paris", "call_w1"),
        _model_call("w8", "w4", 71, 96, [USER, ASK], FINAL, (110, 9), weather),
    ]


def _payload(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else json.dumps(value))


def _cozeloop(node: Node) -> Span:
    """The UploadSpan eino-ext callbacks/cozeloop sends (tests/fixtures/eino-real/*/cozeloop)."""
    span_type = {"Agent": "agent", "Graph": "graph", "ChatModel": "model", "Tool": "tool"}.get(
        node.component, node.component or "custom"
    )
    tags: dict[str, str] = {}
    longs: dict[str, int] = {}
    if node.component:
        tags |= {
            "eino_run_info_component": node.component,
            "eino_run_info_name": node.name or f"{node.component}",
            "eino_run_info_type": node.type,
        }
    if node.agent:
        tags |= {"agent_name": node.agent, "agent_run_id": f"run-{node.agent}"}
    inp, out = _payload(node.input), _payload(node.output)
    if node.component == "ChatModel":
        tags |= {"model_name": "gpt-4o-mini", "model_provider": "OpenAI"}
        inp = json.dumps({"messages": node.input})
        out = json.dumps({"choices": [{"index": 0, "message": node.output}]})
        assert node.tokens is not None
        longs = {"input_tokens": node.tokens[0], "output_tokens": node.tokens[1]}
    if node.tool_call_id:
        tags["tool_call_id"] = node.tool_call_id
    runtime = {"language": "go", "library": "eino"} if node.component else {"language": "go"}
    return span_from_cozeloop(
        {
            "span_id": f"{node.span_id:0>16}",
            "parent_id": f"{node.parent:0>16}" if node.parent else "0",
            "trace_id": TRACE,
            "started_at_micros": 1_785_000_000_000_000 + node.start * 1000,
            "duration_micros": (node.end - node.start) * 1000,
            "span_name": node.name or node.component,
            "span_type": span_type,
            "status_code": 0,
            "input": inp,
            "output": out,
            "system_tags_string": {"runtime": json.dumps(runtime)},
            "tags_string": tags,
            "tags_long": longs,
        }
    )


def _apmplus(node: Node) -> Span:
    """The OTLP span eino-ext callbacks/apmplus sends (tests/fixtures/eino-real/*/apmplus): no
    tool call ids, tool payloads JSON-quoted, the ADK agent span ended as soon as the agent
    starts."""
    attrs: dict[str, AttributeValue] = {}
    end = node.end
    if node.component:
        attrs |= {
            "gen_ai.system": "eino",
            # no apmplus state in the app span's context: the agents are apmplus roots
            "gen_ai.span.kind": "workflow" if node.component == "Agent" else node.component.lower(),
            "runinfo.name": node.name,
            "runinfo.type": node.type,
            "runinfo.component": node.component,
        }
    if node.component == "Agent":
        end = node.start + 1
        attrs["gen_ai.input"] = json.dumps({"Input": {"Messages": node.input}})
        attrs["gen_ai.output"] = json.dumps({"Events": {}})
    elif node.component == "ChatModel":
        for index, message in enumerate(node.input):
            if message.get("content"):
                attrs[f"gen_ai.prompt.{index}.role"] = message["role"]
                attrs[f"gen_ai.prompt.{index}.content"] = message["content"]
        if node.output.get("content"):
            attrs["gen_ai.completion.0.role"] = "assistant"
            attrs["gen_ai.completion.0.content"] = node.output["content"]
        else:
            attrs["gen_ai.completion.0.content"] = json.dumps([node.output])
        assert node.tokens is not None
        attrs |= {
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.usage.prompt_tokens": node.tokens[0],
            "gen_ai.usage.completion_tokens": node.tokens[1],
        }
    elif node.component == "Tool":
        attrs["gen_ai.prompt.0.role"] = "user"
        attrs["gen_ai.prompt.0.content"] = json.dumps(node.input)
        attrs["gen_ai.completion.0.content"] = json.dumps(node.output)
    return span(
        f"{node.span_id:0>16}",
        f"{node.parent:0>16}" if node.parent else "",
        node.name or node.component,
        node.start,
        end,
        attrs,
        trace_id=TRACE,
    )


EXPORTS = {"cozeloop": _cozeloop, "apmplus": _apmplus}


def _derive(export: str) -> Trajectory:
    return derive([EXPORTS[export](node) for node in _run()]).trajectory


@pytest.mark.parametrize("export", sorted(EXPORTS))
def test_transfer_gives_one_agent_step_per_activation(export: str) -> None:
    trajectory = _derive(export)
    assert [
        (a.name, [(s.type, "" if s.type == "model" else s.name) for s in a.steps])
        for a in trajectory.agent_steps
    ] == [
        ("router", [("model", ""), ("tool", "transfer_to_agent")]),
        ("weather", [("model", ""), ("tool", "get_weather"), ("model", "")]),
    ]
    root_id = f"{'a0':0>16}"
    assert trajectory.root_step.id == root_id
    assert all(a.parent_id == root_id for a in trajectory.agent_steps)
    transfer = trajectory.agent_steps[0].steps[1]
    assert transfer.metadata["handoff"] == "true"
    assert transfer.metadata["handoff_to"] == "weather"
    assert transfer.input == '{"agent_name":"weather"}'
    assert transfer.output == TRANSFERRED
    assert "handoff" not in trajectory.agent_steps[1].steps[1].metadata
    tokens = [
        (a.metrics_info.input_tokens, a.metrics_info.output_tokens) for a in trajectory.agent_steps
    ]
    assert tokens == [(60, 12), (190, 19)]
    root = trajectory.root_step.metrics_info
    assert (root.input_tokens, root.output_tokens) == (250, 31)
    assert trajectory.root_step.basic_info.error is None


def test_both_callbacks_give_the_same_skeleton_and_answers() -> None:
    native, apm = _derive("cozeloop"), _derive("apmplus")

    def skeleton(t: Trajectory) -> list[Any]:
        return [
            (a.name, [(s.type, s.name, s.metadata.get("handoff_to")) for s in a.steps])
            for a in t.agent_steps
        ]

    assert skeleton(native) == skeleton(apm)
    for trajectory in (native, apm):
        last_model = trajectory.agent_steps[1].steps[-1]
        assert json.loads(last_model.output) == FINAL
        assert trajectory.agent_steps[1].steps[1].output == "Sunny, 22C in Paris"
