"""Eino through both of its exports, span by span: the cozeloop callback (native ingest JSON, read
by normalizers.cozeloop) and the apmplus callback (OTLP, read by normalizers.apmplus).

The inputs are the real captures of tests/fixtures/eino-real (the Go program in
tests/capture/eino/ ran each shape under each callback); the run-level checks against each
shape's ground truth are in tests/test_eino_real.py. Here: how each span is read.
"""

from __future__ import annotations

import json

import pytest

from tests.eino_real_support import capture_files, truth
from tests.normalize_spans import span as make_span
from tests.normalize_support import View, load_files
from trajhub.normalizers import derive
from trajhub.normalizers.apmplus import APMPLUS
from trajhub.normalizers.apmplus import CONVENTIONS as APMPLUS_CONVENTIONS
from trajhub.normalizers.cozeloop import NATIVE
from trajhub.normalizers.model import STATUS_ERROR, AttributeValue, Event, Span
from trajhub.normalizers.reading import Convention, SpanReading, StepKind
from trajhub.normalizers.sources import span_from_cozeloop

SHAPES = ["react_tools", "adk_failure", "supervisor", "graph_fanout"]
EXPORTS: dict[str, Convention] = {"cozeloop": NATIVE, "apmplus": APMPLUS}

#: eino component -> the kind both exports must give it
COMPONENT_KINDS = {
    "ChatModel": StepKind.MODEL,
    "Tool": StepKind.TOOL,
    "Graph": StepKind.GRAPH,
    "Agent": StepKind.AGENT,
}


def component(span: Span) -> str:
    if span.cozeloop is not None:
        return str(span.cozeloop.tags_string.get("eino_run_info_component", ""))
    return str(span.attributes.get("runinfo.component", ""))


def read_all(spans: list[Span], convention: Convention) -> dict[str, SpanReading]:
    view = View(spans)
    out: dict[str, SpanReading] = {}
    for s in spans:
        assert convention.detect(s), s.name
        out[s.span_id] = convention.read(s, view)
    return out


@pytest.mark.parametrize("export", sorted(EXPORTS))
@pytest.mark.parametrize("shape", SHAPES)
def test_every_span_classified_by_its_component(shape: str, export: str) -> None:
    spans = load_files(capture_files(shape, export))
    readings = read_all(spans, EXPORTS[export])
    by_id = {s.span_id: s for s in spans}

    def run_by_adk_agent(span: Span) -> bool:
        """A graph whose nearest classified ancestor is an ADK agent is the agent's own
        implementation (a ChatModelAgent's ReAct graph): part of the agent
        (docs/trajectory-rules.md §7)."""
        parent = by_id.get(span.parent_span_id)
        while parent is not None and component(parent) not in COMPONENT_KINDS:
            parent = by_id.get(parent.parent_span_id)
        return parent is not None and component(parent) == "Agent"

    for span in spans:
        reading = readings[span.span_id]
        expected = COMPONENT_KINDS.get(component(span), StepKind.OTHER)
        if expected is StepKind.GRAPH and run_by_adk_agent(span):
            expected = StepKind.OTHER
        assert reading.kind is expected, (span.name, reading.rule)
        assert reading.framework == "eino"
        assert reading.metadata["eino_run_info_component"] == component(span)
        if expected is StepKind.TOOL:
            assert reading.name == span.name
        assert reading.warnings == ()


def test_adk_agent_failure_read_from_the_run() -> None:
    """ADK agent spans never carry an error status: cozeloop puts the error in the agent's output
    events, apmplus only on the agent's run Chain. Both must mark the agent failed."""
    want = truth("adk_failure")
    for export, convention in EXPORTS.items():
        readings = read_all(load_files(capture_files("adk_failure", export)), convention)
        (agent,) = [r for r in readings.values() if r.kind is StepKind.AGENT]
        assert agent.name == want["root"]["name"]
        assert agent.error is not None, export
        assert agent.error.code == -1
        assert want["root"]["error"]["message"] in agent.error.message
        assert "\n" not in agent.error.message
        assert "node path: [node_1, ToolNode]" in agent.error.traceback
        (graph,) = [r for r in readings.values() if r.name == "ReAct"]
        assert graph.kind is StepKind.OTHER  # part of the agent
        assert graph.error is not None and "\n" not in graph.error.message


