"""An OTLP log record as the REST API serves it (`GET /api/v1/logs`, the `logs` of
`GET /api/v1/traces/{trace_id}`) and the Python client reads it, declared once
(`trajhub.records`). Ingest stores each record as received (table `log_records`, migration
0069); what is served beyond the columns is decoded from those bytes (service/stored_logs.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import Field

from trajhub.records import SERVED_ONLY, Example, Record, Stored
from trajhub.records.examples import SPAN_ID, TRACE_ID
from trajhub.records.scope import SpanScope


def _column(column: str, convert: str = "", stored_type: Any = None) -> Stored:
    """A column ingest writes (storage/log_writer.py)."""
    return Stored(column=column, written_by="", convert=convert, stored_type=stored_type)


class LogRecordView(Record):
    """A stored OTLP log record, decoded. A record whose span is one of its trace's spans is
    that span's event when the trajectory is derived; the others are orphaned."""

    trace_id: Annotated[str, _column("trace_id"), Example(TRACE_ID)] = Field(
        default="", description="32 hex digits; empty for a record outside any trace")
    span_id: Annotated[str, _column("span_id"), Example(SPAN_ID)] = Field(
        default="", description="16 hex digits; empty for a record that names no span")
    time: Annotated[str, _column("time_ns", "time", int), Example("2026-11-22T10:00:01.5Z")
                    ] = Field(default="", description="RFC 3339: the record's time, else its "
                              "observed time")
    observed_time: Annotated[str, SERVED_ONLY, Example("2026-11-22T10:00:01.5Z")] = Field(
        default="", description="RFC 3339: when the SDK observed it; empty when unset")
    received_time: Annotated[str, _column("received_at", "timestamp", datetime),
                             Example("2026-11-22T10:00:03Z")] = Field(
        default="", description="RFC 3339: when trajhub first stored it")
    severity_number: Annotated[int, _column("severity_number"), Example(9)] = Field(
        default=0, description="OTLP severity number (0 unset, 9 INFO, 17 ERROR, …)")
    severity_text: Annotated[str, _column("severity_text"), Example("")] = Field(
        default="", description="as sent")
    event_name: Annotated[str, _column("event_name"), Example("gen_ai.user.message")] = Field(
        default="", description="the record's event name, else its `event.name` attribute")
    body: Annotated[Any, SERVED_ONLY, Example({"content": "what is the weather in sf"})] = Field(
        default=None, description="the record's body as a JSON value (a map is an object, an "
        "array a list, bytes base64 text); null when it has none")
    attributes: Annotated[dict[str, Any], SERVED_ONLY, Example({"gen_ai.system": "openai"})
                          ] = Field(default_factory=dict)
    resource: Annotated[dict[str, Any], SERVED_ONLY, Example({"service.name": "weather-agent"})
                        ] = Field(default_factory=dict)
    scope: Annotated[SpanScope, SERVED_ONLY,
                     Example({"name": "opentelemetry.instrumentation.openai_v2",
                              "version": "2.4b0"})] = Field(
        default_factory=lambda: SpanScope(name="", version=""))
    orphaned: Annotated[bool, SERVED_ONLY, Example(False)] = Field(
        default=False, description="true when no span of its trace has its span id (the trace "
        "has no spans, the span is not among them, or the record names none): it is listed, "
        "kept and dropped by retention, but is no span's event")
