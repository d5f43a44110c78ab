"""A failed run is failed under every instrumentation (docs/trajectory-rules.md §4): LangSmith's
OTel exporter writes the root span's status OK when the run starts, so a run that then fails
shows the failure only as an `exception` event on the root, while the model span and the agent
node are ERROR. A handled error (a tool that failed, then succeeded on retry) leaves the run
successful.

The spans are made with the OTel SDK the way LangSmith's exporter makes them (the attributes of
the LangSmith capture in tests/fixtures/real-clients/langsmith), encoded to OTLP and read back as
trajhub reads any request.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from trajhub.normalizers import Derivation, derive
from trajhub.normalizers.sources import spans_from_resource_spans

_MODEL_ERROR = "RuntimeError('RuntimeError: upstream model returned HTTP 500 (simulated)')"
_META = "langsmith.metadata."


def _tracer() -> tuple[Tracer, InMemorySpanExporter]:
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider.get_tracer("langsmith"), memory


def _derive(memory: InMemorySpanExporter) -> Derivation:
    request = encode_spans(memory.get_finished_spans())
    return derive(list(spans_from_resource_spans(request.resource_spans)))


@contextmanager
def _run(tracer: Tracer, name: str, kind: str, attrs: dict[str, Any] | None = None,
         *, fails: str = "", node: str = "") -> Iterator[Span]:
    """A LangSmith run as a span: status ERROR (empty message) plus an `exception` event of
    type "Exception" with repr(err) + traceback when it fails, OK when it succeeds."""
    attributes: dict[str, Any] = {"langsmith.span.kind": kind, "langsmith.trace.name": name,
                                  "gen_ai.operation.name": "chat" if kind == "llm" else kind,
                                  **(attrs or {})}
    if node:
        attributes[_META + "langgraph_node"] = node
    with tracer.start_as_current_span(name, attributes=attributes, record_exception=False,
                                      set_status_on_exception=False) as span:
        yield span
        if fails:
            span.add_event("exception", {"exception.type": "Exception", "exception.message":
                                         f"{fails}Traceback (most recent call last):\n  ..."})
            span.set_status(Status(StatusCode.ERROR, ""))
        else:
            span.set_status(Status(StatusCode.OK))


def _model(tracer: Tracer, *, fails: str = "", tool_call: str = "") -> None:
    with _run(tracer, "agent", "chain", node="agent", fails=fails), \
            _run(tracer, "call_model", "chain", node="agent", fails=fails), \
            _run(tracer, "ScriptedToolChatModel", "llm", {
                "gen_ai.request.model": "fake-gpt-4o-mini", "gen_ai.system": "openai",
                "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 10,
                "gen_ai.completion": tool_call or "{}"}, node="agent", fails=fails):
        pass


def _tool(tracer: Tracer, name: str, call_id: str, *, fails: str = "") -> None:
    with _run(tracer, "tools", "chain", node="tools"), \
            _run(tracer, name, "tool", {"gen_ai.tool.name": name, "gen_ai.tool.call.id": call_id},
                 node="tools", fails=fails):
        pass


def _langsmith_root(tracer: Tracer, body: Any, *, root_exception: str = "") -> None:
    """The root as LangSmith exports it: status OK written when the run starts."""
    with tracer.start_as_current_span("LangGraph", attributes={
            "langsmith.span.kind": "chain", "gen_ai.operation.name": "chain",
            _META + "ls_integration": "langgraph",
            "gen_ai.prompt": '{"messages": [{"type": "human", "content": "2+3, then 1/0?"}]}',
            "gen_ai.completion": "{}"},
            record_exception=False, set_status_on_exception=False) as root:
        root.set_status(Status(StatusCode.OK))
        body()
        if root_exception:
            root.add_event("exception", {"exception.type": "Exception", "exception.message":
                                         f"{root_exception}Traceback (most recent call last):"})
            root.set_status(Status(StatusCode.ERROR, ""))  # too late: OK is final in OTel


def test_a_langsmith_run_whose_root_says_ok_but_whose_model_failed_is_failed() -> None:
    tracer, memory = _tracer()

    def body() -> None:
        _model(tracer, tool_call='{"tool_calls": [{"id": "c1", "name": "add"}]}')
        _tool(tracer, "add", "c1")
        _model(tracer, fails=_MODEL_ERROR)

    _langsmith_root(tracer, body, root_exception=_MODEL_ERROR)
    root_span = next(s for s in memory.get_finished_spans() if s.name == "LangGraph")
    assert root_span.status.status_code is StatusCode.OK  # what LangSmith exports
    d = _derive(memory)
    error = d.trajectory.root_step.basic_info.error
    assert error is not None and "upstream model returned HTTP 500" in error.msg
    failed_model = next(s for s in memory.get_finished_spans()
                        if s.name == "ScriptedToolChatModel" and s.status.status_code
                        is StatusCode.ERROR)
    assert d.trajectory.root_step.metadata["error_from_exception_event"] == format(
        failed_model.context.span_id, "016x")
    assert d.summary.has_error and d.summary.failed_model_steps == 1


# the second: even when the root recorded the handled exception, the run's last model step
# succeeded
@pytest.mark.parametrize("root_exception", ["", "TimeoutError('fetch timed out')"],
                         ids=["the_root_recorded_nothing", "the_root_recorded_the_handled_error"])
def test_a_tool_retry_that_succeeds_leaves_the_run_successful(root_exception: str) -> None:
    tracer, memory = _tracer()

    def body() -> None:
        _model(tracer, tool_call='{"tool_calls": [{"id": "c1", "name": "fetch"}]}')
        _tool(tracer, "fetch", "c1", fails="TimeoutError('fetch timed out')")
        _model(tracer, tool_call='{"tool_calls": [{"id": "c2", "name": "fetch"}]}')
        _tool(tracer, "fetch", "c2")
        _model(tracer)  # the final answer

    _langsmith_root(tracer, body, root_exception=root_exception)
    d = _derive(memory)
    assert d.trajectory.root_step.basic_info.error is None
    assert "error_from_exception_event" not in d.trajectory.root_step.metadata
    assert d.summary.failed_tool_steps == 1 and d.summary.failed_model_steps == 0
