"""Unit tests of the convention readers and of the builder's unit handling."""

from __future__ import annotations

import math

import pytest

from tests.normalize_spans import span
from trajhub.normalizers import derive
from trajhub.normalizers.attrs import unflatten
from trajhub.normalizers.builder import _latency_ms
from trajhub.normalizers.coerce import to_int
from trajhub.normalizers.model import STATUS_ERROR, STATUS_OK, AttributeValue, Event
from trajhub.normalizers.span_errors import one_line, span_error
from trajhub.normalizers.trajectory import round_rate


def _model_step(attrs: dict[str, AttributeValue]) -> dict[str, object]:
    root = span("r", "", "run", 0, 100, {"gen_ai.operation.name": "invoke_agent"})
    model = span("m", "r", "chat", 10, 20, attrs)
    trajectory = derive([root, model]).trajectory
    step = trajectory.agent_steps[0].steps[0]
    assert step.model_info is not None
    return {
        "latency": step.model_info.latency_first_resp,
        "in": step.model_info.input_tokens,
        "out": step.model_info.output_tokens,
        "reasoning": step.model_info.reasoning_tokens,
        "read": step.model_info.input_read_cached_tokens,
        "write": step.model_info.input_creation_cached_tokens,
    }


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [(0.4, "400"), (0.0165, "17"), (1, "1000"), ("0.25", "250"), (0.0004, "0"), (12.3456, "12346")],
)
def test_genai_time_to_first_chunk_seconds_to_ms(seconds: AttributeValue, expected: str) -> None:
    got = _model_step(
        {"gen_ai.operation.name": "chat", "gen_ai.response.time_to_first_chunk": seconds}
    )
    assert got["latency"] == expected


@pytest.mark.parametrize(("seconds", "expected"), [(0.0172, "17"), (0.5, "500"), (2, "2000")])
def test_eino_apmplus_streaming_ttft_seconds_to_ms(seconds: float, expected: str) -> None:
    """apmplus (normalizers/apmplus.py, via the registry) records TTFT in seconds too."""
    attrs: dict[str, AttributeValue] = {
        "gen_ai.system": "eino",
        "gen_ai.span.kind": "chatmodel",
        "runinfo.component": "ChatModel",
        "runinfo.name": "ChatModel",
        "gen_ai.is_streaming": True,
        "gen_ai.chat_completions.streaming_time_to_first_token": seconds,
        "gen_ai.usage.prompt_tokens": 10,
        "gen_ai.usage.completion_tokens": 2,
    }
    root = span(
        "r",
        "",
        "ReActAgent",
        0,
        100,
        {"gen_ai.system": "eino", "gen_ai.span.kind": "workflow", "runinfo.component": "Graph"},
    )
    model = span("m", "r", "ChatModel", 10, 20, attrs)
    step = derive([root, model]).trajectory.agent_steps[0].steps[0]
    assert step.type == "model"
    assert step.model_info is not None
    assert step.model_info.latency_first_resp == expected
    assert (step.model_info.input_tokens, step.model_info.output_tokens) == (10, 2)


def test_missing_latency_is_empty_string_and_all_six_fields_present() -> None:
    assert _model_step({"gen_ai.operation.name": "chat"}) == {
        "latency": "",
        "in": 0,
        "out": 0,
        "reasoning": 0,
        "read": 0,
        "write": 0,
    }


def test_builder_latency_rounding_and_nonsense() -> None:
    warnings: list[str] = []
    assert _latency_ms(16.5, warnings) == "17"
    assert _latency_ms(16.49, warnings) == "16"
    assert _latency_ms(0.0, warnings) == "0"
    assert _latency_ms(None, warnings) == ""
    assert warnings == []
    assert _latency_ms(-3.0, warnings) == ""
    assert _latency_ms(math.nan, warnings) == ""
    assert _latency_ms(math.inf, warnings) == ""
    assert len(warnings) == 3


def test_genai_usage_keys_and_string_numbers() -> None:
    got = _model_step(
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": "120",  # CozeLoop-JS-style string
            "gen_ai.usage.output_tokens": 30.0,
            "gen_ai.usage.reasoning.output_tokens": 12,
            "gen_ai.usage.cache_read.input_tokens": 64,
            "gen_ai.usage.cache_creation.input_tokens": 16,
        }
    )
    assert got == {"latency": "", "in": 120, "out": 30, "reasoning": 12, "read": 64, "write": 16}
    legacy = _model_step(
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.prompt_tokens": 5,
            "gen_ai.usage.completion_tokens": 6,
        }
    )
    assert (legacy["in"], legacy["out"]) == (5, 6)