def test_adk_agent_baggage_and_apmplus_agent_end() -> None:
    native = read_all(load_files(capture_files("adk_failure", "cozeloop")), NATIVE)
    assert all(r.metadata["agent_name"] == "planner" for r in native.values())
    assert len({r.metadata["agent_run_id"] for r in native.values()}) == 1
    apm = read_all(load_files(capture_files("adk_failure", "apmplus")), APMPLUS)
    agent = next(r for r in apm.values() if r.kind is StepKind.AGENT)
    assert agent.metadata["end_time_unreliable"] == "true"
    assert agent.metadata["span_type"] == "workflow"


def test_apmplus_content_is_rebuilt_from_its_indexed_attributes() -> None:
    spans = load_files(capture_files("react_tools", "apmplus"))
    readings = read_all(spans, APMPLUS)
    want = truth("react_tools")
    root = next(r for s, r in zip(spans, readings.values(), strict=True)
                if not s.parent_span_id)
    assert root.kind is StepKind.GRAPH and root.rule == "runinfo.component=Graph"
    assert json.loads(root.input)[0]["role"] == "user"  # gen_ai.input, as sent
    models = [readings[s.span_id] for s in sorted(spans, key=lambda s: s.start_ns)
              if readings[s.span_id].kind is StepKind.MODEL]
    # the second call's prompt: prompt.0 (user), prompt.2 and .3 (the tool results); the
    # assistant message that only called tools has no content and was skipped
    assert [m["role"] for m in json.loads(models[1].input)] == ["user", "tool", "tool"]
    assert models[1].metadata["payload_truncated"] == "true"
    assert json.loads(models[2].output) == [
        {"role": "assistant", "content": want["final_answer"]}]
    assert models[2].metadata["finish_reason"] == "stop"
    # a turn that only calls tools has no content: apmplus serialises the messages whole
    calls = json.loads(models[0].output)[0]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_weather", "get_time"]


def test_apmplus_streamed_tool_call_turn_is_the_messages_not_a_text() -> None:
    """The stream path sets `gen_ai.completion.0.role` on its fallback too: still the messages."""
    spans = load_files(capture_files("streaming", "apmplus"))
    readings = read_all(spans, APMPLUS)
    first = min((s for s in spans if readings[s.span_id].kind is StepKind.MODEL),
                key=lambda s: s.start_ns)
    assert first.attributes["gen_ai.completion.0.role"] == "assistant"
    (message,) = json.loads(readings[first.span_id].output)
    assert message["tool_calls"][0]["id"] == "call_weather_oslo"


def test_cozeloop_stream_mode_values_are_one_value() -> None:
    """A graph run with Stream() records `{"stream": [chunks]}`: read as the value streamed."""
    spans = load_files(capture_files("streaming", "cozeloop"))
    readings = read_all(spans, NATIVE)
    root = next(readings[s.span_id] for s in spans if not s.parent_span_id)
    assert root.input == '[{"role":"user","content":"What\'s the weather in Oslo?"}]'
    answer = json.loads(root.output)
    assert answer["role"] == "assistant"
    assert answer["content"] == truth("streaming")["final_answer"]
    assert answer["response_meta"]["finish_reason"] == "stop"


def test_apmplus_detection_and_odd_input() -> None:
    def span(**attributes: AttributeValue) -> Span:
        return make_span("b" * 16, name="n", start_ms=1, end_ms=2, attrs=attributes)

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

    failed = make_span("c" * 16, name="t", start_ms=1, end_ms=2,
                       attrs={"gen_ai.span.kind": "tool", "runinfo.component": "Tool"},
                       status=STATUS_ERROR,
                       events=(Event("exception", 2, {"exception.message": "boom\nmore"}),))
    failure = APMPLUS.read(failed, View([failed]))
    assert failure.error is not None
    assert (failure.error.code, failure.error.message) == (-1, "boom")
    assert failure.metadata.get("tool_call_id") is None


def test_derive_cozeloop_batches_in_any_order() -> None:
    """cozeloop-go flushes children before parents and ADK agent spans last."""
    for shape in SHAPES:
        spans = load_files(capture_files(shape, "cozeloop"))
        assert derive(spans).to_json() == derive(list(reversed(spans))).to_json()

