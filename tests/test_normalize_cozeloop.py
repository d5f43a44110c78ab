"""Coze Loop conventions (normalizers.cozeloop) on real captures.

Native spans: cozeloop-python LangChain callback captures and Coze Loop's own examples.
OTel spans: @cozeloop/langchain (JS) OTLP/JSON captures. Each span is read directly through the
convention with the minimal TraceView of tests/normalize_support.py; the end-to-end tests go through
`normalizers.derive`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.normalize_support import FIXTURES, Skeleton, View, load_files, skeleton
from trajhub.normalizers import derive
from trajhub.normalizers.coerce import to_int
from trajhub.normalizers.cozeloop import CONVENTIONS, NATIVE, OTEL
from trajhub.normalizers.model import CozeLoopFields, Span
from trajhub.normalizers.reading import SpanReading, StepKind
from trajhub.normalizers.sources import span_from_cozeloop
from trajhub.normalizers.span_errors import split_error

PY = FIXTURES / "real-clients" / "cozeloop_python"
JS = FIXTURES / "real-clients" / "cozeloop_js"
EXAMPLES = FIXTURES / "coze-loop-examples"


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------


def read_all(spans: list[Span]) -> dict[str, tuple[Span, SpanReading]]:
    view = View(spans)
    out: dict[str, tuple[Span, SpanReading]] = {}
    for s in spans:
        conv = next(c for c in CONVENTIONS if c.detect(s))
        out[s.span_id] = (s, conv.read(s, view))
    return out


def of_kind(readings: dict[str, tuple[Span, SpanReading]], kind: StepKind) -> list[SpanReading]:
    chosen = [(s, r) for s, r in readings.values() if r.kind is kind]
    chosen.sort(key=lambda sr: (sr[0].start_ns, sr[0].end_ns, sr[0].span_id))
    return [r for _, r in chosen]


def bins(directory: Path) -> list[Path]:
    return sorted(directory.glob("http_*.bin"))


#: fixtures/README.md ground truth: (input, output, cache read, cache write, reasoning)
GROUND_TRUTH_MODELS = [(120, 30, 64, 16, 12), (180, 18, 96, None, 4), (230, 25, None, None, None)]


# ------------------------------------------------------------------------------------------
# cozeloop-python (native)
# ------------------------------------------------------------------------------------------


def test_python_stream_classification_and_usage() -> None:
    readings = read_all(load_files(bins(PY / "react.prebuilt.stream")))
    assert all(r.convention == "cozeloop" for _, r in readings.values())

    graphs = of_kind(readings, StepKind.GRAPH)
    assert [g.name for g in graphs] == ["LangGraph"]
    assert graphs[0].rule == "cozeloop.span_type=graph"
    assert of_kind(readings, StepKind.AGENT) == []

    models = of_kind(readings, StepKind.MODEL)
    assert len(models) == 3
    for model, (tin, tout, cread, cwrite, reasoning) in zip(
        models, GROUND_TRUTH_MODELS, strict=True
    ):
        assert model.usage is not None
        assert (model.usage.input_tokens, model.usage.output_tokens) == (tin, tout)
        assert model.usage.cache_read_tokens == cread
        assert model.usage.cache_write_tokens == cwrite
        assert model.usage.reasoning_tokens == reasoning
        # the Python callback writes milliseconds (16 ms here), not µs
        assert model.usage.latency_first_resp_ms == 16.0
        assert model.metadata["model_name"] == "fake-gpt-4o-mini"
        assert model.metadata["model_provider"] == "scripted-fake-chat-model"
        assert model.error is None

    tools = of_kind(readings, StepKind.TOOL)
    assert sorted(t.name for t in tools[:2]) == ["add", "get_weather"]
    assert tools[2].name == "divide"
    assert [t.error is None for t in tools] == [True, True, False]
    failed = tools[2].error
    assert failed is not None
    assert failed.code == -1
    assert failed.message == "ZeroDivisionError('float division by zero')"
    assert failed.traceback == ""  # the "NoneType: None" placeholder is not a traceback
    weather = next(t for t in tools if t.name == "get_weather")
    assert json.loads(weather.input) == {"city": "Paris"}  # Python repr made JSON
    # no id on the tool span: read from the LangGraph `tools` node's tool_call_with_context
    ids = {t.name: t.metadata["tool_call_id"] for t in tools}
    assert ids == {"get_weather": "call_weather_1", "add": "call_add_1", "divide": "call_div_1"}

    # every other span (nodes, prompts, sequences) is dropped
    others = of_kind(readings, StepKind.OTHER)
    assert len(others) == len(readings) - 7
    assert all(r.framework == "langgraph" for _, r in readings.values())
    assert all(r.metadata["span_type"] for _, r in readings.values())
    assert all(r.warnings == () for _, r in readings.values())


def test_python_invoke_has_no_first_token_latency() -> None:
    readings = read_all(load_files(bins(PY / "react.prebuilt.invoke")))
    models = of_kind(readings, StepKind.MODEL)
    assert [(m.usage.input_tokens, m.usage.output_tokens) for m in models if m.usage] == [
        (120, 30),
        (180, 18),
        (230, 25),
    ]
    assert all(m.usage is not None and m.usage.latency_first_resp_ms is None for m in models)


def test_python_manual_graph_root_is_a_graph() -> None:
    """A StateGraph compiled as "weather_math_agent" arrives typed `chain`."""
    readings = read_all(load_files(bins(PY / "react.manual.stream")))
    graphs = of_kind(readings, StepKind.GRAPH)
    assert [g.name for g in graphs] == ["weather_math_agent"]
    assert "chain root" in graphs[0].rule
    # its nodes (call_llm, tools, tools_condition) stay other
    assert {r.name for r in of_kind(readings, StepKind.OTHER)} == {
        "call_llm",
        "tools",
        "tools_condition",
    }
    assert len(of_kind(readings, StepKind.MODEL)) == 3
    assert [t.name for t in of_kind(readings, StepKind.TOOL)][-1] == "divide"
    assert all(r.framework == "langgraph" for _, r in readings.values())


def test_python_model_error() -> None:
    readings = read_all(load_files(bins(PY / "model_error.prebuilt.stream")))
    (model,) = of_kind(readings, StepKind.MODEL)
    assert model.error is not None
    assert model.error.code == -1
    assert "upstream model returned HTTP 500" in model.error.message
    assert "\n" not in model.error.message
    assert model.error.traceback.startswith("Traceback (most recent call last)")
    (graph,) = of_kind(readings, StepKind.GRAPH)
    assert graph.error is not None and graph.error.code == -1
    assert of_kind(readings, StepKind.TOOL) == []


# ------------------------------------------------------------------------------------------
# @cozeloop/langchain (OTLP/JSON)
# ------------------------------------------------------------------------------------------


def test_js_stream_classification_and_usage() -> None:
    spans = load_files(bins(JS / "react.prebuilt.stream"))
    readings = read_all(spans)
    assert all(r.convention == "cozeloop_otel" for _, r in readings.values())
    assert [g.name for g in of_kind(readings, StepKind.GRAPH)] == ["LangGraph"]

    models = of_kind(readings, StepKind.MODEL)
    assert len(models) == 3
    for model, (tin, tout, *_), latency in zip(
        models, GROUND_TRUTH_MODELS, (17.0, 16.0, 15.0), strict=True
    ):
        assert model.usage is not None
        # token counts arrive as strings
        assert (model.usage.input_tokens, model.usage.output_tokens) == (tin, tout)
        # cozeloop.start_time_first_resp is already a latency in ms
        assert model.usage.latency_first_resp_ms == latency
        # the output carries the real model; gen_ai.request.model is the class name
        assert model.metadata["model_name"] == "fake-gpt-4o-mini"
        assert model.metadata["model_class"] == "ScriptedToolChatModel"

    tools = of_kind(readings, StepKind.TOOL)
    assert sorted(t.name for t in tools[:2]) == ["add", "get_weather"]
    assert tools[2].name == "divide"
    # from the ToolMessage output; for the failed divide, from the `tools` node's state
    ids = {t.name: t.metadata["tool_call_id"] for t in tools}
    assert ids == {"get_weather": "call_weather_1", "add": "call_add_1", "divide": "call_div_1"}
    assert tools[2].error is not None
    assert tools[2].error.code == -1
    assert tools[2].error.message == "ZeroDivisionError: division by zero"
    assert tools[0].error is None and tools[1].error is None
    assert all(r.framework == "langgraph" for _, r in readings.values())
    assert len(of_kind(readings, StepKind.OTHER)) == len(spans) - 7


def test_js_invoke_and_model_error() -> None:
    readings = read_all(load_files(bins(JS / "react.prebuilt.invoke")))
    models = of_kind(readings, StepKind.MODEL)
    assert sum(m.usage.input_tokens or 0 for m in models if m.usage) == 530
    assert sum(m.usage.output_tokens or 0 for m in models if m.usage) == 73

    readings = read_all(load_files(bins(JS / "model_error.prebuilt.stream")))
    (model,) = of_kind(readings, StepKind.MODEL)
    assert model.error is not None and "HTTP 500" in model.error.message


# ------------------------------------------------------------------------------------------
# Coze Loop's own examples: we keep exactly the spans Coze Loop keeps
# ------------------------------------------------------------------------------------------


def _expected_roles(path: Path) -> tuple[set[str], set[str], set[str]]:
    trajectory = next(iter(json.loads(path.read_bytes()).values()))
    models: set[str] = set()
    tools: set[str] = set()
    for agent in trajectory["agent_steps"]:
        for step in agent.get("steps", []):
            {"model": models, "tool": tools}.get(step["type"], set()).add(step["id"])
    agents = {a["id"] for a in trajectory["agent_steps"]}
    return agents, models, tools


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ("langgraph_python_ingest_payload.json", "langgraph_python_react"),  # native
        ("eino_go_ingest_payload.DERIVED.json", "eino_go_react"),  # native
        ("langchain_js_otlp_payload.json", "langchain_js_react"),  # OTLP/JSON
    ],
)
def test_same_steps_as_coze_loop(payload: str, expected: str) -> None:
    readings = read_all(load_files([EXAMPLES / payload]))
    agents, models, tools = _expected_roles(EXAMPLES / f"{expected}.expected_trajectory.json")
    kind_of = {sid: r.kind for sid, (_, r) in readings.items()}
    assert {s for s, k in kind_of.items() if k is StepKind.MODEL} == models
    assert {s for s, k in kind_of.items() if k is StepKind.TOOL} == tools
    # Coze Loop renames graph to agent; trajhub keeps graph
    assert {s for s, k in kind_of.items() if k in (StepKind.GRAPH, StepKind.AGENT)} == agents


def test_eino_native_latency_is_microseconds() -> None:
    readings = read_all(load_files([EXAMPLES / "eino_go_ingest_payload.DERIVED.json"]))
    models = of_kind(readings, StepKind.MODEL)
    assert [m.usage.latency_first_resp_ms for m in models if m.usage] == [1199.95, 849.96]
    assert all(m.framework == "eino" for m in models)
    tool = of_kind(readings, StepKind.TOOL)[0]
    assert tool.metadata["tool_call_id"] == "call_1"


def test_js_tool_error_example() -> None:
    readings = read_all(load_files([EXAMPLES / "langchain_js_tool_error.otlp_payload.json"]))
    (tool,) = of_kind(readings, StepKind.TOOL)
    assert tool.error is not None
    assert (tool.error.code, tool.error.message) == (-1, "weather service down")


# ------------------------------------------------------------------------------------------
# detection and odd input
# ------------------------------------------------------------------------------------------


def _otel_span(**attributes: Any) -> Span:
    return Span(
        trace_id="a" * 32, span_id="b" * 16, name="x", start_ns=1, end_ns=2, attributes=attributes
    )


def test_detection_is_specific() -> None:
    native = span_from_cozeloop({"span_id": "1", "trace_id": "2", "span_type": "model"})
    otel = _otel_span(**{"cozeloop.span_type": "model"})
    assert NATIVE.detect(native) and not OTEL.detect(native)
    assert OTEL.detect(otel) and not NATIVE.detect(otel)
    assert not OTEL.detect(_otel_span(**{"openinference.span.kind": "LLM"}))
    assert not OTEL.detect(_otel_span(**{"cozeloop.span_type": 3}))
    assert [c.name for c in CONVENTIONS] == ["cozeloop", "cozeloop_otel"]


def test_odd_native_input_never_raises() -> None:
    raw: dict[str, Any] = {
        "span_id": "00000000000000aa",
        "trace_id": "f" * 32,
        "parent_id": "0",
        "span_type": "model",
        "status_code": "not a number",
        "tags_string": {"runtime": "{broken", "error": ""},
        "tags_long": {"input_tokens": "many", "output_tokens": 3.5, "latency_first_resp": None},
        "tags_bool": "not a map",
    }
    span = span_from_cozeloop(raw)
    reading = NATIVE.read(span, View([span]))
    assert reading.kind is StepKind.MODEL
    assert reading.usage is not None
    assert reading.usage.input_tokens is None and reading.usage.output_tokens is None
    assert reading.usage.latency_first_resp_ms is None
    assert len(reading.warnings) == 3
    assert reading.error is None

    empty = span_from_cozeloop({})
    assert NATIVE.read(empty, View([empty])).kind is StepKind.OTHER
    # a hand-built span whose native fields lie about their types
    weird = Span(
        trace_id="t",
        span_id="s",
        name="",
        start_ns=0,
        end_ns=0,
        cozeloop=CozeLoopFields(span_type="agent", output='[1, {"error": 5}]'),
    )
    assert NATIVE.read(weird, View([weird])).kind is StepKind.AGENT


def test_odd_otel_input_never_raises() -> None:
    span = _otel_span(
        **{
            "cozeloop.span_type": "model",
            "gen_ai.usage.input_tokens": "x",
            "gen_ai.usage.output_tokens": [1],
            "cozeloop.start_time_first_resp": "soon",
            "cozeloop.output": "{not json",
            "cozeloop.input": {"k": 1},
        }
    )
    reading = OTEL.read(span, View([span]))
    assert reading.kind is StepKind.MODEL
    assert reading.input == '{"k": 1}'
    assert reading.usage is not None and reading.usage.input_tokens is None
    assert len(reading.warnings) == 3
    custom = _otel_span(**{"cozeloop.span_type": "custom"})
    assert OTEL.read(custom, View([custom])).kind is StepKind.OTHER


def test_helpers() -> None:
    assert to_int("42") == 42 and to_int(" 7 ") == 7 and to_int(3.0) == 3
    assert to_int(True) is None and to_int("x") is None and to_int(2.5) is None
    assert split_error("boom") == ("boom", "")
    assert split_error("a\n---\nnode path: [x]") == ("a", "a\n---\nnode path: [x]")


# ------------------------------------------------------------------------------------------
# end to end through derive()
# ------------------------------------------------------------------------------------------


def _ground_truth_skeleton(root: str) -> Skeleton:
    return [
        (
            root,
            [
                ("model", "ScriptedToolChatModel", False),
                ("tool", "*", False),
                ("tool", "*", False),
                ("model", "ScriptedToolChatModel", False),
                ("tool", "divide", True),
                ("model", "ScriptedToolChatModel", False),
            ],
        )
    ]


def _normalise_parallel(sk: Skeleton) -> Skeleton:
    (root, steps), *rest = sk
    assert {steps[1][1], steps[2][1]} == {"get_weather", "add"}
    steps = [steps[0], ("tool", "*", False), ("tool", "*", False), *steps[3:]]
    return [(root, steps), *rest]


@pytest.mark.parametrize(
    ("client", "variant", "root", "latencies"),
    [
        ("python", "react.prebuilt.stream", "LangGraph", ["16", "16", "16"]),
        ("python", "react.prebuilt.invoke", "LangGraph", ["", "", ""]),
        ("python", "react.manual.stream", "weather_math_agent", ["16", "15", "15"]),
        ("js", "react.prebuilt.stream", "LangGraph", ["17", "16", "15"]),
        ("js", "react.prebuilt.invoke", "LangGraph", ["", "", ""]),
    ],
)
def test_derive_ground_truth_skeleton(
    client: str, variant: str, root: str, latencies: list[str]
) -> None:
    derivation = derive(load_files(bins((PY if client == "python" else JS) / variant)))
    trajectory = derivation.trajectory
    # one agent step: the graph run, which is also the root
    assert trajectory.root_step.name == root
    assert [a.id for a in trajectory.agent_steps] == [trajectory.root_step.id]
    assert _normalise_parallel(skeleton(trajectory)) == _ground_truth_skeleton(root)
    metrics = trajectory.root_step.metrics_info
    assert (metrics.input_tokens, metrics.output_tokens) == (530, 73)
    divide = trajectory.agent_steps[0].steps[4]
    assert metrics.tool_errors == {"-1": [divide.id]}
    assert metrics.model_errors == {}
    models = [s for s in trajectory.agent_steps[0].steps if s.type == "model"]
    assert [m.model_info.latency_first_resp for m in models] == latencies
    assert trajectory.root_step.basic_info.error is None
    assert derivation.summary.framework == "langgraph"
    assert derivation.warnings == []


@pytest.mark.parametrize("client", ["python", "js"])
def test_derive_model_error(client: str) -> None:
    directory = (PY if client == "python" else JS) / "model_error.prebuilt.stream"
    trajectory = derive(load_files(bins(directory))).trajectory
    ((_root, steps),) = skeleton(trajectory)
    assert steps == [("model", "ScriptedToolChatModel", True)]
    assert trajectory.root_step.basic_info.error is not None
    assert trajectory.root_step.metrics_info.model_error_rate == 1.0


def test_derive_is_order_independent_for_js_batches() -> None:
    """@cozeloop/langchain posts one trace over several requests, children first."""
    paths = bins(JS / "react.prebuilt.stream")
    forward = derive(load_files(paths)).to_json()
    backward = derive(list(reversed(load_files(reversed(paths))))).to_json()
    assert forward == backward


def test_cut_off_payloads_are_marked_truncated() -> None:
    """cozeloop-go cuts a tag value over its size limit and lists the keys it cut in the system
    tag `cut_off` (coze-dev/cozeloop-go internal/trace/span.go setCutOffTag): the step says so
    (docs/trajectory-rules.md §8), it does not look like a complete payload."""
    raw = {
        "span_id": "00000000000000a1",
        "parent_id": "0",
        "trace_id": "0123456789abcdef0123456789abcdef",
        "started_at_micros": 1_000_000,
        "duration_micros": 10,
        "span_name": "get_weather",
        "span_type": "tool",
        "status_code": 0,
        "input": '{"city": "Par',
        "output": "Sunny",
        "system_tags_string": {"cut_off": '["input"]'},
    }
    derivation = derive([span_from_cozeloop(raw)])
    root = derivation.trajectory.root_step
    assert root.metadata["payload_truncated"] == "true"
    assert root.metadata["payload_truncated_fields"] == '["input"]'
    plain = dict(raw, system_tags_string={})
    plain_root = derive([span_from_cozeloop(plain)]).trajectory.root_step
    assert "payload_truncated" not in plain_root.metadata