@pytest.mark.parametrize("key", [
    "gen_ai.usage.cache_creation.input_tokens",  # the GenAI registry's spelling
    "gen_ai.usage.cache_write.input_tokens",  # the `cache_write` spelling of the same bucket
    "gen_ai.usage.cache_creation_input_tokens",
    "gen_ai.usage.cache_write_input_tokens",
    "gen_ai.usage.input_tokens.cache_write",
    "gen_ai.usage.cache_write_tokens",
])
def test_every_spelling_of_cache_writes_is_read_as_cache_writes(key: str) -> None:
    got = _model_step({"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 100,
                       key: 40})
    assert (got["write"], got["read"], got["in"]) == (40, 0, 100)


def test_cache_writes_under_two_spellings_are_counted_once() -> None:
    got = _model_step({"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 100,
                       "gen_ai.usage.cache_creation.input_tokens": 40,
                       "gen_ai.usage.cache_write.input_tokens": 40,
                       "gen_ai.usage.cache_read.input_tokens": 30,
                       "gen_ai.usage.cache_read_input_tokens": 30})
    assert (got["write"], got["read"]) == (40, 30)


def test_ill_typed_usage_is_ignored_not_fatal() -> None:
    got = _model_step(
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": "many",
            "gen_ai.usage.output_tokens": True,
            "gen_ai.response.time_to_first_chunk": "soon",
        }
    )
    assert got == {"latency": "", "in": 0, "out": 0, "reasoning": 0, "read": 0, "write": 0}


def test_negative_tokens_clamped_with_warning() -> None:
    root = span("r", "", "run", 0, 100, {"gen_ai.operation.name": "invoke_agent"})
    model = span(
        "m", "r", "chat", 10, 20, {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": -5}
    )
    derivation = derive([root, model])
    step = derivation.trajectory.agent_steps[0].steps[0]
    assert step.model_info is not None and step.model_info.input_tokens == 0
    assert any("negative input tokens" in w for w in derivation.warnings)


def test_to_int_forms() -> None:
    assert [to_int(v) for v in (3, "3", " 4 ", 5.0, "6.0", "1e2", b"7")] == [3, 3, 4, 5, 6, 100, 7]
    assert [to_int(v) for v in (True, None, 5.5, "x", math.nan, [1])] == [None] * 6


def test_unflatten_messages() -> None:
    attrs: dict[str, AttributeValue] = {
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.10.message.role": "tool",
        "llm.input_messages.0.message.content": "be nice",
        "llm.input_messages.1.message.tool_calls.0.tool_call.id": "c1",
        "other": 1,
    }
    assert unflatten(attrs, "llm.input_messages") == [
        {"message": {"role": "system", "content": "be nice"}},
        {"message": {"role": "user", "tool_calls": [{"tool_call": {"id": "c1"}}]}},
        {"message": {"role": "tool"}},
    ]
    assert unflatten(attrs, "llm.output_messages") is None


def test_round_rate_ten_significant_digits() -> None:
    assert round_rate(1 / 3) == 0.3333333333
    assert round_rate(2 / 3) == 0.6666666667
    assert round_rate(0.4) == 0.4


def test_one_line_cuts_tracebacks() -> None:
    text = "ZeroDivisionError('x')Traceback (most recent call last):\n  File ..."
    assert one_line(text) == "ZeroDivisionError('x')"
    assert one_line("\n\n  boom \nsecond") == "boom"


def test_error_rules() -> None:
    ok = span("a", attrs={})
    assert span_error(ok) is None
    by_status = span_error(span("a", status=STATUS_ERROR, message="bad thing"))
    assert by_status is not None and (by_status.code, by_status.message) == (-1, "bad thing")
    by_event = span_error(
        span(
            "a",
            events=(
                Event(
                    "exception",
                    1,
                    {
                        "exception.type": "KeyError",
                        "exception.message": "'k'",
                        "exception.stacktrace": "Traceback ...",
                    },
                ),
            ),
        )
    )
    assert by_event is not None
    assert (by_event.message, by_event.traceback) == ("KeyError: 'k'", "Traceback ...")
    http = span_error(span("a", attrs={"error.type": "500"}, status=STATUS_ERROR))
    assert http is not None and http.code == 500
    by_attr = span_error(span("a", attrs={"error.message": "nope"}))
    assert by_attr is not None and by_attr.message == "nope"
    # OpenInference forces GraphInterrupt to OK although it records the exception event
    interrupt = span(
        "a", status=STATUS_OK, events=(Event("exception", 1, {"exception.type": "GraphInterrupt"}),)
    )
    assert span_error(interrupt) is None


def test_traceloop_wrapper_is_the_graph_and_workflow_is_dropped() -> None:
    scope = "opentelemetry.instrumentation.langchain"
    wrapper = span(
        "w",
        "",
        "invoke_agent G",
        0,
        100,
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "G"},
        scope=scope,
    )
    workflow = span(
        "f",
        "w",
        "G.workflow",
        1,
        99,
        {
            "traceloop.span.kind": "workflow",
            "gen_ai.operation.name": "invoke_agent",
            "traceloop.entity.input": '{"inputs": 1}',
            "traceloop.entity.output": '{"outputs": 2}',
        },
        scope=scope,
    )
    model = span(
        "m",
        "f",
        "M.chat",
        2,
        50,
        {
            "gen_ai.operation.name": "chat",
            "traceloop.workflow.name": "G",
            "gen_ai.usage.input_tokens": 3,
            "gen_ai.usage.output_tokens": 4,
        },
        scope=scope,
    )
    derivation = derive([model, workflow, wrapper])
    trajectory = derivation.trajectory
    assert [a.id for a in trajectory.agent_steps] == ["w"]
    assert trajectory.root_step.name == "G"
    # not a chat state: the input/output object, in canonical JSON (docs/trajectory-rules.md §8)
    assert (trajectory.root_step.input, trajectory.root_step.output) == (
        '{"inputs":1}',
        '{"outputs":2}',
    )
    step = trajectory.agent_steps[0].steps[0]
    assert (step.name, step.parent_id, step.type) == ("M", "w", "model")
    kinds = {e.span_id: (e.kind, e.kept) for e in derivation.explanation}
    assert kinds == {"w": ("root", True), "f": ("other", False), "m": ("model", True)}


