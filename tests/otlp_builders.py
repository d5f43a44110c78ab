"""Small builders of OTLP requests for tests."""

from __future__ import annotations

import os
from typing import Any

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from trajhub.service.stored_spans import set_any_value

#: the headers of an OTLP/HTTP request in protobuf
PB = {"content-type": "application/x-protobuf"}


def new_trace_id() -> bytes:
    return os.urandom(16)


def new_span_id() -> bytes:
    return os.urandom(8)


def post_spans(base: str, project: str, spans: list[Span]) -> None:
    """Send `spans` to the trajhub at `base` over OTLP/HTTP into `project`; it must accept them."""
    response = httpx.post(f"{base}/v1/traces", content=request(spans).SerializeToString(),
                          headers={**PB, "trajhub-project": project})
    assert response.status_code == 200, response.text


def kv(key: str, value: Any) -> KeyValue:
    out = KeyValue(key=key)
    set_any_value(out.value, value)
    return out


def request(spans: list[Span], service: str = "test-service",
            resource: dict[str, Any] | None = None) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.append(kv("service.name", service))
    for k, v in (resource or {}).items():
        rs.resource.attributes.append(kv(k, v))
    ss = rs.scope_spans.add()
    ss.scope.name = "tests"
    ss.scope.version = "1.0"
    ss.spans.extend(spans)
    return req


def span(trace_id: bytes, name: str = "op", parent: bytes = b"", span_id: bytes | None = None,
         start: int = 1_700_000_000_000_000_000, duration: int = 1_000_000,
         attributes: dict[str, Any] | None = None, error: bool = False) -> Span:
    s = Span(trace_id=trace_id, span_id=span_id or new_span_id(), parent_span_id=parent,
             name=name, kind=Span.SPAN_KIND_INTERNAL, start_time_unix_nano=start,
             end_time_unix_nano=start + duration)
    for k, v in (attributes or {}).items():
        s.attributes.append(kv(k, v))
    if error:
        s.status.code = 2
        s.status.message = "boom"
    return s


def agent_run_spans(trace_id: bytes, root: bytes, chat: bytes, tool: bytes, start: int,
              agent: str = "weather") -> list[Span]:
    """One GenAI agent run with the given ids: the agent `agent`, a model call (gpt-4o, 5 input
    and 2 output tokens) and a get_weather tool call."""
    return [
        span(trace_id, f"invoke_agent {agent}", span_id=root, start=start, duration=10_000_000,
             attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}),
        span(trace_id, "chat gpt", parent=root, span_id=chat, start=start + 1_000_000,
             attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                         "gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 2}),
        span(trace_id, "execute_tool get_weather", parent=root, span_id=tool,
             start=start + 3_000_000,
             attributes={"gen_ai.operation.name": "execute_tool",
                         "gen_ai.tool.name": "get_weather"}),
    ]


def interrupted_run_spans(trace_id: bytes, agent: str, session_id: str,
                          start: int = 1_700_000_000_000_000_000) -> list[Span]:
    """A GenAI agent run whose tool `book_flight` called LangGraph's interrupt(), recorded as the
    official LangChain instrumentation records it: status ERROR, `error.type` GraphInterrupt and
    the interrupt's repr (payload `{"question": "Book it?"}`) as the status message."""
    root = new_span_id()
    tool = span(trace_id, "execute_tool book_flight", parent=root, start=start + 1000,
                attributes={"gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": "book_flight",
                            "error.type": "langgraph.errors.GraphInterrupt"})
    tool.status.code = 2
    tool.status.message = "(Interrupt(value={'question': 'Book it?'}, id='abc'),)"
    return [span(trace_id, f"invoke_agent {agent}", span_id=root, start=start,
                 duration=10_000_000,
                 attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
                             "session.id": session_id}),
            tool]


def monitored_run_spans(trace_id: bytes, start: int, agent: str, model: str, ms: int,
                        error: bool = False) -> list[Span]:
    """A GenAI run of `ms` milliseconds: the agent `agent` and one call of `model` (100 input and
    10 output tokens), which failed when `error`."""
    root = new_span_id()
    return [
        span(trace_id, f"invoke_agent {agent}", span_id=root, start=start,
             duration=ms * 1_000_000,
             attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}),
        span(trace_id, "chat", parent=root, start=start + 1000, error=error,
             attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                         "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 10}),
    ]
