"""A trace's spans as the REST API answers them (`GET /api/v1/traces/{id}`, its pages of spans):
decoded (`SpanView`), as a tree (`SpanNode`), as the trajectory's nodes (`TrajectoryNode`), or
as they arrived (OTLP/JSON, Coze Loop)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from trajhub.records.examples import SPAN_ID, TRACE_ID, example_config
from trajhub.records.logs import LogRecordView
from trajhub.records.pages import deprecated_alias
from trajhub.records.scope import SpanScope as SpanScope
from trajhub.records.times import rfc3339


class SpanStatus(BaseModel):
    code: str | int = Field(description="unset, ok or error")
    message: str


class SpanEvent(BaseModel):
    name: str
    time: str = Field(description="RFC 3339: when the event happened")
    time_unix_nano: str = deprecated_alias("time", "Unix nanoseconds (decimal text)")
    attributes: dict[str, Any]

    @model_validator(mode="before")
    @classmethod
    def _time_of_an_older_server(cls, data: Any) -> Any:
        # a server before `time` sent only the nanoseconds: the client reads the same moment
        if isinstance(data, dict) and "time" not in data and "time_unix_nano" in data:
            return {**data, "time": rfc3339(int(data["time_unix_nano"]))}
        return data


#: a span's length is fractional, unlike a run's: spans are timed to the nanosecond, and many
#: (a tool call, a step within a process) last under a millisecond, which a whole number would
#: make 0 (docs/glossary.md, "Times")
SPAN_DURATION = ("from the span's start to its end, in milliseconds: fractional (spans are "
                 "timed to the nanosecond; many last under a millisecond)")


class CozeLoopView(BaseModel):
    span_type: str
    status_code: int
    input: str
    output: str
    log_id: str
    workspace_id: str
    object_storage: str


SPAN_EXAMPLE: dict[str, Any] = {
        "trace_id": TRACE_ID, "span_id": SPAN_ID, "parent_span_id": "", "name": "LangGraph",
        "kind": "internal", "start_time": "2026-11-22T10:00:00Z",
        "end_time": "2026-11-22T10:00:02.103000Z", "start_time_unix_nano": "1795341600000000000",
        "end_time_unix_nano": "1795341602103000000", "duration_ms": 2103.0,
        "status": {"code": "unset", "message": ""},
        "attributes": {"openinference.span.kind": "CHAIN"}, "events": [],
        "resource": {"service.name": "weather-agent"},
        "scope": {"name": "openinference.instrumentation.langchain", "version": "0.1.0"},
        "format": "otlp"}


class SpanView(BaseModel):
    """A stored span, decoded."""

    model_config = example_config(SPAN_EXAMPLE)
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: str | int = Field(description="OTLP span kind name (internal, server, client, …)")
    start_time: str
    end_time: str
    start_time_unix_nano: str = deprecated_alias(
        "start_time", "the start as Unix nanoseconds (decimal text; exact, as in `format=otlp`)")
    end_time_unix_nano: str = deprecated_alias(
        "end_time", "the end as Unix nanoseconds (decimal text; exact, as in `format=otlp`)")
    duration_ms: float = Field(description=SPAN_DURATION)
    status: SpanStatus
    attributes: dict[str, Any]
    events: list[SpanEvent]
    resource: dict[str, Any]
    scope: SpanScope
    format: Literal["otlp", "cozeloop"] = Field(description="how the span arrived")
    cozeloop: CozeLoopView | None = Field(None, description="Coze Loop native fields "
                                          "(format cozeloop only)")


class SpanNode(SpanView):
    model_config = example_config({**SPAN_EXAMPLE, "children": []})
    children: list[SpanNode] = Field(description="child spans (view=tree and trajectory)")


class TrajectoryNode(SpanNode):
    model_config = example_config({**SPAN_EXAMPLE, "children": [], "step_type": "root",
                             "original_parent_span_id": ""})
    step_type: str = Field(description="root, agent, graph, model or tool")
    original_parent_span_id: str = Field(description="the parent as sent (`parent_span_id` is "
                                         "the nearest kept ancestor)")


class TraceSpans(BaseModel):
    """`format=json`: the spans as a tree (`view=tree`, roots with nested `children`), in
    start order (`view=flat`), or only the trajectory nodes (`view=trajectory`)."""

    model_config = example_config({"trace_id": TRACE_ID, "spans": [{
        **SPAN_EXAMPLE, "children": []}]})

    trace_id: str
    spans: list[TrajectoryNode] | list[SpanNode] | list[SpanView]
    logs: list[LogRecordView] = Field(default_factory=list, description=(
        "the trace's log records in time order; those that name one of its spans are that "
        "span's events in the trajectory (an empty list from a server before log records)"))


class OtlpTrace(BaseModel):
    """`format=otlp`: an OTLP/JSON ExportTraceServiceRequest of the spans as received."""

    model_config = example_config({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name",
                                     "value": {"stringValue": "weather-agent"}}]},
        "scopeSpans": [{"scope": {"name": "openinference.instrumentation.langchain"},
                        "spans": [{"traceId": TRACE_ID, "spanId": SPAN_ID, "name": "LangGraph",
                                   "kind": 1, "startTimeUnixNano": "1795341600000000000",
                                   "endTimeUnixNano": "1795341602103000000"}]}]}]})

    resourceSpans: list[dict[str, Any]]


class CozeLoopTrace(BaseModel):
    """`format=cozeloop`: the Coze Loop native spans (UploadSpan) as received."""

    model_config = example_config({"spans": [{
        "trace_id": TRACE_ID, "span_id": SPAN_ID, "parent_id": "0", "span_name": "ReActAgent",
        "span_type": "graph", "started_at_micros": 1795341600000000,
        "duration_micros": 2103000, "status_code": 0, "input": "what is the weather in sf",
        "output": "It is sunny in sf."}]})

    spans: list[dict[str, Any]]


class OtlpLogs(BaseModel):
    """`format=otlp_logs`: an OTLP/JSON ExportLogsServiceRequest of the trace's log records as
    received; posted to `/v1/logs`, it stores the same records."""

    model_config = example_config({"resourceLogs": [{
        "resource": {"attributes": [{"key": "service.name",
                                     "value": {"stringValue": "weather-agent"}}]},
        "scopeLogs": [{"scope": {"name": "opentelemetry.instrumentation.openai_v2"},
                       "logRecords": [{"timeUnixNano": "1795341601500000000",
                                       "eventName": "gen_ai.user.message",
                                       "traceId": TRACE_ID, "spanId": SPAN_ID,
                                       "body": {"kvlistValue": {"values": [{
                                           "key": "content", "value": {
                                               "stringValue": "what is the weather in sf"}}]}}
                                       }]}]}]})

    resourceLogs: list[dict[str, Any]]


#: the answer of `GET /api/v1/traces/{id}`, by its `format`
TraceBody = TraceSpans | OtlpTrace | CozeLoopTrace | OtlpLogs
