"""Property tests (hypothesis): determinism under any arrival order or batching, and no crash /
always schema-valid on arbitrary odd traces (docs/trajectory-rules.md §6)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.normalize_support import FIXTURES, capture_sets, load_traces
from trajhub.normalizers import derive
from trajhub.normalizers.model import Event, Span

SCHEMA = json.loads((FIXTURES / "spec" / "trajectory.schema.json").read_text())
FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

IDS = ["a1", "b2", "c3", "d4", "e5", "f6", "07", "18"]
KEYS_AND_VALUES: dict[str, list[Any]] = {
    "openinference.span.kind": ["LLM", "TOOL", "AGENT", "CHAIN", "RETRIEVER", 3],
    "langsmith.span.kind": ["llm", "tool", "chain"],
    "traceloop.span.kind": ["workflow", "task", "tool", "agent"],
    "cozeloop.span_type": ["model", "tool", "graph", "agent", "chain"],
    "gen_ai.operation.name": ["chat", "execute_tool", "invoke_agent", "invoke_workflow", "x"],
    "gen_ai.span.kind": ["chatmodel", "tool", "workflow", "lambda"],
    "gen_ai.system": ["eino", "openai"],
    "runinfo.component": ["ChatModel", "Tool", "Graph", "Lambda"],
    "llm.token_count.prompt": [1, "2", -3, 1.5, None, [1]],
    "gen_ai.usage.input_tokens": [5, "7", "x", True],
    "gen_ai.usage.output_tokens": [1, "9", 2**70],
    "gen_ai.response.time_to_first_chunk": [0.5, -1.0, float("nan"), "0.2", float("inf")],
    "gen_ai.chat_completions.streaming_time_to_first_token": [0.1, "x"],
    "cozeloop.start_time_first_resp": ["17", 3, None],
    "tool.name": ["t", "", 5],
    "gen_ai.tool.name": ["get_weather", {"k": "v"}],
    "metadata": ['{"langgraph_node": "agent"}', '{"langgraph_node": "tools"}', "[", 1],
    "langsmith.metadata.langgraph_node": ["agent", "tools"],
    "input.value": ["hi", b"\x00\xff", ""],
    "output.value": ['{"data": {"tool_call_id": "c1"}}', "x"],
    "llm.input_messages.0.message.role": ["user", 1],
    "llm.input_messages.0.message.content": ["hello", None],
    "error.type": ["500", "ValueError", ""],
    "error.message": ["boom", ""],
    "exception.type": ["KeyError"],
    "http.response.status_code": [429, "503"],
}

attribute_sets = st.dictionaries(
    st.sampled_from(sorted(KEYS_AND_VALUES)), st.integers(0, 10), max_size=6
).map(lambda picks: {k: KEYS_AND_VALUES[k][i % len(KEYS_AND_VALUES[k])] for k, i in picks.items()})

events = st.lists(
    st.builds(
        Event,
        name=st.sampled_from(["exception", "gen_ai.choice", "log"]),
        time_ns=st.integers(0, 10**6),
        attributes=st.sampled_from(
            [
                {},
                {
                    "exception.type": "E",
                    "exception.message": "m\nTraceback (most recent call last):",
                },
            ]
        ),
    ),
    max_size=2,
)

odd_spans = st.builds(
    Span,
    trace_id=st.sampled_from(["t1", "t1", "t1", "t2"]),
    span_id=st.sampled_from(IDS),
    name=st.sampled_from(["LangGraph", "agent", "tools", "x", ""]),
    start_ns=st.integers(0, 5).map(lambda x: x * 1_000_000),
    end_ns=st.integers(0, 9).map(lambda x: x * 700_000),
    parent_span_id=st.sampled_from(["", "0", "zz", *IDS]),
    status_code=st.integers(0, 2),
    status_message=st.sampled_from(["", "err\nTraceback (most recent call last):\n x"]),
    attributes=attribute_sets,
    events=events.map(tuple),
)


@pytest.mark.slow  # a Hypothesis fuzzer
@FAST
@given(st.lists(odd_spans, min_size=1, max_size=12), st.randoms(use_true_random=False))
def test_odd_traces_never_crash_and_validate(spans: list[Span], rnd: Any) -> None:
    derivation = derive(spans)
    document = json.loads(derivation.to_json())
    jsonschema.validate(document, SCHEMA)
    # every kept span appears once per agent step at most; explanation covers every unique id
    assert sorted(e.span_id for e in derivation.explanation) == sorted({s.span_id for s in spans})
    shuffled = list(spans)
    rnd.shuffle(shuffled)
    assert derive(shuffled).to_json() == derivation.to_json()


def _batches(spans: list[Span], cuts: list[int], order: list[int]) -> list[Span]:
    """Split into batches at `cuts`, deliver the batches in a permuted order."""
    bounds = sorted({0, len(spans), *(c % (len(spans) + 1) for c in cuts)})
    batches = [spans[a:b] for a, b in itertools.pairwise(bounds)]
    delivered: list[Span] = []
    for i in sorted(range(len(batches)), key=lambda i: order[i % len(order)] if order else i):
        delivered.extend(batches[i])
    return delivered


CAPTURES = capture_sets()
REAL_TRACES = [
    max(load_traces(CAPTURES[name]).values(), key=len)
    for name in (
        "openinference/react.prebuilt.stream/http",
        "traceloop/react.prebuilt.invoke/grpc",
        "langsmith/react.manual.stream/http",
        "cozeloop_js/react.prebuilt.stream/http",
    )
]
EXPECTED = [derive(spans).to_json() for spans in REAL_TRACES]


@pytest.mark.slow  # a Hypothesis fuzzer
@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, len(REAL_TRACES) - 1),
    st.randoms(use_true_random=False),
    st.lists(st.integers(0, 100), max_size=5),
    st.lists(st.integers(0, 100), max_size=6),
    st.booleans(),
)
def test_real_traces_any_order_any_batching(
    which: int, rnd: Any, cuts: list[int], order: list[int], resend: bool
) -> None:
    spans = list(REAL_TRACES[which])
    rnd.shuffle(spans)
    delivered = _batches(spans, cuts, order)
    if resend:  # an exporter retry re-sends a batch: identical duplicates change nothing
        delivered += delivered[: len(delivered) // 3]
    assert derive(delivered).to_json() == EXPECTED[which]