def test_langsmith_reasoning_from_usage_metadata() -> None:
    root = span("r", "", "LangGraph", 0, 100, {"langsmith.span.kind": "chain"})
    chain = span(
        "c",
        "r",
        "RunnableSequence",
        1,
        99,
        {
            "langsmith.span.kind": "chain",
            "gen_ai.usage.input_tokens": 7,
            "langsmith.metadata.langgraph_node": "agent",
        },
    )
    llm = span(
        "l",
        "c",
        "Chat",
        2,
        98,
        {
            "langsmith.span.kind": "llm",
            "gen_ai.usage.input_tokens": 7,
            "gen_ai.usage.output_tokens": 3,
            "langsmith.metadata.langgraph_node": "agent",
            "langsmith.metadata.usage_metadata": '{"output_token_details": {"reasoning": 2}, '
            '"input_token_details": {"cache_read": 1, "cache_creation": 4}}',
        },
    )
    trajectory = derive([root, chain, llm]).trajectory
    assert len(trajectory.agent_steps) == 1  # LangGraph root: graph by structure
    (step,) = trajectory.agent_steps[0].steps
    assert step.model_info is not None
    assert (
        step.model_info.input_tokens,
        step.model_info.reasoning_tokens,
        step.model_info.input_read_cached_tokens,
        step.model_info.input_creation_cached_tokens,
    ) == (7, 2, 1, 4)
    assert trajectory.root_step.metrics_info.input_tokens == 7  # chain usage not counted


def test_openinference_subgraph_node_is_a_sub_agent() -> None:
    """docs/trajectory-rules.md §7: a compiled graph run as a node of another is an agent."""
    meta = '{{"langgraph_node": "{}"}}'.format
    kind = "openinference.span.kind"
    spans = [
        span("r", "", "LangGraph", 0, 100, {kind: "CHAIN"}),
        span(
            "n", "r", "research_agent", 1, 90, {kind: "AGENT", "metadata": meta("research_agent")}
        ),
        span("i", "n", "search", 2, 80, {kind: "CHAIN", "metadata": meta("search")}),
        span(
            "t", "i", "web", 3, 70, {kind: "TOOL", "tool.name": "web", "metadata": meta("search")}
        ),
        span("m", "r", "llm", 91, 99, {kind: "LLM", "metadata": meta("agent")}),
    ]
    trajectory = derive(spans).trajectory
    assert [(a.id, a.parent_id) for a in trajectory.agent_steps] == [("r", ""), ("n", "r")]
    assert [(s.type, s.id) for s in trajectory.agent_steps[0].steps] == [
        ("agent", "n"),
        ("model", "m"),
    ]
    assert [(s.type, s.id, s.parent_id) for s in trajectory.agent_steps[1].steps] == [
        ("tool", "t", "n")
    ]
    root_metrics = trajectory.root_step.metrics_info
    assert root_metrics.tool_step_proportion == 0.5  # agent steps are not in the denominator
