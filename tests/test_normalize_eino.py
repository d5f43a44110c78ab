"""Eino through both of its exports: the cozeloop callback (native ingest JSON, read by
normalizers.cozeloop) and the apmplus callback (OTLP, read by normalizers.apmplus).

fixtures/eino/E*/ground_truth.json lists every span with its type in both exports, the model
calls with their tokens and the tool calls with their errors; both exports must agree with it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.normalize_support import FIXTURES, View, load_files, skeleton
from trajhub.normalizers import derive
from trajhub.normalizers.apmplus import APMPLUS
from trajhub.normalizers.apmplus import CONVENTIONS as APMPLUS_CONVENTIONS
from trajhub.normalizers.cozeloop import NATIVE
from trajhub.normalizers.model import STATUS_ERROR, Event, Span
from trajhub.normalizers.reading import Convention, SpanReading, StepKind
from trajhub.normalizers.sources import span_from_cozeloop

EINO = FIXTURES / "eino"
SCENARIOS = ["E1", "E3"]

#: eino component -> the kind both exports must give it
COMPONENT_KINDS = {
    "ChatModel": StepKind.MODEL,
    "Tool": StepKind.TOOL,
    "Graph": StepKind.GRAPH,
    "Agent": StepKind.AGENT,
}


def cozeloop_spans(scenario: str) -> list[Span]:
    return load_files(sorted((EINO / scenario).glob("cozeloop_ingest_*.json")))


def apmplus_spans(scenario: str) -> list[Span]:
    return load_files([EINO / scenario / "apmplus_otlp.json"])


def ground_truth(scenario: str) -> dict[str, Any]:
    truth: dict[str, Any] = json.loads((EINO / scenario / "ground_truth.json").read_bytes())
    return truth


def read_all(spans: list[Span], convention: Convention) -> dict[str, SpanReading]:
    view = View(spans)
    out: dict[str, SpanReading] = {}
    for s in spans:
        assert convention.detect(s), s.name
        out[s.span_id] = convention.read(s, view)
    return out


Loader = Callable[[str], list[Span]]

EXPORTS: dict[str, tuple[Loader, Convention, str]] = {
    "cozeloop": (cozeloop_spans, NATIVE, "cozeloop_span_id"),
    "apmplus": (apmplus_spans, APMPLUS, "otel_span_id"),
}


@pytest.mark.parametrize("export", sorted(EXPORTS))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_span_classified_as_ground_truth(scenario: str, export: str) -> None:
    load, convention, id_key = EXPORTS[export]
    readings = read_all(load(scenario), convention)
    truth = ground_truth(scenario)
    assert len(readings) == len(truth["spans"])
    by_key = {span["key"]: span for span in truth["spans"]}

    def run_by_adk_agent(span: dict[str, Any]) -> bool:
        """A graph whose nearest classified ancestor is an ADK agent is the agent's own
        implementation (a ChatModelAgent's ReAct graph): part of the agent
        (docs/trajectory-rules.md §7)."""
        parent = by_key.get(span["parent_key"])
        while parent is not None and parent["eino_component"] not in COMPONENT_KINDS:
            parent = by_key.get(parent["parent_key"])
        return parent is not None and parent["eino_component"] == "Agent"

    for span in truth["spans"]:
        reading = readings[span[id_key]]
        expected = COMPONENT_KINDS.get(span["eino_component"], StepKind.OTHER)
        if expected is StepKind.GRAPH and run_by_adk_agent(span):
            expected = StepKind.OTHER
        assert reading.kind is expected, (span["key"], reading.rule)
        assert reading.framework == "eino"
        assert reading.metadata["eino_run_info_component"] == span["eino_component"]
        if expected is StepKind.TOOL:
            assert reading.name == span["span_name"]
        assert reading.warnings == ()


@pytest.mark.parametrize("export", sorted(EXPORTS))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_model_calls(scenario: str, export: str) -> None:
    load, convention, id_key = EXPORTS[export]
    readings = read_all(load(scenario), convention)
    for call in ground_truth(scenario)["model_calls"]:
        reading = readings[call[id_key]]
        assert reading.kind is StepKind.MODEL
        assert reading.usage is not None
        assert reading.usage.input_tokens == call["input_tokens"]
        assert reading.usage.output_tokens == call["output_tokens"]
        assert reading.metadata["model_name"] == call["model"]
        assert reading.metadata["model_provider"] == "OpenAI"
        assert reading.error is None
        if export == "cozeloop":
            # cozeloop-go reports µs
            assert reading.usage.latency_first_resp_ms == call["latency_first_resp_micros"] / 1000
            assert reading.usage.cache_read_tokens == call["input_cached_tokens"]
            assert reading.usage.reasoning_tokens == call["reasoning_tokens"]
        else:
            # apmplus records first-token latency only for streaming calls
            assert reading.usage.latency_first_resp_ms is None
            messages = json.loads(reading.input)
            assert len(messages) <= call.get("input_message_count", len(messages))
            assert all(m["role"] for m in messages)


@pytest.mark.parametrize("export", sorted(EXPORTS))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_tool_calls(scenario: str, export: str) -> None:
    load, convention, id_key = EXPORTS[export]
    readings = read_all(load(scenario), convention)
    for call in ground_truth(scenario)["tool_calls"]:
        reading = readings[call[id_key]]
        assert reading.kind is StepKind.TOOL
        assert reading.name == call["name"]
        # apmplus quotes tool arguments once more; both give the raw arguments
        assert reading.input == call["arguments"]
        # cozeloop names the call only on success, apmplus never: both recovered from the
        # ToolsNode parent's assistant message
        assert reading.metadata["tool_call_id"] == call["tool_call_id"]
        if call["error"] is None:
            assert reading.error is None
            assert reading.output == call["result"]
        else:
            assert reading.error is not None
            assert reading.error.code == -1
            assert reading.error.message == call["error"]


def test_e3_agent_failure_read_from_the_run() -> None:
    """ADK agent spans never carry an error status: cozeloop puts the error in the agent's output
    events, apmplus only on the agent's run Chain. Both must mark the agent failed."""
    truth = ground_truth("E3")
    first_line = truth["final_error"].splitlines()[0]
    for export in ("cozeloop", "apmplus"):
        load, convention, id_key = EXPORTS[export]
        readings = read_all(load("E3"), convention)
        (agent_truth,) = truth["agents"]
        agent = readings[agent_truth[id_key]]
        assert agent.kind is StepKind.AGENT
        assert agent.name == "planner"
        assert agent.error is not None, export
        assert agent.error.code == -1
        assert agent.error.message == first_line
        assert "node path: [node_1, ToolNode]" in agent.error.traceback
        (react,) = [s for s in truth["spans"] if s["key"] == "planner.react"]
        graph = readings[react[id_key]]
        assert graph.name == "ReAct" and graph.kind is StepKind.OTHER  # part of the agent
        assert graph.error is not None and "\n" not in graph.error.message


def test_e3_agent_baggage_and_apmplus_agent_end() -> None:
    native = read_all(cozeloop_spans("E3"), NATIVE)
    assert all(r.metadata["agent_name"] == "planner" for r in native.values())
    assert len({r.metadata["agent_run_id"] for r in native.values()}) == 1
    apm = read_all(apmplus_spans("E3"), APMPLUS)
    agent = next(r for r in apm.values() if r.kind is StepKind.AGENT)
    assert agent.metadata["end_time_unreliable"] == "true"
    assert agent.metadata["span_type"] == "workflow"


def test_apmplus_content_reassembly() -> None:
    readings = read_all(apmplus_spans("E1"), APMPLUS)
    truth = ground_truth("E1")
    root = readings[truth["spans"][0]["otel_span_id"]]
    assert root.kind is StepKind.GRAPH and root.rule == "runinfo.component=Graph"
    assert json.loads(root.input)[0]["role"] == "user"  # gen_ai.input, as sent
    second = readings[truth["model_calls"][1]["otel_span_id"]]
    # prompt.0, prompt.2, prompt.3 (the assistant message has no content and was skipped)
    assert [m["role"] for m in json.loads(second.input)] == ["user", "tool", "tool"]
    assert json.loads(second.output) == [{"role": "assistant", "content": truth["final_output"]}]
    assert second.metadata["finish_reason"] == "stop"
    first = readings[truth["model_calls"][0]["otel_span_id"]]
    assert json.loads(first.output)[0]["tool_calls"][0]["function"]["name"] == "get_weather"


def test_apmplus_detection_and_odd_input() -> None:
    def span(**attributes: Any) -> Span:
        return Span(
            trace_id="a" * 32,
            span_id="b" * 16,
            name="n",
            start_ns=1,
            end_ns=2,
            attributes=attributes,
        )

    assert [c.name for c in APMPLUS_CONVENTIONS] == ["apmplus"]
    assert APMPLUS.detect(span(**{"gen_ai.span.kind": "chatmodel"}))
    assert APMPLUS.detect(span(**{"gen_ai.system": "eino", "runinfo.component": "Tool"}))
    assert not APMPLUS.detect(span(**{"gen_ai.system": "eino"}))
    assert not APMPLUS.detect(span(**{"gen_ai.operation.name": "chat", "gen_ai.system": "openai"}))
    native = span_from_cozeloop({"span_type": "model", "tags_string": {"gen_ai.span.kind": "x"}})
    assert not APMPLUS.detect(native)

    odd = span(
        **{
            "gen_ai.span.kind": "chatmodel",
            "gen_ai.usage.prompt_tokens": "lots",
            "gen_ai.chat_completions.streaming_time_to_first_token": "0.25",
            "gen_ai.prompt.x.role": "user",
            "gen_ai.prompt.0": "no field",
            "gen_ai.completion.0.content": 7,
        }
    )
    reading = APMPLUS.read(odd, View([odd]))
    assert reading.kind is StepKind.MODEL and reading.rule == "gen_ai.span.kind=chatmodel"
    assert reading.usage is not None
    assert reading.usage.input_tokens is None
    assert reading.usage.latency_first_resp_ms == 250.0  # seconds -> ms
    assert reading.input == "" and reading.output == "7"
    assert len(reading.warnings) == 2  # no runinfo.component, bad prompt_tokens

    failed = Span(
        trace_id="a" * 32,
        span_id="c" * 16,
        name="t",
        start_ns=1,
        end_ns=2,
        status_code=STATUS_ERROR,
        events=(Event("exception", 2, {"exception.message": "boom\nmore"}),),
        attributes={"gen_ai.span.kind": "tool", "runinfo.component": "Tool"},
    )
    failure = APMPLUS.read(failed, View([failed]))
    assert failure.error is not None
    assert (failure.error.code, failure.error.message) == (-1, "boom")
    assert failure.metadata.get("tool_call_id") is None


# ------------------------------------------------------------------------------------------
# end to end through derive()
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("export", sorted(EXPORTS))
def test_derive_e1_react_graph(export: str) -> None:
    load, _, _ = EXPORTS[export]
    truth = ground_truth("E1")
    derivation = derive(load("E1"))
    trajectory = derivation.trajectory
    assert trajectory.id == truth["traces"][0][f"{export.replace('apmplus', 'otel')}_trace_id"]
    # the compose graph is the root and the only agent step
    assert trajectory.root_step.name == "ReActAgent"
    tools_in_start_order = [
        t["name"] for t in sorted(truth["tool_calls"], key=lambda t: t["start_micros"])
    ]
    assert skeleton(trajectory) == [
        (
            "ReActAgent",
            [
                ("model", "ChatModel", False),
                *[("tool", name, False) for name in tools_in_start_order],
                ("model", "ChatModel", False),
            ],
        )
    ]
    steps = trajectory.agent_steps[0].steps
    models = [s for s in steps if s.type == "model"]
    assert [(m.model_info.input_tokens, m.model_info.output_tokens) for m in models] == [
        (c["input_tokens"], c["output_tokens"]) for c in truth["model_calls"]
    ]
    expected_latency = (
        [str(round(c["latency_first_resp_micros"] / 1000)) for c in truth["model_calls"]]
        if export == "cozeloop"
        else ["", ""]
    )
    assert [m.model_info.latency_first_resp for m in models] == expected_latency
    assert [s.metadata.get("tool_call_id") for s in steps if s.type == "tool"] == [
        c["tool_call_id"] for c in sorted(truth["tool_calls"], key=lambda t: t["start_micros"])
    ]
    metrics = trajectory.root_step.metrics_info
    assert (metrics.input_tokens, metrics.output_tokens) == (
        truth["totals"]["input_tokens"],
        truth["totals"]["output_tokens"],
    )
    assert metrics.tool_errors == {} and metrics.model_errors == {}
    assert trajectory.root_step.basic_info.error is None  # final_status success
    assert derivation.summary.framework == "eino"
    assert derivation.warnings == []


@pytest.mark.parametrize("export", sorted(EXPORTS))
def test_derive_e3_adk_agent(export: str) -> None:
    load, _, id_key = EXPORTS[export]
    truth = ground_truth("E3")
    derivation = derive(load("E3"))
    trajectory = derivation.trajectory
    (agent_truth,) = truth["agents"]
    # the ADK agent is the root and the run's only agent (truth["agents"]); the ReAct graph it
    # runs inside a Chain is its implementation, so the model and tool calls are its own steps
    # (docs/trajectory-rules.md §7)
    assert trajectory.root_step.id == agent_truth[id_key]
    assert skeleton(trajectory) == [
        ("planner", [("model", "ChatModel", False), ("tool", "search_flights", True)]),
    ]
    planner = trajectory.agent_steps[0]
    model, tool = planner.steps
    assert model.parent_id == tool.parent_id == agent_truth[id_key]
    (call,) = truth["model_calls"]
    assert (model.model_info.input_tokens, model.model_info.output_tokens) == (
        call["input_tokens"],
        call["output_tokens"],
    )
    (tool_truth,) = truth["tool_calls"]
    assert tool.basic_info.error is not None
    assert tool.basic_info.error.msg == tool_truth["error"]
    assert tool.metadata["tool_call_id"] == tool_truth["tool_call_id"]
    # final_status error: the agent never carries an error status, yet the run failed
    root_error = trajectory.root_step.basic_info.error
    assert root_error is not None
    assert root_error.msg == truth["final_error"].splitlines()[0]
    assert "node path" in trajectory.agent_steps[0].metadata["error_traceback"]
    metrics = trajectory.root_step.metrics_info
    assert metrics.tool_errors == {"-1": [tool.id]}
    assert metrics.tool_error_rate == 1.0
    assert (metrics.input_tokens, metrics.output_tokens) == (
        truth["totals"]["input_tokens"],
        truth["totals"]["output_tokens"],
    )
    assert derivation.summary.agent_names == [a["name"] for a in truth["agents"]]
    assert derivation.summary.has_error


def test_derive_cozeloop_batches_in_any_order() -> None:
    """cozeloop-go flushes children before parents and ADK agent spans last."""
    for scenario in SCENARIOS:
        spans = cozeloop_spans(scenario)
        assert derive(spans).to_json() == derive(list(reversed(spans))).to_json()


def test_derive_e3_apmplus_agent_lasts_until_its_run_ends() -> None:
    """apmplus ends the ADK agent span as soon as the agent starts (end_time_unreliable): the
    builder takes the end of its subtree instead, so the root lasts as long as the run."""
    spans = apmplus_spans("E3")
    (agent_truth,) = ground_truth("E3")["agents"]
    agent = next(s for s in spans if s.span_id == agent_truth["otel_span_id"])
    children: dict[str, list[Span]] = {}
    for s in spans:
        children.setdefault(s.parent_span_id, []).append(s)
    subtree_end, todo = agent.end_ns, list(children.get(agent.span_id, []))
    while todo:
        s = todo.pop()
        subtree_end = max(subtree_end, s.end_ns)
        todo.extend(children.get(s.span_id, []))
    assert subtree_end > agent.end_ns  # the children outlive the agent span
    expected_ms = (subtree_end - agent.start_ns) // 1_000_000
    assert expected_ms > 0

    derivation = derive(spans)
    trajectory = derivation.trajectory
    assert trajectory.root_step.id == agent.span_id
    assert trajectory.root_step.basic_info.duration == str(expected_ms)
    assert trajectory.agent_steps[0].id == agent.span_id
    assert trajectory.agent_steps[0].basic_info.duration == str(expected_ms)
    assert derivation.summary.duration_ms == expected_ms
    assert trajectory.root_step.basic_info.started_at == str(agent.start_ns // 1_000_000)
    assert derive(list(reversed(spans))).to_json() == derivation.to_json()

    # the cozeloop export of the same run: its agent span ends when the run does, and both
    # exports give the same agent skeleton
    native_spans = cozeloop_spans("E3")
    native_agent = next(s for s in native_spans if s.span_id == agent_truth["cozeloop_span_id"])
    native = derive(native_spans).trajectory
    assert native.root_step.basic_info.duration == str(native_agent.duration_ns // 1_000_000)
    expected_skeleton = [
        ("planner", [("model", "ChatModel", False), ("tool", "search_flights", True)]),
    ]
    assert skeleton(native) == skeleton(trajectory) == expected_skeleton
