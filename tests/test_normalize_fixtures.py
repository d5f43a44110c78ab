"""Every real capture in tests/fixtures gives a schema-valid trajectory, and every client gives
the ground-truth skeleton of fixtures/README.md (docs/trajectory-rules.md §6: invariance).

The cozeloop_* and eino captures go through the Coze Loop / apmplus conventions written
separately (normalizers/cozeloop.py, normalizers/apmplus.py); they are included here on purpose.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.normalize_support import FIXTURES, REAL, capture_sets, load_traces
from trajhub.normalizers import Derivation, derive, root_ended
from trajhub.normalizers.model import Span
from trajhub.normalizers.trajectory import Step

SCHEMA = json.loads((FIXTURES / "spec" / "trajectory.schema.json").read_text())
CAPTURES = capture_sets()
CLIENTS = ("openinference", "traceloop", "langsmith", "cozeloop_python", "cozeloop_js")


def _run_trace(files: Sequence[Path]) -> list[Span]:
    """The agent run of a capture: Traceloop also sends `create_agent` as a separate one-span
    trace, so take the trace with the most spans."""
    traces = load_traces(files)
    return max(traces.values(), key=lambda spans: (len(spans), spans[0].trace_id))


@pytest.mark.parametrize("capture", sorted(CAPTURES))
def test_every_capture_gives_schema_valid_trajectories(capture: str) -> None:
    traces = load_traces(CAPTURES[capture])
    assert traces
    for spans in traces.values():
        derivation = derive(spans)
        document = json.loads(derivation.to_json())
        jsonschema.validate(document, SCHEMA)
        # the same spans, read again, give the same bytes
        assert derive(list(reversed(spans))).to_json() == derivation.to_json()


def _variants(scenario: str) -> list[tuple[str, str]]:
    """(client, capture name) of every capture of a scenario, http and grpc."""
    out = []
    for name in sorted(CAPTURES):
        client, variant, _transport = [*name.split("/"), "", ""][:3]
        if client in CLIENTS and variant.startswith(scenario + "."):
            out.append((client, name))
    return out


def _steps(derivation: Derivation) -> list[Step]:
    agents = derivation.trajectory.agent_steps
    assert len(agents) == 1, [a.name for a in agents]
    return agents[0].steps


def skeleton(derivation: Derivation) -> dict[str, Any]:
    """What must not depend on the instrumentation: agent count, step types, tool names (the two
    parallel calls in either order), failed steps, token totals."""
    trajectory = derivation.trajectory
    steps = [s for a in trajectory.agent_steps for s in a.steps]
    tools = [s.name for s in steps if s.type == "tool"]
    if len(tools) >= 2:
        tools[:2] = sorted(tools[:2])
    metrics = trajectory.root_step.metrics_info
    return {
        "agents": len(trajectory.agent_steps),
        "types": [s.type for s in steps],
        "tools": tools,
        "failed": [(s.type, s.name) for s in steps if s.basic_info.error is not None],
        "tokens": (metrics.input_tokens, metrics.output_tokens),
        "run_failed": trajectory.root_step.basic_info.error is not None,
    }


REACT = {
    "agents": 1,
    "types": ["model", "tool", "tool", "model", "tool", "model"],
    "tools": ["add", "get_weather", "divide"],
    "failed": [("tool", "divide")],
    "tokens": (530, 73),
    "run_failed": False,
}
MODEL_ERROR = {
    "agents": 1,
    "types": ["model"],
    "tools": [],
    "failed": [("model", "ScriptedToolChatModel")],
    "tokens": (0, 0),
    "run_failed": True,
}


@pytest.mark.parametrize(("client", "capture"), _variants("react"))
def test_react_ground_truth(client: str, capture: str) -> None:
    spans = _run_trace(CAPTURES[capture])
    derivation = derive(spans)
    assert skeleton(derivation) == REACT
    root = derivation.trajectory.root_step
    agent = derivation.trajectory.agent_steps[0]
    # one agent step: the graph run, which is (or, for Traceloop, is the wrapper that is) the root
    assert agent.id == root.id
    assert agent.parent_id == ""
    models = [s for s in agent.steps if s.type == "model"]
    assert [
        (m.model_info.input_tokens, m.model_info.output_tokens) for m in models if m.model_info
    ] == [
        (120, 30),
        (180, 18),
        (230, 25),
    ]
    if client == "traceloop":  # the instrumentation records no reasoning tokens
        assert all(m.model_info and m.model_info.reasoning_tokens == 0 for m in models)
    for step in agent.steps:
        assert step.parent_id == agent.id  # nodes/chains dropped, steps re-parented
        assert (step.model_info is not None) == (step.type == "model")
    summary = derivation.summary
    assert summary.framework == "langgraph"
    assert summary.tool_names == ["add", "divide", "get_weather"]
    assert summary.model_step_count == 3 and summary.tool_step_count == 3
    assert summary.failed_tool_steps == 1 and summary.failed_model_steps == 0
    assert (summary.input_tokens, summary.output_tokens) == (530, 73)
    assert summary.has_error
    # the finished run's root has arrived, ended: the derivation worker may finalize it
    assert root_ended(spans)
    # ...but not while the root span is still missing (it is usually exported last)
    root_id = derivation.trajectory.root_step.id
    assert not root_ended([s for s in spans if s.span_id != root_id])


@pytest.mark.parametrize(("client", "capture"), _variants("model_error"))
def test_model_error_ground_truth(client: str, capture: str) -> None:
    derivation = derive(_run_trace(CAPTURES[capture]))
    assert skeleton(derivation) == MODEL_ERROR | (
        {"failed": [("model", derivation.trajectory.agent_steps[0].steps[0].name)]}
    )
    model = derivation.trajectory.agent_steps[0].steps[0]
    assert model.basic_info.error is not None
    assert "upstream model returned HTTP 500" in model.basic_info.error.msg
    assert "Traceback" not in model.basic_info.error.msg
    assert derivation.summary.failed_model_steps == 1


@pytest.mark.parametrize(
    "scenario",
    [
        "react.prebuilt.stream",
        "react.prebuilt.invoke",
        "react.manual.stream",
        "model_error.prebuilt.stream",
    ],
)
def test_skeletons_agree_across_clients(scenario: str) -> None:
    seen: dict[str, dict[str, Any]] = {}
    for client in CLIENTS:
        variant = REAL / client / scenario
        if not variant.is_dir():
            continue  # e.g. cozeloop_js has no manual graph
        for transport in ("http", "grpc"):
            files = CAPTURES.get(f"{client}/{scenario}/{transport}")
            if files:
                seen[f"{client}/{transport}"] = skeleton(derive(_run_trace(files)))
    assert len(seen) >= 4
    first = next(iter(seen.values()))
    assert all(value == first for value in seen.values()), seen


@pytest.mark.parametrize("client", ["openinference", "traceloop", "langsmith"])
@pytest.mark.parametrize("variant", ["react.prebuilt.stream", "model_error.prebuilt.stream"])
def test_http_and_grpc_give_identical_bytes(client: str, variant: str) -> None:
    http = derive(_run_trace(CAPTURES[f"{client}/{variant}/http"]))
    grpc = derive(_run_trace(CAPTURES[f"{client}/{variant}/grpc"]))
    assert http.to_json() == grpc.to_json()


def test_langsmith_chain_usage_is_not_counted() -> None:
    derivation = derive(_run_trace(CAPTURES["langsmith/react.prebuilt.stream/http"]))
    chains_with_usage = [
        e for e in derivation.explanation if e.name == "RunnableSequence" and not e.kept
    ]
    assert len(chains_with_usage) == 3  # they carry gen_ai.usage.* too
    assert derivation.trajectory.root_step.metrics_info.input_tokens == 530


def test_openinference_node_named_agent_is_not_an_agent() -> None:
    derivation = derive(_run_trace(CAPTURES["openinference/react.prebuilt.stream/http"]))
    nodes = [e for e in derivation.explanation if e.name == "agent"]
    assert len(nodes) == 3
    assert all(e.kind == "other" and not e.kept for e in nodes)
    root = derivation.explanation[0]
    assert root.kind == "root" and "LangGraph nodes" in root.rule


def test_openinference_model_messages_are_reassembled() -> None:
    derivation = derive(_run_trace(CAPTURES["openinference/react.prebuilt.stream/http"]))
    model = derivation.trajectory.agent_steps[0].steps[0]
    assert json.loads(model.input) == [
        {"content": "You are a helpful assistant. Use tools.", "role": "system"},
        {"content": "What's the weather in Paris, what is 2+3, and what is 1/0?", "role": "user"},
    ]
    # docs/trajectory-rules.md §8: the model's assistant message, canonical JSON (script's turn 1)
    assert model.output == (
        '{"content":"Let me look up the weather and do the math.","role":"assistant",'
        '"tool_calls":[{"arguments":{"city":"Paris"},"id":"call_weather_1","name":"get_weather"},'
        '{"arguments":{"a":2,"b":3},"id":"call_add_1","name":"add"}]}'
    )
    assert model.metadata["model_name"] == "fake-gpt-4o-mini"
    assert model.metadata["model_provider"] == "openai"
    assert model.metadata["langgraph_node"] == "agent"


@pytest.mark.parametrize("client", ["openinference", "traceloop", "langsmith"])
def test_tool_call_ids_found(client: str) -> None:
    derivation = derive(_run_trace(CAPTURES[f"{client}/react.prebuilt.stream/http"]))
    tools = {s.name: s for s in derivation.trajectory.agent_steps[0].steps if s.type == "tool"}
    assert {n: t.metadata.get("tool_call_id") for n, t in tools.items()} == {
        "get_weather": "call_weather_1",
        "add": "call_add_1",
        "divide": "call_div_1",
    }
    divide = tools["divide"].basic_info.error
    assert divide is not None and "float division by zero" in divide.msg
    assert "error_traceback" in tools["divide"].metadata or client == "langsmith"
